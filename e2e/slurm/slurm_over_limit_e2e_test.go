package slurm

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// A sale below running usage (issue 37), on real Slurm daemons and the real agent
// (`clearhouse agent --backend slurm --once`, a fresh agent each poll): search holds
// 8 cores and runs two 4-core jobs, then sells 4 cores to ads at a settled auction
// (the pool's capacity overridden to the 8 held, so only search's offer can fill
// ads's bid). Its GrpTRES falls to 4 below the 8 it runs: the agent reports it over
// its limit and the server records it. Under the default policy (report) nothing is
// stopped; once operators set evict with a 1-minute grace, nothing is stopped within
// the grace, and after it (the market's clock moved on) the agent requeues search's
// newest job only, which waits under the lowered GrpTRES; the excess clears, what
// was taken back is recorded, and the team is told both.
func TestSlurmASaleBelowRunningUsageIsReportedThenRequeued(t *testing.T) {
	m := newSlurmMarket(t)
	ctx := context.Background()
	buyer, err := m.App.Identity.AddUser(ctx, identity.NewUser{Email: "member@ads.io", Role: identity.RoleMember, TeamID: "ads"})
	if err != nil {
		t.Fatal(err)
	}
	token := m.Token("hpc")
	if err := m.App.Market.GrantQuota(ctx, "search", "hpc/cpu", 8); err != nil {
		t.Fatal(err)
	}
	if err := m.App.Market.OverrideCapacity(ctx, "hpc/cpu", 8, "only search's offer may fill a bid", m.Clock.Now().Add(24*time.Hour), "op@x.io"); err != nil {
		t.Fatal(err)
	}
	out := m.agentOnce(token)
	if got := m.grpTRES("search"); got != "cpu=8" {
		t.Fatalf("search's GrpTRES after the grant and one poll %q, want cpu=8\n%s", got, out)
	}
	sbatch := func(args ...string) string {
		return m.slurm("sbatch", append([]string{"--parsable", "--chdir=" + os.TempDir(), "--output=/dev/null", "--mem=100M", "--account=" + m.accounts["search"]}, args...)...)
	}
	old := sbatch("--cpus-per-task=4", "--wrap=sleep 600")
	m.eventually("the first job running", func() bool { return m.jobState(old) == "RUNNING|None" })
	newer := sbatch("--cpus-per-task=4", "--wrap=sleep 600")
	m.eventually("the second job running", func() bool { return m.jobState(newer) == "RUNNING|None" })
	m.agentOnce(token)
	if over, err := m.App.Plan.OverLimits(ctx, "search"); err != nil || len(over) != 0 {
		t.Fatalf("over limits using 8 of 8: %+v %v", over, err)
	}

	// search sells 4 of its 8 cores to ads.
	a, err := m.App.Market.ScheduleAuction(ctx, m.Clock.Now(), m.Clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.App.Market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	ask, bid := -1*ledger.Dollar, 500*ledger.Dollar
	if _, err := m.App.Market.PlaceOrder(ctx, m.Member, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"hpc/cpu": -4}}, Limit: &ask}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.App.Market.PlaceOrder(ctx, buyer, exchange.OrderSpec{Team: "ads", Bundles: []exchange.Bundle{{"hpc/cpu": 4}}, Limit: &bid}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.App.Market.Close(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	hs, err := m.App.Market.Holdings(ctx, "search")
	if err != nil || len(hs) != 1 || hs[0].Quantity != 4 {
		t.Fatalf("search's holdings after selling 4 of 8: %+v %v", hs, err)
	}

	out = m.agentOnce(token)
	if got := m.grpTRES("search"); got != "cpu=4" {
		t.Fatalf("search's GrpTRES after the sale %q, want cpu=4\n%s", got, out)
	}
	over, err := m.App.Plan.OverLimits(ctx, "search")
	if err != nil || len(over) != 1 || over[0].Used != 8 || over[0].Limit != 4 || over[0].Pool != "hpc/cpu" {
		t.Fatalf("over limits after the sale %+v %v, want search using 8 of its 4\n%s", over, err, out)
	}
	both := func(when string) {
		t.Helper()
		if o, n := m.jobState(old), m.jobState(newer); o != "RUNNING|None" || n != "RUNNING|None" {
			t.Fatalf("%s: the older job %s, the newer %s; want both running", when, o, n)
		}
	}
	m.agentOnce(token)
	both("under the report-only policy")

	if err := m.App.Plan.SetOverLimitPolicy(ctx, fleet.OverLimitPolicy{Action: fleet.OverLimitEvict, Grace: time.Minute}); err != nil {
		t.Fatal(err)
	}
	m.agentOnce(token)
	both("within the grace")
	m.Clock.Advance(2 * time.Minute)
	m.eventually("the excess taken back and cleared", func() bool {
		out = m.agentOnce(token)
		over, err := m.App.Plan.OverLimits(ctx, "search")
		return err == nil && len(over) == 0
	})
	// A requeued job passes through COMPLETING on its way back to the queue.
	m.eventually("the newer job requeued and waiting", func() bool { return strings.HasPrefix(m.jobState(newer), "PENDING|") })
	if o, n := m.jobState(old), m.jobState(newer); o != "RUNNING|None" || !strings.HasPrefix(n, "PENDING|") {
		t.Fatalf("after the grace: the older job %s, the newer %s; want the newer requeued and waiting, the older running\n%s", o, n, out)
	}
	rec, err := m.App.Plan.RecentlyReclaimed(ctx, "search", 5)
	if err != nil || len(rec) != 1 || rec[0].Units != 4 || rec[0].Object != "job "+newer+" requeued" {
		t.Fatalf("recorded reclaims %+v %v, want job %s requeued, 4 cores", rec, err, newer)
	}
	ns, err := m.App.Market.Notices().Notifications(ctx, m.Member.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, n := range ns {
		kinds = append(kinds, n.Kind)
	}
	if !slices.Contains(kinds, fleet.NoticeOverLimit) || !slices.Contains(kinds, fleet.NoticeReclaimed) {
		t.Fatalf("search was told %v, want it over its limit and what was taken back", kinds)
	}
	m.agentOnce(token)
	if rec, _ := m.App.Plan.RecentlyReclaimed(ctx, "search", 5); len(rec) != 1 || m.jobState(old) != "RUNNING|None" {
		t.Fatalf("more taken back once within the limit: %+v, the older job %s", rec, m.jobState(old))
	}
}
