package slurm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// roundsSlurm is the captured cluster (Open, nodes, associations) whose queue (squeue
// lines), accounting (sacct lines) and reservations a test sets between polls.
type roundsSlurm struct {
	*fakeSlurm
	queue, accounting, reservations []string
	resvNames                       []string // sacctmgr show reservation: ID|Name lines
	namesAsked                      []string // the ids= argument of each such call
}

func (r *roundsSlurm) Run(ctx context.Context, stdin, name string, args ...string) (string, error) {
	switch {
	case name == "squeue":
		return inStates(strings.Join(r.queue, "\n"), args), nil
	case name == "sacct":
		return strings.Join(r.accounting, "\n"), nil
	case name == "scontrol" && strings.Contains(strings.Join(args, " "), "show reservations"):
		return strings.Join(r.reservations, "\n"), nil
	case name == "sacctmgr" && strings.Contains(strings.Join(args, " "), "show reservation "):
		for _, a := range args {
			if ids, ok := strings.CutPrefix(a, "ids="); ok {
				r.namesAsked = append(r.namesAsked, ids)
			}
		}
		return strings.Join(r.resvNames, "\n"), nil
	}
	return r.fakeSlurm.Run(ctx, stdin, name, args...)
}

// Over many tasks and reservations what the backend keeps stays bounded by what the
// server lists now: the events returned of a task are forgotten once the server lists
// the task no more (its job stays in accounting for good, and does not bring it back),
// and what it knows of a reservation once the plan has it no more. While a task or a
// reservation is listed, each event is still returned once.
func TestStateStaysBoundedOverManyTasks(t *testing.T) {
	ctx := context.Background()
	b, f := openFake(t)
	r := &roundsSlurm{fakeSlurm: f}
	b.run = r

	// 10 rounds of 100 tasks; each round the server lists only that round's tasks: half
	// to run, whose jobs completed, half to stop, whose jobs run (cancelled).
	const round = 100
	for n := range 10 {
		var run, stop []agent.Task
		r.queue = nil
		for i := range round {
			id := int64(1000 + n*round + i)
			tk := agent.Task{ID: id, Team: "ml", Configuration: map[string]int64{"hpc/cpu": 1}}
			if i%2 == 0 {
				run = append(run, tk)
				r.accounting = append(r.accounting, fmt.Sprintf("%d|clearhouse-be-capml|clearhouse-best-effort|COMPLETED|2026-11-26T19:50:00|2026-11-26T19:52:00|||cpu=1|%s", id, TaskJobName(id)))
			} else {
				stop = append(stop, tk)
				r.queue = append(r.queue, fmt.Sprintf("%d|clearhouse-be-capml|clearhouse-best-effort|RUNNING|cpu=1|2026-11-26T19:50:00|2027-11-26T19:50:00|(null)|None|%s", id, TaskJobName(id)))
			}
		}
		evs, err := b.SyncTasks(ctx, run, stop)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2*round { // started and done, or started and stopped
			t.Fatalf("round %d: %d events, want %d", n, len(evs), 2*round)
		}
		if evs, _ := b.SyncTasks(ctx, run, stop); len(evs) != 0 {
			t.Fatalf("round %d: events returned again while listed: %v", n, evs[:min(3, len(evs))])
		}
		if len(b.reported) > round {
			t.Fatalf("round %d: %d tasks' events kept, want at most the %d listed", n, len(b.reported), round)
		}
	}
	if _, err := b.SyncTasks(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(b.reported) != 0 {
		t.Fatalf("%d tasks' events kept with none listed", len(b.reported))
	}

	// 10 rounds of reservations; each round the plan runs one request, whose job runs
	// (seen in it), then ends with accounting naming no reservation (found by its id),
	// and has one waiting, with a job queued in it. The next round plans only its own.
	r.queue, r.accounting, r.reservations = nil, nil, nil
	now := time.Date(2026, 11, 26, 19, 53, 0, 0, time.Local).UTC()
	for n := range 10 {
		running := agent.Job{Reservation: int64(100 + n), Team: "ads", Configuration: map[string]int64{"hpc/cpu": 1}, Count: 1, Units: 1,
			Start: now.Add(-10 * time.Minute), End: now.Add(time.Hour)}
		waiting := agent.Job{Reservation: int64(200 + n), Team: "ml", Configuration: map[string]int64{"hpc/cpu": 1}, Count: 1,
			Start: now.Add(2 * time.Hour), End: now.Add(3 * time.Hour)}
		plan := agent.Plan{Now: now, Running: []agent.Job{running}, Waiting: []agent.Job{waiting}}
		ranJob, waitJob := 5000+n, 6000+n
		queuedInWaiting := fmt.Sprintf("%d|capml|normal|PENDING|cpu=1|N/A|N/A|%s|Reservation|wait", waitJob, ReservationName(waiting.Key()))
		r.queue = []string{
			fmt.Sprintf("%d|capads|normal|RUNNING|cpu=1|2026-11-26T19:45:00|2027-11-26T19:45:00|%s|None|work", ranJob, ReservationName(running.Key())),
			queuedInWaiting,
		}
		if rep, err := b.FollowReservations(ctx, plan); err != nil || len(rep.Ends) != 0 {
			t.Fatalf("round %d, job running: ends %v (%v), want none", n, rep.Ends, err)
		}
		r.queue = []string{queuedInWaiting}
		r.accounting = append(r.accounting, fmt.Sprintf("%d|capads|normal|COMPLETED|2026-11-26T19:45:00|2026-11-26T19:52:00|||cpu=1|work", ranJob))
		rep, err := b.FollowReservations(ctx, plan)
		if err != nil || len(rep.Ends) != 1 || rep.Ends[0].Reservation != running.Reservation {
			t.Fatalf("round %d, job ended: ends %v (%v), want reservation %d's", n, rep.Ends, err, running.Reservation)
		}
		if rep, _ := b.FollowReservations(ctx, plan); len(rep.Ends) != 0 {
			t.Fatalf("round %d: end told again while planned: %v", n, rep.Ends)
		}
		if len(b.ended) > 1 || len(b.ranIn) > 1 {
			t.Fatalf("round %d: %d ends and %d reservations' jobs kept, want at most the round's 1 and 1", n, len(b.ended), len(b.ranIn))
		}
	}
	r.queue = nil
	if _, err := b.FollowReservations(ctx, agent.Plan{Now: now}); err != nil {
		t.Fatal(err)
	}
	if len(b.ended)+len(b.ranIn) != 0 {
		t.Fatalf("ends %v and jobs seen %v kept with nothing planned nor queued", b.ended, b.ranIn)
	}
}

// An agent that never saw a reservation's job running (it restarted between polls,
// or the job lived between two) still reports the reservation's end: from slurmctld
// (squeue) while it lists the ended job, with its reservation's name; from accounting
// later, where a job that began in the same second as its reservation comes with the
// reservation's id and no name (slurmdbd joins the reservation's record that began
// strictly before the job; seen on Slurm 22.05 with a reservation made "now" and used at
// once), which sacctmgr names. A job whose id names another reservation ends nothing of
// this one.
func TestReservationEndFoundAfterARestart(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 26, 19, 53, 0, 0, time.Local).UTC()
	running := agent.Job{Reservation: 41, Team: "ads", Configuration: map[string]int64{"hpc/cpu": 1}, Count: 2, Units: 2,
		Start: now.Add(-10 * time.Minute), End: now.Add(30 * time.Minute)}
	plan := agent.Plan{Now: now, Running: []agent.Job{running}}
	name := ReservationName(running.Key())
	outside := "5002|capads|normal|COMPLETED|2026-11-26T19:44:00|2026-11-26T19:46:00|||cpu=1|outside"
	for _, c := range []struct {
		what              string
		queue, accounting []string
		names             []string
		asked             []string // ids= of sacctmgr's calls
		ends              int
	}{
		{"ended job in squeue, not yet in accounting", []string{"5001|capads|normal|COMPLETED|cpu=2|2026-11-26T19:45:00|2026-11-26T19:45:00|" + name + "|None|work"},
			[]string{outside}, nil, nil, 1},
		{"in accounting by id", nil, []string{"5001|capads|normal|COMPLETED|2026-11-26T19:45:00|2026-11-26T19:45:00||77|cpu=2|work", outside},
			[]string{"77|" + name}, []string{"77"}, 1},
		{"in accounting by the id of another reservation", nil, []string{"5001|capads|normal|COMPLETED|2026-11-26T19:45:00|2026-11-26T19:45:00||77|cpu=2|work", outside},
			[]string{"77|someone-elses"}, []string{"77"}, 0},
		{"in accounting by an id it no longer knows", nil, []string{"5001|capads|normal|COMPLETED|2026-11-26T19:45:00|2026-11-26T19:45:00||77|cpu=2|work", outside},
			nil, []string{"77"}, 0},
	} {
		b, f := openFake(t) // a fresh agent: it saw no job run
		r := &roundsSlurm{fakeSlurm: f, queue: c.queue, accounting: c.accounting, resvNames: c.names}
		b.run = r
		rep, err := b.FollowReservations(ctx, plan)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if len(rep.Ends) != c.ends {
			t.Fatalf("%s: ends %+v, want %d", c.what, rep.Ends, c.ends)
		}
		if c.ends == 1 && (rep.Ends[0].Reservation != 41 || !rep.Ends[0].At.Equal(time.Date(2026, 11, 26, 19, 45, 0, 0, time.Local).UTC())) {
			t.Errorf("%s: end %+v, want reservation 41 at job 5001's end, not job 5002's (outside any reservation)", c.what, rep.Ends[0])
		}
		if !slices.Equal(r.namesAsked, c.asked) {
			t.Errorf("%s: sacctmgr asked for ids %q, want %q (only an unnamed job's)", c.what, r.namesAsked, c.asked)
		}
	}
}
