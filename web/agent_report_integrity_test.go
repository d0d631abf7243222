package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// abacusAgent is a market whose pool us-east/cpu lends idle capacity by the abacus
// policy, with a member's and the cluster agent's tokens.
type abacusAgent struct {
	*fixture
	member, agent string
}

func newAbacusAgent(t *testing.T, db *store.DB) abacusAgent {
	t.Helper()
	f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
	f.openMarket()
	ctx := context.Background()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: besteffort.PolicyAbacus, Alpha: 0.5}); err != nil {
		t.Fatal(err)
	}
	return abacusAgent{f, member, agent}
}

// runOne submits a one-task abacus job and has the agent start it; it returns the
// job's and the task's ids.
func (x abacusAgent) runOne() (job, task any) {
	x.t.Helper()
	if code, out := x.api(x.member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "budget": "5"}`); code != http.StatusCreated {
		x.t.Fatalf("submit: %d %v", code, out)
	}
	code, alloc := x.api(x.agent, "GET", "/api/v1/clusters/us-east/allocation", "")
	tasks, _ := alloc["best_effort"].([]any)
	if code != http.StatusOK || len(tasks) != 1 {
		x.t.Fatalf("allocation: %d %v", code, alloc)
	}
	t := tasks[0].(map[string]any)
	return t["job"], t["task"]
}

// doneWith is the best-effort part of a report: the task done now and its job's
// measurement.
func (x abacusAgent) doneWith(job, task any, utility, share string) string {
	return fmt.Sprintf(`"best_effort": [{"task": %v, "event": "done", "at": %q}], "best_effort_jobs": [{"job": %v, "utility": %s, "shares": {"us-east/cpu": %s}}]`,
		task, x.clock.Now().Format(time.RFC3339), job, utility, share)
}

func (x abacusAgent) capacityChanges() int64 {
	x.t.Helper()
	var n int64
	if err := x.db.Read.Table("capacity_changes").Count(&n).Error; err != nil {
		x.t.Fatal(err)
	}
	return n
}

// An agent's report is one transaction: a report whose capacity change is valid
// but whose measurement contradicts the job's earlier one is refused whole (409)
// and keeps nothing of the capacity change (it was applied in a transaction of its
// own before); the same change alone then applies.
func TestAnAgentReportAppliesWholeOrNotAtAll(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newAbacusAgent(t, db)
		job, task := x.runOne()
		if code, out := x.api(x.agent, "POST", "/api/v1/clusters/us-east/updates", "{"+x.doneWith(job, task, "0.75", "0.5")+"}"); code != http.StatusOK {
			t.Fatalf("the first measurement: %d %v", code, out)
		}
		from := x.clock.Now().Add(time.Hour)
		capacity := fmt.Sprintf(`"capacity": [{"pool": "us-east/cpu", "from": %q, "to": %q, "units": 60}]`,
			from.Format(time.RFC3339), from.Add(time.Hour).Format(time.RFC3339))
		contradicting := fmt.Sprintf(`"best_effort_jobs": [{"job": %v, "utility": 0.9}]`, job)
		code, out := x.api(x.agent, "POST", "/api/v1/clusters/us-east/updates", "{"+capacity+", "+contradicting+"}")
		if code != http.StatusConflict || !strings.Contains(errorMessage(out), "measured before") {
			t.Fatalf("a contradicting measurement: %d %v, want 409", code, out)
		}
		if n := x.capacityChanges(); n != 0 {
			t.Fatalf("the refused report kept %d capacity changes", n)
		}
		if code, out := x.api(x.agent, "POST", "/api/v1/clusters/us-east/updates", "{"+capacity+"}"); code != http.StatusOK {
			t.Fatalf("the capacity change alone: %d %v", code, out)
		}
		if n := x.capacityChanges(); n != 1 {
			t.Fatalf("the capacity change alone: %d rows, want 1", n)
		}
	})
}

// Measured utilities outside 0 or [1e-6, 1e6] are refused naming the field and
// the range, and keep nothing; learned weights are clamped to what a team may type
// (at most 1,000,000), so two measurements within range whose fit would teach a
// weight of 1e303 (utility 1,000 at a share of 1e-300) do not make every later
// allocation poll of the cluster answer 400, and neither does a weight stored
// before the clamp.
func TestExtremeMeasurementsCannotBlockTheCluster(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newAbacusAgent(t, db)
		ctx := context.Background()
		job, task := x.runOne()
		for _, u := range []string{"1e308", "5e-324", "-1", "1000001"} {
			code, out := x.api(x.agent, "POST", "/api/v1/clusters/us-east/updates", "{"+x.doneWith(job, task, u, "0.5")+"}")
			if msg := errorMessage(out); code != http.StatusBadRequest || !strings.HasPrefix(msg, "best_effort_jobs[0]: utility:") || !strings.Contains(msg, "from 1e-06 to 1e+06") {
				t.Fatalf("utility %s: %d %q, want 400 naming the field and the range", u, code, msg)
			}
		}
		if code, out := x.api(x.member, "GET", fmt.Sprintf("/api/v1/best-effort/%v", job), ""); code != http.StatusOK || out["measured_utility"] != nil || out["status"] == "done" {
			t.Fatalf("a refused report changed the job: %d %v", code, out)
		}
		// Two jobs within range whose least-squares weight is 1e303.
		if code, out := x.api(x.agent, "POST", "/api/v1/clusters/us-east/updates", "{"+x.doneWith(job, task, "1000", "1e-300")+"}"); code != http.StatusOK {
			t.Fatalf("measurement 1: %d %v", code, out)
		}
		job, task = x.runOne()
		if code, out := x.api(x.agent, "POST", "/api/v1/clusters/us-east/updates", "{"+x.doneWith(job, task, "1000", "1e-300")+"}"); code != http.StatusOK {
			t.Fatalf("measurement 2: %d %v", code, out)
		}
		fits, err := x.be.Fits(ctx, "search")
		if err != nil || len(fits) != 1 {
			t.Fatalf("fits: %v %v", fits, err)
		}
		if w := fits[0].WeightsByPool()["us-east/cpu"]; w != besteffort.MaxWeight {
			t.Fatalf("learned weight %g (%s), want it clamped to %g", w, fits[0].Outcome, besteffort.MaxWeight)
		}
		job, _ = x.runOne() // bids with the learned weight; its poll answered
		code, out := x.api(x.member, "GET", fmt.Sprintf("/api/v1/best-effort/%v", job), "")
		if code != http.StatusOK || out["weights_from"] != "fitted" {
			t.Fatalf("the job after the fit: %d %v", code, out)
		}
		// A weight stored before the clamp (as the issue found it: ~5e307).
		if err := x.db.Write.Exec("UPDATE best_effort_jobs SET weights = ? WHERE id = ?", `{"us-east/cpu":5e307}`, job).Error; err != nil {
			t.Fatal(err)
		}
		if err := x.db.Write.Exec("UPDATE best_effort_fits SET weights = ?", `{"us-east/cpu":5e307}`).Error; err != nil {
			t.Fatal(err)
		}
		if code, out := x.api(x.agent, "GET", "/api/v1/clusters/us-east/allocation", ""); code != http.StatusOK {
			t.Fatalf("a poll with a stored weight of 5e307: %d %v", code, out)
		}
		if code, out := x.api(x.member, "POST", "/api/v1/best-effort", `{"configuration": {"us-east/cpu": 1}, "tasks": 1, "budget": "5"}`); code != http.StatusCreated {
			t.Fatalf("a job after a stored fit of 5e307: %d %v", code, out)
		}
		if code, out := x.api(x.agent, "GET", "/api/v1/clusters/us-east/allocation", ""); code != http.StatusOK {
			t.Fatalf("a poll after a job took a stored fit of 5e307: %d %v", code, out)
		}
	})
}
