package slurm

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
)

// A cluster smaller than configured (issue 37, item 2), on real Slurm daemons and
// the real agent: the pool says 64 cores, the Slurm node has what its CfgTRES says
// (16 in scripts/slurm-up.sh). Search wins 10 cores before any measurement; one
// agent poll later the pool's effective capacity is the measured one, and an
// auction with ten 1-core bids sells only what the cluster has beyond the 10 held:
// teams end holding exactly the measured capacity, not 20 of it, and the agent then
// sets search's GrpTRES to it. An override below holdings shows the pool oversold.
func TestSlurmClusterSmallerThanConfiguredSellsOnlyWhatItHas(t *testing.T) {
	m := newSlurmMarket(t)
	ctx := context.Background()
	cfg := regexp.MustCompile(`CfgTRES=cpu=(\d+)`).FindStringSubmatch(m.slurm("scontrol", "--oneliner", "show", "nodes"))
	if cfg == nil {
		t.Fatal("scontrol show nodes has no CfgTRES=cpu=")
	}
	cores, _ := strconv.ParseInt(cfg[1], 10, 64)
	if cores < 12 || cores > 60 {
		t.Fatalf("the Slurm node has %d cores: this test wants 12 to 60", cores)
	}
	if _, err := m.App.Market.UpdatePool(ctx, "hpc/cpu", exchange.PoolSpec{Unit: "core", Capacity: 64, UnitCost: ledger.Dollar,
		Utilization: 0.8, CurveID: "standard"}); err != nil {
		t.Fatal(err)
	}
	token := m.Token("hpc")
	m.win("search", 10)
	out := m.agentOnce(token)
	c, err := m.App.Market.Capacity(ctx, "hpc/cpu")
	if err != nil || c.Source != exchange.CapacityFromMeasured || c.Effective != cores || c.Configured != 64 || c.Held != 10 {
		t.Fatalf("capacity after one poll %+v (%v), want the measured %d\n%s", c, err, cores, out)
	}

	a, err := m.App.Market.ScheduleAuction(ctx, m.Clock.Now(), m.Clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.App.Market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		limit := ledger.Money(5+5*i) * ledger.Dollar
		if _, err := m.App.Market.PlaceOrder(ctx, m.Member, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"hpc/cpu": 1}}, Limit: &limit}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.App.Market.Close(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	hs, err := m.App.Market.Holdings(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var held int64
	for _, h := range hs {
		if h.PoolID == "hpc/cpu" {
			held += h.Quantity
		}
	}
	if want := min(cores, 20); held != want {
		t.Fatalf("teams hold %d cores of hpc/cpu after the auction, want %d: the measured %d, not the configured 64", held, want, cores)
	}
	m.agentOnce(token)
	if got, want := m.grpTRES("search"), "cpu="+strconv.FormatInt(held, 10); got != want {
		t.Errorf("search's GrpTRES %q, want %q", got, want)
	}
	if over, err := m.App.Market.Oversold(ctx); err != nil || len(over) != 0 {
		t.Errorf("oversold pools %+v (%v), want none", over, err)
	}
	if err := m.App.Market.OverrideCapacity(ctx, "hpc/cpu", held-4, "two nodes out for repair", m.Clock.Now().Add(time.Hour), "op@x.io"); err != nil {
		t.Fatal(err)
	}
	if over, err := m.App.Market.Oversold(ctx); err != nil || len(over) != 1 || over[0].Oversold() != 4 {
		t.Errorf("oversold pools under an override 4 below holdings %+v (%v)", over, err)
	}
}
