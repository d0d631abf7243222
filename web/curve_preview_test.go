package web_test

import (
	"context"
	"math"
	"net/url"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
)

// The curve editor previews each pool's reserve at the pool's own measured
// utilization (95% here, while its configured figure is 80%), before (the saved
// curve) and after (the edited one), the way the market will price it.
func TestCurvePreviewUsesEachPoolsMeasuredUtilization(t *testing.T) {
	t.Parallel()
	f, u := newUtilFixture(t)
	f.cpuPool() // us-east/cpu: 100 cores, $1 each, configured utilization 0.8
	ctx := context.Background()
	for i := 1; i <= 20; i++ {
		if _, err := f.plan.Report(ctx, "us-east", fleet.AgentReport{Pools: []fleet.PoolUsageReport{{Pool: "us-east/cpu", Used: int64(5 * i)}}}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(5 * time.Minute)
	}
	f.clock.Advance(time.Hour)
	if _, err := u.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	f.user("op@x.io", identity.RoleOperator, "")
	op := f.browser()
	op.login("op@x.io")
	edited := auction.CurveSpec{Kind: "parametric", K: 8, Threshold: 0.8, Gamma: 3}
	res, doc := op.post("/operate/curves/standard", url.Values{"csrf_token": {op.csrf("/operate/curves/standard")}, "action": {"preview"}, "name": {"Standard"},
		"kind": {"parametric"}, "k": {"8"}, "threshold": {"0.8"}, "gamma": {"3"}})
	if res.StatusCode != 200 {
		t.Fatalf("preview: %d", res.StatusCode)
	}
	row := doc.Find(`[data-testid=implied] tbody tr`).First()
	if got := text(doc, `[data-testid=implied] tbody tr td[data-label=Utilization]`); got != "95.0%" {
		t.Errorf("preview at utilization %q, want the measured 95.0%%", got)
	}
	want := func(spec auction.CurveSpec) float64 {
		c, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		r, _ := auction.ReservePrice(c, 0.95, 1)
		return r
	}
	for _, c := range []struct {
		sel  string
		spec auction.CurveSpec
	}{{"[data-testid=reserve-before]", auction.DefaultCurve}, {"[data-testid=reserve-after]", edited}} {
		title, _ := row.Find(c.sel + " .money").Attr("title")
		got := dollars(t, title)
		if math.Abs(got-want(c.spec)) > 1e-6 {
			t.Errorf("%s: %s, want %.6f", c.sel, title, want(c.spec))
		}
	}
}
