package auction_test

import (
	"math"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
)

// shadeGrid is the misreport search's grid: a winner declares each limit less this
// share of its absolute value (a buyer offers less, a seller asks more).
var shadeGrid = []float64{0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// misreportMarkets are the small markets the misreport search runs on: quota-shaped
// markets of 8 orders (auction.Generate; 2 clusters of 2 pools, scarcity 2) and
// CATS-like ones of 12 bids on 8 goods, 4 per distribution (complements, where the
// final round changes the clock's allocation most).
func misreportMarkets(tb testing.TB) []auction.Instance {
	var out []auction.Instance
	for seed := range uint64(12) {
		out = append(out, auction.Generate(auction.GenConfig{Seed: seed, Clusters: 2, Resources: 2, Bidders: 8, Scarcity: 2}))
	}
	for _, dist := range auction.CATSDistributions {
		for seed := range uint64(4) {
			inst, err := auction.GenerateCATS(dist, 8, 12, seed+1)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, inst)
		}
	}
	return out
}

// gainStats is what the misreport search found over all winners of all markets.
type gainStats struct {
	winners   int     // truthful winners searched
	gainers   int     // winners some shading on the grid gains for
	maxGain   float64 // the largest gain, in dollars
	maxShare  float64 // the largest gain as a share of the winner's true limit
	meanShare float64 // the mean over winners of their largest gain as a share of their limit
	// beyondMarkup is the most any core-paying winner's gain exceeded what it paid
	// above its VCG payment when truthful (VCG's incentive bound: never above 0).
	beyondMarkup float64
}

// misreportSearch solves each market truthfully, then for each winner and each
// shading on the grid (the others' orders fixed) solves again, and records the
// winner's largest gain in true surplus (its true limit for what it gets less what
// it pays, 0 when it loses) over the truthful outcome.
func misreportSearch(tb testing.TB, markets []auction.Instance, opt auction.Options) gainStats {
	var st gainStats
	for _, inst := range markets {
		truth, err := auction.Solve(inst, opt)
		if err != nil || !truth.Converged {
			continue
		}
		index := map[string]int{}
		for i, b := range inst.Bidders {
			index[b.ID] = i
		}
		for _, w := range truth.Winners {
			bi := index[w.ID]
			honest := inst.Bidders[bi]
			value := honest.LimitOf(w.BundleIndex)
			base := value - w.Payment
			best := 0.0
			for _, s := range shadeGrid {
				lied := inst
				lied.Bidders = append([]auction.Bidder(nil), inst.Bidders...)
				b := honest
				b.Limit, b.Limits = nil, make([]float64, len(honest.Bundles))
				for k := range honest.Bundles {
					l := honest.LimitOf(k)
					b.Limits[k] = l - s*math.Abs(l)
				}
				lied.Bidders[bi] = b
				res, err := auction.Solve(lied, opt)
				if err != nil || !res.Converged {
					continue
				}
				surplus := 0.0
				for _, v := range res.Winners {
					if v.ID == w.ID {
						surplus = honest.LimitOf(v.BundleIndex) - v.Payment
					}
				}
				best = max(best, surplus-base)
			}
			st.winners++
			scale := max(math.Abs(value), 1e-9)
			if best > 1e-6*max(1, math.Abs(value)) {
				st.gainers++
			}
			st.maxGain = max(st.maxGain, best)
			st.maxShare = max(st.maxShare, best/scale)
			st.meanShare += best / scale
			if w.Core {
				st.beyondMarkup = max(st.beyondMarkup, best-(w.Payment-w.VCG))
			}
		}
	}
	if st.winners > 0 {
		st.meanShare /= float64(st.winners)
	}
	return st
}

