package slurm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// reservationPrefix starts the name of every Slurm reservation Clearhouse owns; the
// backend deletes no other.
const reservationPrefix = "clearhouse-r"

// ReservationName is the Slurm advanced reservation of one request of a Clearhouse
// reservation: users submit its jobs with sbatch --reservation=NAME.
func ReservationName(k agent.JobKey) string {
	return fmt.Sprintf("%s%d-%d", reservationPrefix, k.Reservation, k.Request)
}

// slurmReservation is a reservation as scontrol shows it.
type slurmReservation struct {
	Name       string
	Start, End time.Time
	Accounts   string
	CPUs       int64
}

// wantReservation is a reservation as the plan wants it.
type wantReservation struct {
	slurmReservation
	job     agent.Job
	running bool // the plan runs it now (not waiting in its window)
}

// FollowReservations implements agent.Backend. Each request the plan runs now, each
// one waiting in its window, and each booked one planned to start later (Upcoming),
// is a Slurm advanced reservation named ReservationName for the team's account, from
// its start to its end, of its tasks' CPUs: made at booking, so the cores are Slurm's
// promise from then on, not only when the slot starts (Slurm 22.05 reserves cores, not
// memory nor GPUs: those stay bounded by the account's GrpTRES, which counts running
// reservations). A reservation Slurm refuses to create, move or resize ("Requested
// nodes are busy") is made again ignoring running jobs when only best-effort tasks
// stand in its way (besideBestEffort: the server stops them by its start); else it is
// reported unplaceable, at every call while the plan still has it, and the server ends
// it and refunds the team. A waiting request the plan
// says may start now and whose reservation has jobs queued starts early: its
// reservation moves to now and the start is reported. A reservation is moved when the
// plan moves, recreated when its size changes (Slurm cannot resize a core
// reservation) and deleted when the plan drops it. The report has the TRES of the
// jobs running in each reservation (usage), the jobs queued in it (waiting), and for
// a running request whose jobs all ended, its end: the last job's end, failed when
// any job failed.
func (b *Backend) FollowReservations(ctx context.Context, plan agent.Plan) (agent.JobReport, error) {
	now := plan.Now
	if now.IsZero() {
		now = b.now()
	}
	var report agent.JobReport
	var errs []error
	var have map[string]slurmReservation
	var jobs []job
	if err := together(
		func() (err error) { have, err = b.reservations(ctx); return err },
		func() (err error) { jobs, err = b.queue(ctx, "PENDING,RUNNING,CONFIGURING,COMPLETING"); return err },
	); err != nil {
		return report, err
	}
	inRes := map[string][]job{}
	for _, j := range jobs {
		if strings.HasPrefix(j.Reservation, reservationPrefix) {
			inRes[j.Reservation] = append(inRes[j.Reservation], j)
			if b.ranIn[j.Reservation] == nil {
				b.ranIn[j.Reservation] = map[int64]bool{}
			}
			b.ranIn[j.Reservation][j.ID] = true
		}
	}
	for _, k := range plan.Refused {
		name := ReservationName(k)
		for _, j := range inRes[name] {
			if err := b.cancel(ctx, j.ID); err != nil {
				errs = append(errs, err)
			}
		}
		delete(inRes, name)
		fmt.Fprintf(b.out, "slurm: %s: early start refused, its jobs cancelled\n", name)
	}
	want := map[string]wantReservation{}
	for _, j := range plan.Running {
		if j.Units > 0 && j.End.After(now) { // an ended job stays listed until its slot ends
			w := b.wanted(j, j.Units, true)
			w.Start = earliest(w.Start, now)
			want[w.Name] = w
		}
	}
	early := map[string]bool{} // started early in this call
	for _, j := range plan.Waiting {
		w := b.wanted(j, j.Count, false)
		if h, ok := have[w.Name]; ok && !h.Start.After(now) && !slices.Contains(plan.Refused, j.Key()) {
			// Started early at an earlier poll (or before a restart): keep it running.
			w.Start, w.End = h.Start, h.Start.Add(j.End.Sub(j.Start))
		} else if j.MayStartNow && queued(inRes[w.Name]) > 0 {
			w.Start, w.End = now, now.Add(j.End.Sub(j.Start))
			early[w.Name] = true
		}
		want[w.Name] = w
	}
	for _, j := range plan.Upcoming {
		if w := b.wanted(j, j.Count, false); want[w.Name].Name == "" && j.End.After(now) {
			want[w.Name] = w
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		if w.CPUs <= 0 || w.Accounts == "" {
			continue // no cores to reserve, or a team without an account: its quota is all Slurm knows
		}
		err := b.follow(ctx, w.slurmReservation, have, now, false)
		if _, refused := refusal(err); refused && !early[name] && b.besideBestEffort(ctx, w.slurmReservation, have, jobs) {
			err = b.follow(ctx, w.slurmReservation, have, now, true)
		}
		switch reason, refused := refusal(err); {
		case err == nil && early[name]:
			report.Starts = append(report.Starts, agent.JobStart{Reservation: w.job.Reservation, Request: w.job.Request, At: now})
		case err == nil:
		case refused && !early[name]:
			report.Unplaceable = append(report.Unplaceable, agent.JobUnplaceable{Reservation: w.job.Reservation, Request: w.job.Request, Reason: reason})
			fmt.Fprintf(b.out, "slurm: reservation %s refused by Slurm: %s (reported unplaceable)\n", name, reason)
		default:
			errs = append(errs, err) // an early start Slurm refused stays planned; anything else is retried
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[name]; !ok {
			if _, err := b.run.Run(ctx, "", "scontrol", "delete", "ReservationName="+name); err != nil {
				errs = append(errs, err)
			} else {
				fmt.Fprintf(b.out, "slurm: deleted reservation %s (no longer planned)\n", name)
			}
		}
	}
	b.forgetUnplanned(want, inRes)
	ended, err := b.reportJobs(ctx, &report, want, inRes, now)
	if err != nil {
		errs = append(errs, err)
	}
	report.Ends = append(report.Ends, ended...)
	return report, errors.Join(errs...)
}

// wanted is the reservation a planned request needs: tasks tasks of its configuration.
func (b *Backend) wanted(j agent.Job, tasks int64, running bool) wantReservation {
	var cpus int64
	for pool, units := range j.Configuration {
		if p, ok := b.pools[pool]; ok && p.tres == "cpu" {
			cpus += tasks * units * p.unit
		}
	}
	return wantReservation{slurmReservation{Name: ReservationName(j.Key()), Start: j.Start.UTC().Truncate(time.Second),
		End: j.End.UTC().Truncate(time.Second), Accounts: b.accounts[j.Team], CPUs: cpus}, j, running}
}

// follow creates, moves or recreates one reservation; ignoreJobs makes Slurm place it
// whatever jobs run (Flags=IGNORE_JOBS).
func (b *Backend) follow(ctx context.Context, w slurmReservation, have map[string]slurmReservation, now time.Time, ignoreJobs bool) error {
	h, ok := have[w.Name]
	if ok && h.CPUs == w.CPUs && strings.EqualFold(h.Accounts, w.Accounts) {
		if h.End.Equal(w.End) && (h.Start.Equal(w.Start) || (!h.Start.After(now) && !w.Start.After(now))) {
			return nil
		}
		args := []string{"update", "ReservationName=" + w.Name, "EndTime=" + slurmClock(w.End)}
		if h.Start.After(now) || w.Start.After(now) {
			args = append(args, "StartTime="+startTime(w.Start, now))
		}
		if ignoreJobs {
			args = append(args, "Flags=IGNORE_JOBS")
		}
		if _, err := b.run.Run(ctx, "", "scontrol", args...); err != nil {
			return err
		}
		fmt.Fprintf(b.out, "slurm: moved reservation %s to %s-%s\n", w.Name, slurmClock(w.Start), slurmClock(w.End))
		return nil
	}
	if ok {
		if _, err := b.run.Run(ctx, "", "scontrol", "delete", "ReservationName="+w.Name); err != nil {
			return fmt.Errorf("slurm: resizing reservation %s: %w", w.Name, err)
		}
		delete(have, w.Name)
	}
	args := []string{"create", "reservation", "ReservationName=" + w.Name, "StartTime=" + startTime(w.Start, now),
		"EndTime=" + slurmClock(w.End), "Accounts=" + w.Accounts, fmt.Sprintf("TRES=cpu=%d", w.CPUs)}
	if b.partition != "" {
		args = append(args, "PartitionName="+b.partition)
	}
	if ignoreJobs {
		args = append(args, "Flags=IGNORE_JOBS")
	}
	if _, err := b.run.Run(ctx, "", "scontrol", args...); err != nil {
		return err
	}
	fmt.Fprintf(b.out, "slurm: reservation %s: %d CPUs for account %s, %s-%s\n", w.Name, w.CPUs, w.Accounts, slurmClock(w.Start), slurmClock(w.End))
	return nil
}

// forgetUnplanned forgets what this process knows of the reservations the plan has no
// more: whether their end was told, and (when no job is queued in one) the jobs seen in
// them. What it keeps is so bounded by the reservations planned now and the jobs
// queued now. Were the plan to run a forgotten reservation again, its end would be
// told again, and the server ignores an end it has.
func (b *Backend) forgetUnplanned(want map[string]wantReservation, inRes map[string][]job) {
	maps.DeleteFunc(b.ended, func(name string, _ bool) bool { _, ok := want[name]; return !ok })
	maps.DeleteFunc(b.ranIn, func(name string, _ map[int64]bool) bool {
		_, planned := want[name]
		return !planned && len(inRes[name]) == 0
	})
}

// reportJobs fills the report's usage and waiting from the jobs in the reservations,
// and returns the ends of running requests whose jobs all ended (from accounting).
func (b *Backend) reportJobs(ctx context.Context, report *agent.JobReport, want map[string]wantReservation, inRes map[string][]job, now time.Time) ([]agent.JobEnd, error) {
	var idle []wantReservation
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		use := tres{}
		for _, j := range inRes[name] {
			if j.State != "PENDING" {
				use.add(j.TRES)
			}
		}
		for _, pool := range slices.Sorted(maps.Keys(w.job.Configuration)) {
			if p, ok := b.pools[pool]; ok && use[p.tres] > 0 {
				report.Usage = append(report.Usage, agent.JobUsage{Reservation: w.job.Reservation, Request: w.job.Request, Pool: pool, Units: p.units(use[p.tres])})
			}
		}
		if n := queued(inRes[name]); n > 0 {
			report.Waiting = append(report.Waiting, agent.JobWaiting{Reservation: w.job.Reservation, Request: w.job.Request, Tasks: n})
		}
		if w.running && len(inRes[name]) == 0 && !b.ended[name] {
			idle = append(idle, w)
		}
	}
	if len(idle) == 0 {
		return nil, nil
	}
	since := now
	accts := map[string]bool{}
	for _, w := range idle {
		since = earliest(since, w.Start)
		accts[w.Accounts] = true
	}
	done, err := b.endedJobs(ctx, since.Add(-time.Minute), slices.Sorted(maps.Keys(accts)))
	if err != nil {
		return nil, err
	}
	var ends []agent.JobEnd
	for _, w := range idle {
		var end agent.JobEnd
		ran := false
		for _, j := range done {
			if (j.Reservation != w.Name && !b.ranIn[w.Name][j.ID]) || j.Start.IsZero() || j.End.IsZero() {
				continue
			}
			ran = true
			if j.End.After(end.At) {
				end.At = j.End
			}
			end.Failed = end.Failed || failed(j.State)
		}
		if ran && !b.ended[w.Name] {
			b.ended[w.Name] = true
			delete(b.ranIn, w.Name) // its end is told: nothing more to find by its jobs
			end.Reservation, end.Request = w.job.Reservation, w.job.Request
			ends = append(ends, end)
		}
	}
	return ends, nil
}

// endedStates are squeue's --states of the jobs that ended.
const endedStates = "COMPLETED,CANCELLED,FAILED,TIMEOUT,PREEMPTED,NODE_FAIL,BOOT_FAIL,DEADLINE,OUT_OF_MEMORY"

// endedJobs lists the jobs of accounts accts that ended since since, each with the
// reservation it ran in. slurmctld (squeue) still lists a job for MinJobAge after its
// end (300 s by default) with its reservation's name; accounting (sacct) lists the
// older ones. Accounting alone is not enough: on Slurm 22.05 a windowed sacct
// (--starttime) left out, for seconds to minutes, a job that had just ended and that
// sacct --jobs already showed COMPLETED, and it names a job's reservation only when the
// reservation's record began strictly before the job began (slurmdbd's query), so a job
// started in its reservation's first second comes with no name, at best with the
// reservation's id, which nameReservations names. Where both list a job, squeue's row
// counts.
func (b *Backend) endedJobs(ctx context.Context, since time.Time, accts []string) ([]job, error) {
	var recent, old []job
	if err := together(
		func() (err error) {
			recent, err = b.queue(ctx, endedStates, "--account="+strings.Join(accts, ","))
			return err
		},
		func() (err error) {
			old, err = b.accounting(ctx, since, "--accounts="+strings.Join(accts, ","))
			return err
		},
	); err != nil {
		return nil, err
	}
	if err := b.nameReservations(ctx, old); err != nil {
		return nil, err
	}
	seen := map[int64]bool{}
	for _, j := range recent {
		seen[j.ID] = true
	}
	for _, j := range old {
		if !seen[j.ID] {
			recent = append(recent, j)
		}
	}
	return recent, nil
}

// nameReservations fills in the reservation names accounting left out where it gave
// the reservation's id (see endedJobs): sacctmgr names those ids.
func (b *Backend) nameReservations(ctx context.Context, jobs []job) error {
	var ids []string
	for _, j := range jobs {
		if j.Reservation == "" && j.ReservationID > 0 {
			ids = append(ids, fmt.Sprint(j.ReservationID))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	out, err := b.run.Run(ctx, "", "sacctmgr", "--noheader", "--parsable2", "show", "reservation",
		"cluster="+b.cluster, "ids="+strings.Join(slices.Compact(ids), ","), "format=ID,Name")
	if err != nil {
		return err
	}
	names := map[int64]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue // no such id (accounting purged it)
		}
		idText, name, ok := strings.Cut(line, "|")
		id, err := strconv.ParseInt(idText, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("sacctmgr show reservation: line %q: want ID|Name", line)
		}
		names[id] = name
	}
	for i := range jobs {
		if jobs[i].Reservation == "" {
			jobs[i].Reservation = names[jobs[i].ReservationID]
		}
	}
	return nil
}

// queued counts the pending jobs among jobs.
func queued(jobs []job) int64 {
	var n int64
	for _, j := range jobs {
		if j.State == "PENDING" {
			n++
		}
	}
	return n
}

// failed says whether a final job state is a failure (not a completion, a cancel or a
// preemption).
func failed(state string) bool {
	switch state {
	case "FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE":
		return true
	}
	return false
}

// reservations lists the Slurm reservations Clearhouse owns, by name.
func (b *Backend) reservations(ctx context.Context) (map[string]slurmReservation, error) {
	out, err := b.run.Run(ctx, "", "scontrol", "--oneliner", "show", "reservations")
	if err != nil {
		return nil, err
	}
	return parseReservations(out)
}

// parseReservations reads scontrol --oneliner show reservations, keeping Clearhouse's.
func parseReservations(out string) (map[string]slurmReservation, error) {
	have := map[string]slurmReservation{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "ReservationName=") {
			continue
		}
		var r slurmReservation
		for _, field := range strings.Fields(line) {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "ReservationName":
				r.Name = v
			case "StartTime":
				r.Start = parseTime(v)
			case "EndTime":
				r.End = parseTime(v)
			case "Accounts":
				r.Accounts = nullable(v)
			case "TRES":
				t, err := parseTRES(v)
				if err != nil {
					return nil, fmt.Errorf("scontrol show reservations: %s: %w", r.Name, err)
				}
				r.CPUs = t["cpu"]
			}
		}
		if strings.HasPrefix(r.Name, reservationPrefix) {
			have[r.Name] = r
		}
	}
	return have, nil
}

