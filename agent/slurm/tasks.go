package slurm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// TaskJobName is the Slurm job name of a best-effort task. The backend looks for it in
// the queue and in accounting before submitting, so a task is submitted once whatever
// the agent's restarts.
func TaskJobName(task int64) string { return "clearhouse-task-" + strconv.FormatInt(task, 10) }

func taskOf(name string) (int64, bool) {
	id, err := strconv.ParseInt(strings.TrimPrefix(name, "clearhouse-task-"), 10, 64)
	return id, err == nil && strings.HasPrefix(name, "clearhouse-task-")
}

// SyncTasks implements agent.Backend. A task in run with no Slurm job of its name (in
// the queue or in accounting since the agent started, less a day) is submitted with
// sbatch under its team's best-effort account (BestEffortAccount) in the best-effort QOS, requesting its
// configuration; a task in stop whose job is queued or running is cancelled. Events
// come from the jobs' states in Slurm: RUNNING is started; COMPLETED is done;
// PREEMPTED and CANCELLED are stopped; FAILED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL,
// BOOT_FAIL and DEADLINE are failed; each at the time Slurm recorded. A task in stop
// that never ran in Slurm is reported stopped now. Each event is returned once per
// process (a restarted agent returns again what Slurm shows; the server ignores
// repeats); what was returned of a task is forgotten once the server lists it no more
// (forgetUnlisted).
func (b *Backend) SyncTasks(ctx context.Context, run, stop []agent.Task) ([]agent.TaskEvent, error) {
	b.forgetUnlisted(run, stop)
	if len(run)+len(stop) == 0 {
		return nil, nil
	}
	jobs, err := b.taskJobs(ctx)
	if err != nil {
		return nil, err
	}
	now := b.now().UTC()
	var events []agent.TaskEvent
	var errs []error
	emit := func(task int64, event string, at time.Time) {
		if at.IsZero() {
			at = now
		}
		if b.once(task, event) {
			events = append(events, agent.TaskEvent{Task: task, Event: event, At: at})
		}
	}
	for _, t := range run {
		j, ok := jobs[b.taskKey(t)]
		if !ok {
			if err := b.submit(ctx, t); err != nil {
				errs = append(errs, err)
				if t.Workload == nil || t.Workload.Slurm == nil {
					emit(t.ID, agent.TaskFailed, now)
				}
			}
			continue
		}
		b.events(j, emit)
	}
	for _, t := range stop {
		j, ok := jobs[b.taskKey(t)]
		switch {
		case !ok:
			emit(t.ID, agent.TaskStopped, now)
		case live(j.State):
			if err := b.cancel(ctx, j.ID); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(b.out, "slurm: cancelled task %d (job %d): %s\n", t.ID, j.ID, t.Reason)
			if !j.Start.IsZero() {
				emit(t.ID, agent.TaskStarted, j.Start)
			}
			emit(t.ID, agent.TaskStopped, now)
		default:
			b.events(j, emit)
		}
	}
	return events, errors.Join(errs...)
}

// forgetUnlisted forgets the events returned of each task the server lists in neither
// run nor stop, so what the backend keeps is bounded by the tasks listed now. The
// server lists a task while it runs and, once ended, until its stop is confirmed (a
// day at most); an ended task is never listed again (its job's next task is a new
// one). The Kubernetes backend also waits for the task's pod to go; here nothing waits
// for the task's Slurm job: accounting keeps it for good, and only listed tasks' jobs
// are read, so an unlisted task's job can report nothing. Were the server to list a
// forgotten task again, its events would be returned again, and the server ignores
// repeats.
func (b *Backend) forgetUnlisted(run, stop []agent.Task) {
	listed := map[int64]bool{}
	for _, t := range slices.Concat(run, stop) {
		listed[t.ID] = true
	}
	maps.DeleteFunc(b.reported, func(task int64, _ map[string]bool) bool { return !listed[task] })
}

// events emits what a task's job did, as its state says.
func (b *Backend) events(j job, emit func(int64, string, time.Time)) {
	task, _ := taskOf(j.Name)
	if !j.Start.IsZero() && j.State != "PENDING" {
		emit(task, agent.TaskStarted, j.Start)
	}
	switch {
	case j.State == "COMPLETED":
		emit(task, agent.TaskDone, j.End)
	case j.State == "PREEMPTED" || j.State == "CANCELLED":
		emit(task, agent.TaskStopped, j.End)
	case failed(j.State):
		emit(task, agent.TaskFailed, j.End)
	}
}

// live says whether a job state is queued or running (cancel stops it).
func live(state string) bool {
	switch state {
	case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING":
		return true
	}
	return false
}