// BenchmarkMisreport measures the incentive to shade: on small markets, each
// winner of the truthful outcome tries every shading on the grid, the others fixed,
// under the capped-price rule (the final round's rule before core payments) and
// under core-selecting payments. It reports, per rule, the share of winners that
// gain by some shading, the largest gain as a share of the winner's limit, and the
// mean over winners of their largest gain as a share of their limit. (Reproducible:
// the final round is capped at 2,000 nodes per part, and these markets are proved
// optimal well within it.)
func BenchmarkMisreport(b *testing.B) {
	markets := misreportMarkets(b)
	for _, rule := range []struct {
		name   string
		capped bool
	}{{"capped", true}, {"core", false}} {
		b.Run(rule.name, func(b *testing.B) {
			var st gainStats
			for b.Loop() {
				st = misreportSearch(b, markets, auction.Options{MaxNodes: 2000, CappedPayments: rule.capped})
			}
			b.ReportMetric(float64(st.winners), "winners")
			b.ReportMetric(float64(st.gainers)/float64(max(st.winners, 1)), "gainers/winner")
			b.ReportMetric(100*st.maxShare, "max-gain-%limit")
			b.ReportMetric(100*st.meanShare, "mean-gain-%limit")
			b.ReportMetric(st.maxGain, "max-gain-$")
			if !rule.capped {
				b.ReportMetric(st.beyondMarkup, "gain-beyond-markup-$")
			}
		})
	}
}

// The misreport search finds the gain the capped-price rule offers and none where
// core payments leave none. The market of exchange's final-round test: search
// wants 100 cores and 400 GiB for $900, ads 60 cores for $400, ml 300 GiB for
// $290 (reserves $1 a core, $0.10 a GiB). The clock prices search out; the final
// round gives it its bundle. The capped-price rule charges its whole limit (the
// clock's prices put the bundle above it), so declaring $810 saves at least $90;
// core payments charge its VCG payment, $740, whatever it declares above that,
// and below $740 it loses: no shading gains.
func TestMisreportSearchFindsPayAsBidGains(t *testing.T) {
	one := func(x float64) *float64 { return &x }
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "cpu", Supply: 100, ReservePrice: 1}, {ID: "ram", Supply: 400, ReservePrice: 0.1}},
		Bidders: []auction.Bidder{
			{ID: "search", Limit: one(900), Bundles: []auction.Bundle{{"cpu": 100, "ram": 400}}},
			{ID: "ads", Limit: one(400), Bundles: []auction.Bundle{{"cpu": 60}}},
			{ID: "ml", Limit: one(290), Bundles: []auction.Bundle{{"ram": 300}}},
		},
	}
	capped := misreportSearch(t, []auction.Instance{inst}, auction.Options{CappedPayments: true})
	core := misreportSearch(t, []auction.Instance{inst}, auction.Options{})
	if capped.winners != 1 || core.winners != 1 {
		t.Fatalf("winners %d and %d, want search alone", capped.winners, core.winners)
	}
	if capped.maxGain < 90 {
		t.Errorf("capped-price rule: largest gain %v, want at least 90 (declaring 810 still wins)", capped.maxGain)
	}
	if core.maxGain > 1e-6 {
		t.Errorf("core payments: largest gain %v, want none (search pays its VCG payment 740 whatever it declares above it)", core.maxGain)
	}
}