// besideBestEffort says whether reservation w fits the cluster's cores once the
// best-effort tasks are left out: the cores of the nodes, less those of the other jobs
// running past its start (no time limit: for ever) outside any reservation, less those
// of Clearhouse's other reservations overlapping it. Best-effort tasks run on idle
// cores only until a reservation needs them: the server stops them by its start, so
// Slurm's refusal because of them is no reason to refuse the booking. The count is the
// cluster's, not each node's: on several nodes Slurm may still place the reservation
// on a node another team's job fills (the job keeps running there).
func (b *Backend) besideBestEffort(ctx context.Context, w slurmReservation, have map[string]slurmReservation, jobs []job) bool {
	capacity, err := b.capacity(ctx)
	if err != nil {
		return false
	}
	free := capacity["cpu"]
	bestEffort := false
	for _, j := range jobs {
		switch {
		case j.State == "PENDING" || j.Reservation != "":
		case j.QOS == b.qos:
			bestEffort = true
		case j.End.IsZero() || j.End.After(w.Start):
			free -= j.TRES["cpu"]
		}
	}
	for name, r := range have {
		if name != w.Name && r.Start.Before(w.End) && r.End.After(w.Start) {
			free -= r.CPUs
		}
	}
	return bestEffort && free >= w.CPUs
}

// refusal says whether err is Slurm refusing to create or change a reservation (as
// opposed to slurmctld not answering), and Slurm's reason.
func refusal(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	msg := err.Error()
	for _, prefix := range []string{"Error creating the reservation: ", "Error updating the reservation: "} {
		if _, reason, ok := strings.Cut(msg, prefix); ok {
			reason, _, _ = strings.Cut(reason, "\n")
			return strings.TrimSpace(reason), true
		}
	}
	return "", false
}

// slurmClock writes a time as Slurm's tools read it (the machine's zone).
func slurmClock(t time.Time) string { return t.Local().Format(slurmTime) }

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// startTime is a reservation's StartTime: t, or "now" when t has come (Slurm makes
// no reservation in the past).
func startTime(t, now time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return slurmClock(t)
}

// cancel cancels one job.
func (b *Backend) cancel(ctx context.Context, id int64) error {
	_, err := b.run.Run(ctx, "", "scancel", fmt.Sprint(id))
	return err
}
