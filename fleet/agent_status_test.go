package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func TestAgentStatusModelsMatchSchema(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &fleet.AgentStatusRow{}, &fleet.AgentCorrectionRow{})
	})
}

// The server keeps, per cluster, the last report's time and backend, every correction
// counted with the latest 20 kept, and the last errors (kept through reports without
// errors); an old agent's report (no status) moves only the time.
func TestAgentStatusKeepsTheLastReportCorrectionsAndErrors(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		start := pl.Clock.Now()
		corr := func(i int) fleet.Correction {
			return fleet.Correction{Team: "search", Pool: "us-east/cpu", Object: "ResourceQuota search/clearhouse", Was: fmt.Sprint(i), Now: "40"}
		}
		var batch []fleet.Correction
		for i := range 15 {
			batch = append(batch, corr(i))
		}
		if err := pl.r.RecordAgentStatus(ctx, "us-east", &fleet.AgentStatus{Backend: "kubernetes", Version: "v1", Corrections: batch,
			Errors: []string{"apply quotas: the API server is unreachable"}}); err != nil {
			t.Fatal(err)
		}
		pl.Clock.Advance(time.Minute)
		if err := pl.r.RecordAgentStatus(ctx, "us-east", &fleet.AgentStatus{Backend: "kubernetes", Version: "v2", Corrections: batch[:10]}); err != nil {
			t.Fatal(err)
		}
		pl.Clock.Advance(time.Minute)
		if err := pl.r.RecordAgentStatus(ctx, "us-east", nil); err != nil {
			t.Fatal(err)
		}
		vs, err := pl.r.AgentViews(ctx)
		if err != nil || len(vs) != 1 {
			t.Fatalf("views %+v, %v", vs, err)
		}
		v := vs[0]
		if v.Cluster != "us-east" || v.Backend != "kubernetes" || v.Version != "v2" || !v.ReportedAt.Equal(start.Add(2*time.Minute)) || v.Reports != 3 {
			t.Fatalf("view %+v", v)
		}
		if v.Corrections != 25 || len(v.Recent) != fleet.KeptCorrections || v.Recent[0].Was != "9" || !v.Recent[0].At.Equal(start.Add(time.Minute)) {
			t.Fatalf("corrections %d, recent %d, newest %+v: want 25 counted, the 20 latest kept, newest first", v.Corrections, len(v.Recent), v.Recent[0])
		}
		if !slices.Equal(v.Errors, []string{"apply quotas: the API server is unreachable"}) || v.ErrorsAt == nil || !v.ErrorsAt.Equal(start) {
			t.Fatalf("errors %q at %v: want the first report's, kept", v.Errors, v.ErrorsAt)
		}
	})
}

// A status that breaks a rule is refused and stores nothing; an unknown cluster is not
// found.
func TestAgentStatusRefusesBadInput(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		for _, tc := range []struct {
			st   fleet.AgentStatus
			want string
		}{
			{fleet.AgentStatus{}, "agent.backend"},
			{fleet.AgentStatus{Backend: strings.Repeat("k", 41)}, "agent.backend"},
			{fleet.AgentStatus{Backend: "slurm", Version: strings.Repeat("v", 41)}, "agent.version"},
			{fleet.AgentStatus{Backend: "slurm", Corrections: []fleet.Correction{{Team: "search"}}}, "agent.corrections[0].object"},
			{fleet.AgentStatus{Backend: "slurm", Corrections: make([]fleet.Correction, 101)}, "agent.corrections"},
			{fleet.AgentStatus{Backend: "slurm", Errors: make([]string, 21)}, "agent.errors"},
			{fleet.AgentStatus{Backend: "slurm", Errors: []string{strings.Repeat("e", 501)}}, "agent.errors[0]"},
		} {
			err := pl.r.RecordAgentStatus(ctx, "us-east", &tc.st)
			if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("status %.60v: %v, want EINVALID naming %s", tc.st, err, tc.want)
			}
		}
		if err := pl.r.RecordAgentStatus(ctx, "nowhere", &fleet.AgentStatus{Backend: "slurm"}); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Errorf("unknown cluster: %v", err)
		}
		if vs, err := pl.r.AgentViews(ctx); err != nil || len(vs) != 0 {
			t.Fatalf("after refused statuses: %+v %v", vs, err)
		}
	})
}

// Concurrent reports of one cluster each count.
func TestAgentStatusCountsConcurrentReports(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				errs <- pl.r.RecordAgentStatus(ctx, "eu-west", &fleet.AgentStatus{Backend: "slurm",
					Corrections: []fleet.Correction{{Object: "assoc search GrpTRES", Was: "cpu=1", Now: "cpu=2"}}})
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		vs, err := pl.r.AgentViews(ctx)
		if err != nil || len(vs) != 1 || vs[0].Reports != 8 || vs[0].Corrections != 8 || len(vs[0].Recent) != 8 {
			t.Fatalf("after 8 concurrent reports: %+v %v", vs, err)
		}
	})
}