// BenchmarkCorePaymentsCATS solves the CATS instances (testdata, 64 x 300, and the
// generated 96 x 450 ones) with the final round's default time limit, as a binding
// run has it (the payments get a budget as long again), and reports the payments: whether they are core payments (1) or capped
// prices (0), revenue against VCG revenue and against the winners' limits, the
// blocking coalitions generated, the time payments took, and the most any coalition
// blocks them by, found by cbc (winner determination with each winner's columns
// worth its limit less its surplus: 0 means the payments are in the core), and the
// largest difference between a reported VCG payment and cbc's (one integer program
// per winner: about 1.5 s each for the 96 x 450 instances, so up to a minute or two
// where they get core payments).
func BenchmarkCorePaymentsCATS(b *testing.B) {
	type bench struct {
		name string
		inst auction.Instance
		vcg  bool
	}
	var cases []bench
	for _, c := range catsFiles {
		cases = append(cases, bench{c.name, readCATS(b, c.name), true})
	}
	for _, dist := range auction.CATSDistributions {
		inst, err := auction.GenerateCATS(dist, 96, 450, 1)
		if err != nil {
			b.Fatal(err)
		}
		cases = append(cases, bench{dist + "-96x450", inst, true})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			inst := c.inst
			var res auction.Result
			for b.Loop() {
				var err error
				if res, err = auction.Solve(inst, auction.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			f := res.FinalRound
			core := 0.0
			if f.Payments == auction.PaymentsCore {
				core = 1
			}
			revenue, vcgRevenue, bids := 0.0, 0.0, 0.0
			for _, w := range res.Winners {
				revenue += w.Payment
				vcgRevenue += w.VCG
				bids += limitOf(inst, w)
			}
			b.ReportMetric(core, "core")
			b.ReportMetric(revenue/bids, "revenue/bids")
			b.ReportMetric(f.PaymentSeconds, "payment-s")
			b.ReportMetric(float64(f.Coalitions), "coalitions")
			b.ReportMetric(float64(f.LeastRevenueParts), "least-revenue-parts")
			b.ReportMetric(f.Seconds, "final-s")
			if core == 0 {
				return
			}
			b.ReportMetric(revenue/vcgRevenue, "revenue/vcg")
			b.ReportMetric(cbcBlocking(b, inst, res), "max-blocking-$")
			if c.vcg {
				b.ReportMetric(cbcVCGError(b, inst, res), "vcg-error-$")
			}
		})
	}
}

func limitOf(inst auction.Instance, w auction.Winner) float64 {
	for _, b := range inst.Bidders {
		if b.ID == w.ID {
			return b.LimitOf(w.BundleIndex)
		}
	}
	return math.NaN()
}

// cbcBlocking returns the most any coalition blocks res's payments by, by cbc:
// the optimum of winner determination with each winner's limits lowered by its
// surplus (limit less payment), less the winners' payments above reserve value.
func cbcBlocking(tb testing.TB, inst auction.Instance, res auction.Result) float64 {
	reserve := map[string]float64{}
	for _, p := range inst.Pools {
		reserve[p.ID] = p.ReservePrice
	}
	mod := inst
	mod.Bidders = append([]auction.Bidder(nil), inst.Bidders...)
	index := map[string]int{}
	for i, b := range inst.Bidders {
		index[b.ID] = i
	}
	above := 0.0
	for _, w := range res.Winners {
		i := index[w.ID]
		b := inst.Bidders[i]
		surplus := b.LimitOf(w.BundleIndex) - w.Payment
		nb := b
		nb.Limit, nb.Limits = nil, make([]float64, len(b.Bundles))
		for k := range b.Bundles {
			nb.Limits[k] = b.LimitOf(k) - surplus
		}
		mod.Bidders[i] = nb
		rv := 0.0
		for id, q := range b.Bundles[w.BundleIndex] {
			rv += q * reserve[id]
		}
		above += w.Payment - rv
	}
	opt, _ := cbcOptimum(tb, mod)
	return opt - above
}

// cbcVCGError returns the largest difference between a winner's reported VCG
// payment and the one cbc gives: its limit less (the optimum less the optimum
// without it).
func cbcVCGError(tb testing.TB, inst auction.Instance, res auction.Result) float64 {
	opt, _ := cbcOptimum(tb, inst)
	worst := 0.0
	for _, w := range res.Winners {
		without := inst
		without.Bidders = nil
		for _, b := range inst.Bidders {
			if b.ID != w.ID {
				without.Bidders = append(without.Bidders, b)
			}
		}
		other, _ := cbcOptimum(tb, without)
		vcg := limitOf(inst, w) - (opt - other)
		worst = max(worst, math.Abs(vcg-w.VCG))
	}
	return worst
}
