package slurm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
)

// bookLater books cores of pool for dur, arriving an hour from now (its planned start
// ahead, in the allocation's upcoming list).
func (m *slurmMarket) bookLater(pool string, cores int64, dur time.Duration) fleet.ReservationView {
	m.T.Helper()
	if d := time.Since(m.Clock.Now()); d > 0 {
		m.Clock.Advance(d.Truncate(time.Second))
	}
	ctx, now := context.Background(), m.Clock.Now()
	id, err := m.App.Plan.NewReservation(ctx, m.Member)
	if err != nil {
		m.T.Fatal(err)
	}
	v, err := m.App.Plan.Submit(ctx, m.Member, id, fleet.Definition{Value: 100 * ledger.Dollar, Requests: []fleet.RequestSpec{{
		Configuration: map[string]int64{pool: 1}, Count: cores, Duration: dur, Arrival: now.Add(time.Hour), Deadline: now.Add(3 * time.Hour)}}})
	if err != nil || v.Status != fleet.ReservationAccepted || v.Price <= 0 {
		m.T.Fatalf("reservation of %d cores: %+v, %v; want accepted at a price", cores, v.Reservation, err)
	}
	return v
}

// A booked reservation on busy cores (issue 37): the real agent tries to reserve it in
// Slurm at booking, Slurm refuses ("Requested nodes are busy"), and the server ends it:
// never running, its whole price back in the team's budget in one posting, the team
// told; another agent run changes nothing more. With the cores free again, a
// reservation booked for later exists in Slurm before its start, with that start.
func TestSlurmBookedReservationOnBusyCoresIsRefunded(t *testing.T) {
	m := newSlurmMarket(t)
	ctx := context.Background()
	token := m.Token("hpc")
	search := ledger.TeamAccount("search")
	before, err := m.App.Ledger.Balance(ctx, search)
	if err != nil {
		t.Fatal(err)
	}

	// Someone else's job (root's account, not mapped) takes every core, with no time limit.
	busy := m.slurm("sbatch", "--parsable", "--chdir="+os.TempDir(), "--output=/dev/null", "--account=root", "--cpus-per-task=16", "--mem=100M", "--wrap=sleep 600")
	t.Cleanup(func() { _ = exec.Command("scancel", busy).Run() })
	m.eventually("the busy job on every core", func() bool { return m.jobState(busy) == "RUNNING|None" })

	res := m.bookLater("hpc/cpu", 2, 30*time.Minute)
	if b, _ := m.App.Ledger.Balance(ctx, search); b.Held != before.Held+res.Price {
		t.Fatalf("held %s after booking, want %s more", b.Held, res.Price)
	}
	out := m.agentOnce(token)
	v := m.Reservation(res.ID)
	if v.Status != fleet.ReservationFailed || v.Phase == "running" || !strings.Contains(v.Note, "Requested nodes are busy") {
		t.Fatalf("reservation after the agent's poll: %s (%s), note %q; want could not be honoured for busy nodes\nagent:\n%s", v.Status, v.Phase, v.Note, out)
	}
	if v.Captured != 0 || v.Released != v.Price {
		t.Errorf("captured %s, released %s of %s: want it all released", v.Captured, v.Released, v.Price)
	}
	after, err := m.App.Ledger.Balance(ctx, search)
	if err != nil || after != before {
		t.Errorf("search's balance %+v after the refusal (%v), want %+v as before booking", after, err, before)
	}
	notes, err := m.App.Market.Notices().Notifications(ctx, m.Member.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	told := 0
	for _, n := range notes {
		if n.Kind == fleet.NoticeReservationUnplaceable && n.Ref == fmt.Sprintf("reservation:%d", res.ID) {
			told++
		}
	}
	if told != 1 {
		t.Errorf("notifications %+v: want one telling search's member its reservation was refused", notes)
	}
	name := fmt.Sprintf("clearhouse-r%d-0", res.ID)
	if show, _ := exec.Command("scontrol", "--oneliner", "show", "reservation", name).CombinedOutput(); !strings.Contains(string(show), "not found") {
		t.Errorf("Slurm reservation %s after the refusal: %s", name, show)
	}
	m.agentOnce(token) // a repeat: the reservation is no longer planned, nothing moves
	if again, _ := m.App.Ledger.Balance(ctx, search); again != before {
		t.Errorf("search's balance %+v after another poll, want %+v", again, before)
	}
	if v := m.Reservation(res.ID); v.Released != v.Price || v.Status != fleet.ReservationFailed {
		t.Errorf("after another poll: %s, released %s of %s", v.Status, v.Released, v.Price)
	}

	// The cores free again: a reservation booked for later is in Slurm before its start.
	m.slurm("scancel", busy)
	m.eventually("the busy job gone", func() bool {
		s := m.jobState(busy)
		return !strings.HasPrefix(s, "RUNNING") && !strings.HasPrefix(s, "COMPLETING")
	})
	later := m.bookLater("hpc/cpu", 2, 30*time.Minute)
	m.agentOnce(token)
	start := *m.Reservation(later.ID).Requests[0].StartAt
	if !start.After(time.Now()) {
		t.Fatalf("the reservation's planned start %s is not ahead", start)
	}
	name = fmt.Sprintf("clearhouse-r%d-0", later.ID)
	show := m.slurm("scontrol", "--oneliner", "show", "reservation", name)
	if !strings.Contains(show, "TRES=cpu=2") || !strings.Contains(show, "StartTime="+start.Local().Format("2006-01-02T15:04:05")) ||
		!strings.Contains(show, "Accounts="+m.accounts["search"]) {
		t.Errorf("Slurm reservation %s before its start %s: %s", name, start, show)
	}
	if v := m.Reservation(later.ID); v.Phase != "scheduled" {
		t.Errorf("the later reservation is %s, want scheduled", v.Phase)
	}
	m.Verify()
}