// taskKey names a task's Slurm job: its job name under one of its team's accounts
// (taskTeam). The team is part of it so that a job of the same name under another
// account (another Clearhouse server's task, or one from before a database was
// restored, whose task numbers start again) is never taken for this task's.
type taskKey struct {
	task int64
	team string
}

func (b *Backend) taskKey(t agent.Task) taskKey { return taskKey{t.ID, t.Team} }

// taskJobs is the newest Slurm job of each task in the best-effort QOS, by task and
// account: accounting (sacct) since b.since, overlaid by the queue (squeue), which is
// newer.
func (b *Backend) taskJobs(ctx context.Context) (map[taskKey]job, error) {
	done, err := b.accounting(ctx, b.since, "--qos="+b.qos)
	if err != nil {
		return nil, err
	}
	queued, err := b.queue(ctx, "all", "--qos="+b.qos)
	if err != nil {
		return nil, err
	}
	out := map[taskKey]job{}
	for _, j := range append(done, queued...) {
		task, ok := taskOf(j.Name)
		if !ok {
			continue
		}
		team := b.taskTeam(j.Account)
		if team == "" {
			continue
		}
		k := taskKey{task, team}
		if have, seen := out[k]; !seen || j.ID >= have.ID { // the queue comes last: it is the fresher
			out[k] = j
		}
	}
	return out, nil
}

// submit submits one task's job, or says why it cannot.
func (b *Backend) submit(ctx context.Context, t agent.Task) error {
	args, stdin, err := b.sbatchArgs(t)
	if err != nil {
		return fmt.Errorf("slurm: task %d: %w", t.ID, err)
	}
	out, err := b.run.Run(ctx, stdin, "sbatch", args...)
	if err != nil {
		return fmt.Errorf("slurm: task %d: %w", t.ID, err)
	}
	fmt.Fprintf(b.out, "slurm: submitted task %d as job %s (account %s, QOS %s)\n", t.ID, strings.TrimSpace(out), BestEffortAccount(b.accounts[t.Team]), b.qos)
	return nil
}

// sbatchArgs is the sbatch command line (and standard input: the script) of a task:
// its name, account, QOS, partition, and its configuration as sbatch's resource
// options (cpu: --cpus-per-task; mem: --mem; gres/NAME: --gres; license/NAME:
// --licenses). Output goes to NAME-JOBID.out in the system's temporary directory.
func (b *Backend) sbatchArgs(t agent.Task) ([]string, string, error) {
	w := t.Workload
	if w == nil || w.Slurm == nil || (w.Slurm.Script == "") == (w.Slurm.Command == "") {
		return nil, "", errors.New("the job's workload has no slurm script or command")
	}
	acct, ok := b.accounts[t.Team]
	if !ok {
		return nil, "", fmt.Errorf("team %s has no account in the config", t.Team)
	}
	args := []string{"--parsable", "--job-name=" + TaskJobName(t.ID), "--account=" + BestEffortAccount(acct), "--qos=" + b.qos,
		"--ntasks=1", "--chdir=" + os.TempDir(), "--output=%x-%j.out"}
	if b.partition != "" {
		args = append(args, "--partition="+b.partition)
	}
	need := tres{}
	for _, name := range slices.Sorted(maps.Keys(t.Configuration)) {
		p, ok := b.pools[name]
		if !ok {
			return nil, "", fmt.Errorf("pool %s is not in the config", name)
		}
		need[p.tres] += t.Configuration[name] * p.unit
	}
	var gres, lic []string
	for _, name := range slices.Sorted(maps.Keys(need)) {
		n := need[name]
		switch kind, sub, _ := strings.Cut(name, "/"); {
		case name == "cpu":
			args = append(args, fmt.Sprintf("--cpus-per-task=%d", n))
		case name == "mem":
			args = append(args, fmt.Sprintf("--mem=%dM", n))
		case kind == "gres":
			gres = append(gres, fmt.Sprintf("%s:%d", sub, n))
		case kind == "license":
			lic = append(lic, fmt.Sprintf("%s:%d", sub, n))
		default:
			return nil, "", fmt.Errorf("TRES %s: sbatch cannot request it", name)
		}
	}
	if len(gres) > 0 {
		args = append(args, "--gres="+strings.Join(gres, ","))
	}
	if len(lic) > 0 {
		args = append(args, "--licenses="+strings.Join(lic, ","))
	}
	if w.Slurm.Command != "" {
		return append(args, "--wrap="+w.Slurm.Command), "", nil
	}
	return args, w.Slurm.Script, nil
}
