package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/scheduler"
)

// What the agent reports is used, on the production wiring: under-use returns
// capacity for the current slot at once, a job that now fits is offered as "may
// start now" and the reference agent starts it early; an early end frees the rest
// of a run for the next waiting job; and the learned predictors are told what a
// reservation actually used when it leaves the plan.
func TestAgentReportsReturnCapacityAndTheAgentStartsJobsEarly(t *testing.T) {
	m := newAgentMarket(t)
	ctx := context.Background()
	t0 := m.clock.Now().Truncate(5 * time.Minute)
	m.clock.Set(t0)
	full := m.reserve(100, time.Hour, 0, time.Hour) // the whole pool for the hour
	long := m.reserve(60, 30*time.Minute, 0, 3*time.Hour)
	short := m.reserve(30, 5*time.Minute, 0, 3*time.Hour)
	for _, v := range []fleet.ReservationView{long, short} {
		if !v.Requests[0].StartAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("reservation %d planned at %s, want after the full hour", v.ID, v.Requests[0].StartAt)
		}
	}
	token := m.token("us-east")

	// The simulated cluster uses half of the full job's cores: 50 go back to the plan
	// for this slot, room for the short job (one slot) but not the long one (six).
	code, out, errOut := m.agent("us-east", token, "--once", "--simulate", "--use", "0.5")
	if code != 0 {
		t.Fatalf("agent: %d %s %s", code, out, errOut)
	}
	a, err := m.app.Plan.Allocation(ctx, "us-east")
	if err != nil {
		t.Fatal(err)
	}
	may := map[int64]bool{}
	for _, w := range a.Waiting {
		may[w.Reservation] = w.MayStartNow
	}
	if !may[short.ID] || may[long.ID] {
		t.Fatalf("after under-use, may start now: %v (short %d, long %d)", may, short.ID, long.ID)
	}
	code, out, errOut = m.agent("us-east", token, "--once", "--simulate", "--use", "0.5")
	if code != 0 || !strings.Contains(out, "start early reservation "+itoa(short.ID)) {
		t.Fatalf("the agent did not start the short job early: %d\n%s\n%s", code, out, errOut)
	}
	if got := m.reservation(short.ID).Requests[0].StartAt; !got.Equal(t0) {
		t.Fatalf("the short job started early is planned at %s, want %s", got, t0)
	}
	if u := m.reservation(full.ID).Requests[0].Unused; u != 50 {
		t.Fatalf("unused unit-slots of the full job: %d, want 50", u)
	}

	// The full job ends after one slot: the long job may start at once and does.
	m.clock.Set(t0.Add(5 * time.Minute))
	if _, err := m.app.Plan.Report(ctx, "us-east", fleet.AgentReport{Ends: []fleet.EndReport{{Reservation: full.ID, At: m.clock.Now()}}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = m.agent("us-east", token, "--once")
	if code != 0 || !strings.Contains(out, "start early reservation "+itoa(long.ID)) {
		t.Fatalf("the agent did not start the long job early: %d\n%s\n%s", code, out, errOut)
	}
	if got := m.reservation(long.ID).Requests[0].StartAt; !got.Equal(t0.Add(5 * time.Minute)) {
		t.Fatalf("the long job started early is planned at %s", got)
	}
	a, err = m.app.Plan.Allocation(ctx, "us-east")
	if err != nil || len(a.Running) != 1 || a.Running[0].Reservation != long.ID || a.Running[0].Units != 60 {
		t.Fatalf("allocation after the early start: %+v %v", a, err)
	}

	// The predictors learned what the full job used: one slot of 100 cores less
	// the 50 it left unused, of the 1,200 unit-slots it reserved.
	var bodies []string
	if err := m.app.DB.Read.Raw("SELECT body FROM predictor_observations WHERE kind = 'use' ORDER BY id").Scan(&bodies).Error; err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range bodies {
		var u scheduler.Use
		if err := json.Unmarshal([]byte(b), &u); err != nil {
			t.Fatal(err)
		}
		if u.Reservation == full.ID {
			found = true
			if len(u.Used) != 1 || u.Used[0] != 50 || u.Reserved[0] != 1200 {
				t.Fatalf("use learned of the full job: %+v", u)
			}
		}
	}
	if !found {
		t.Fatalf("no use learned of the full job among %d", len(bodies))
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
