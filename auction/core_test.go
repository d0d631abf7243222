package auction_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"gonum.org/v1/gonum/mat"
	gonumlp "gonum.org/v1/gonum/optimize/convex/lp"
	"pgregory.net/rapid"
)

// coalitionValues returns W(S) for every coalition S of inst's bidders (a bit
// mask, bidder i is bit i): the greatest welfare of a feasible allocation that
// gives bundles only to members of S (the operator is in every coalition; a
// coalition without it has nothing to trade). It enumerates every allocation, so
// it is only for a handful of bidders, and shares no code with the engine.
func coalitionValues(inst auction.Instance) []float64 {
	reserve, supply := map[string]float64{}, map[string]float64{}
	for _, p := range inst.Pools {
		reserve[p.ID], supply[p.ID] = p.ReservePrice, p.Supply
	}
	n := len(inst.Bidders)
	best := make([]float64, 1<<n) // best[mask]: allocations whose winners are exactly mask
	for i := range best {
		best[i] = math.Inf(-1)
	}
	net := map[string]float64{}
	var walk func(i, mask int, w float64)
	walk = func(i, mask int, w float64) {
		if i == n {
			for id, q := range net {
				if q > supply[id] {
					return
				}
			}
			best[mask] = max(best[mask], w)
			return
		}
		walk(i+1, mask, w)
		b := inst.Bidders[i]
		for k, bundle := range b.Bundles {
			v := b.LimitOf(k)
			for id, q := range bundle {
				net[id] += q
				v -= q * reserve[id]
			}
			walk(i+1, mask|1<<i, w+v)
			for id, q := range bundle {
				net[id] -= q
			}
		}
	}
	walk(0, 0, 0)
	// W(S) = max over T within S of best[T] (sum over subsets, one bit at a time).
	for i := range n {
		for mask := range best {
			if mask&(1<<i) != 0 {
				best[mask] = max(best[mask], best[mask&^(1<<i)])
			}
		}
	}
	return best
}

// coreCheck holds a solved instance's winners measured above the reserve value:
// per winner its column worth w (limit less reserve value) and its payment pi
// (payment less reserve value), and the brute-force coalition values.
type coreCheck struct {
	W       []float64 // per coalition
	winners []int     // bidder indices
	w, pi   []float64 // per winner
	all     int       // the grand coalition's mask
}

func newCoreCheck(inst auction.Instance, res auction.Result) coreCheck {
	reserve := map[string]float64{}
	for _, p := range inst.Pools {
		reserve[p.ID] = p.ReservePrice
	}
	index := map[string]int{}
	for i, b := range inst.Bidders {
		index[b.ID] = i
	}
	c := coreCheck{W: coalitionValues(inst), all: 1<<len(inst.Bidders) - 1}
	for _, win := range res.Winners {
		i := index[win.ID]
		rv := 0.0
		for id, q := range inst.Bidders[i].Bundles[win.BundleIndex] {
			rv += q * reserve[id]
		}
		c.winners = append(c.winners, i)
		c.w = append(c.w, inst.Bidders[i].LimitOf(win.BundleIndex)-rv)
		c.pi = append(c.pi, win.Payment-rv)
	}
	return c
}

// vcg is winner k's VCG payment above the reserve value, by brute force.
func (c coreCheck) vcg(k int) float64 {
	return c.W[c.all&^(1<<c.winners[k])] - (c.W[c.all] - c.w[k])
}

// blocking returns the most any coalition blocks the payments by: the largest
// W(S) - sum over winners in S of w_j - sum over winners outside S of pi_j.
func (c coreCheck) blocking() float64 {
	worst := math.Inf(-1)
	for S, v := range c.W {
		for k, i := range c.winners {
			if S&(1<<i) != 0 {
				v -= c.w[k]
			} else {
				v -= c.pi[k]
			}
		}
		worst = max(worst, v)
	}
	return worst
}

// minimize solves min obj.d over d = pi - vcg with 0 <= d <= w - vcg, every
// coalition's core constraint, and sum d <= cap (when finite), by gonum's simplex:
// a solver the engine does not use. ok is false when gonum's simplex fails (it
// does on some degenerate LPs; that proves nothing either way).
func (c coreCheck) minimize(vcg, obj []float64, cap float64) (val float64, ok bool) {
	defer func() {
		if recover() != nil { // gonum panics on some singular bases
			ok = false
		}
	}()
	n := len(c.winners)
	var G [][]float64
	var h []float64
	for k := range n {
		row := make([]float64, n)
		row[k] = 1
		G, h = append(G, row), append(h, c.w[k]-vcg[k])
	}
	// One row per set of winners outside the coalition, with the largest
	// right-hand side among the coalitions that leave out exactly those (gonum's
	// simplex fails on duplicate and empty rows).
	tightest := map[int]float64{}
	for S, v := range c.W {
		out := 0
		for k, i := range c.winners {
			if S&(1<<i) != 0 {
				v -= c.w[k]
			} else {
				out |= 1 << k
				v -= vcg[k]
			}
		}
		if old, ok := tightest[out]; !ok || v > old {
			tightest[out] = v
		}
	}
	for out, v := range tightest {
		if out == 0 {
			continue // the grand coalition: 0 >= W(N) - sum w, always
		}
		row := make([]float64, n)
		for k := range row {
			if out&(1<<k) != 0 {
				row[k] = -1
			}
		}
		G, h = append(G, row), append(h, -v)
	}
	if !math.IsInf(cap, 1) {
		row := make([]float64, n)
		for k := range row {
			row[k] = 1
		}
		G, h = append(G, row), append(h, cap)
	}
	// Standard form: [G I] (d, s) = h, d, s >= 0.
	rows := len(G)
	A := mat.NewDense(rows, n+rows, nil)
	for i, row := range G {
		for k, v := range row {
			A.Set(i, k, v)
		}
		A.Set(i, n+i, 1)
	}
	cc := make([]float64, n+rows)
	copy(cc, obj)
	val, _, err := gonumlp.Simplex(cc, A, h, 1e-10, nil)
	return val, err == nil
}

// Core-selecting payments on small random markets (buyers, sellers and traders),
// against brute force over every coalition: each winner pays at most its limit and
// at least its VCG payment (which the result reports, equal to brute
// force's), no coalition blocks, the revenue is the least of any core point (an LP
// over every coalition's constraint, by gonum's simplex), and among the
// least-revenue core points the payments are the nearest to VCG's (the first-order
// condition of the least-distance problem: d* minimises d*.d over them).
func TestCorePaymentsAgainstBruteForce(t *testing.T) {
	runs, checked, blocked := 0, 0, 0
	rapid.Check(t, func(t *rapid.T) {
		runs++
		inst := genInstance(t)
		res, err := auction.Solve(inst, auction.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Converged {
			return
		}
		if err := auction.Check(inst, res); err != nil {
			t.Fatal(err)
		}
		if res.FinalRound.Payments != auction.PaymentsCore {
			t.Fatalf("payments %q on a small market proved optimal, want core", res.FinalRound.Payments)
		}
		c := newCoreCheck(inst, res)
		W := c.W[c.all]
		tol := 1e-6 * max(1, math.Abs(W))
		vcg := make([]float64, len(c.winners))
		for k, win := range res.Winners {
			vcg[k] = c.vcg(k)
			limit := inst.Bidders[c.winners[k]].LimitOf(win.BundleIndex)
			if !win.Core {
				t.Fatalf("winner %s does not pay a core payment", win.ID)
			}
			if win.Payment > limit {
				t.Fatalf("winner %s pays %v beyond its limit %v", win.ID, win.Payment, limit)
			}
			if math.Abs((win.VCG-(win.Payment-c.pi[k]))-vcg[k]) > tol {
				t.Fatalf("winner %s: VCG payment %v, brute force says %v", win.ID, win.VCG, vcg[k]+win.Payment-c.pi[k])
			}
			if c.pi[k] < vcg[k]-tol {
				t.Fatalf("winner %s pays %v below its VCG payment %v (above reserve)", win.ID, c.pi[k], vcg[k])
			}
		}
		if b := c.blocking(); b > tol {
			t.Fatalf("a coalition blocks the payments by %v", b)
		}
		if len(c.winners) == 0 {
			return
		}
		if c.vcgBlocked(tol) {
			blocked++
		}
		revenue, dist := 0.0, 0.0
		d := make([]float64, len(c.winners))
		ones := make([]float64, len(c.winners))
		for k := range d {
			d[k] = c.pi[k] - vcg[k]
			revenue += d[k]
			dist += d[k] * d[k]
			ones[k] = 1
		}
		least, ok := c.minimize(vcg, ones, math.Inf(1))
		if !ok {
			return
		}
		if revenue > least+tol {
			t.Fatalf("revenue above VCG %v, but the least of the core is %v", revenue, least)
		}
		// Among core points of revenue at most ours (the least, to within tol),
		// none is nearer VCG: d* minimises d*.d over them.
		got, ok := c.minimize(vcg, d, revenue)
		if !ok {
			return
		}
		checked++
		if got < dist-1e-7*max(1, math.Abs(W))*max(1, math.Sqrt(dist)) {
			t.Fatalf("payments not the nearest to VCG: d*.d reaches %v below |d*|^2 = %v (d* %v, revenue %v, least %v, W %v)", got, dist, d, revenue, least, W)
		}
	})
	// Enough markets must have been checked against the LPs, and enough must have
	// VCG payments outside the core, or the test proves little: of 3,000 markets
	// 1,957 were checked and 449 had VCG blocked. -short runs only 20, too few to
	// count on a blocked one (the textbook examples below always have one).
	t.Logf("%d of %d markets checked against the core LPs, %d with VCG blocked", checked, runs, blocked)
	if 3*checked < runs || (runs >= 100 && blocked < 3) {
		t.Fatalf("only %d of %d markets checked against the core LPs and %d with VCG blocked", checked, runs, blocked)
	}
}

// vcgBlocked reports whether some coalition blocks the VCG payments: the markets
// where the core asks more than VCG, which the test must reach.
func (c coreCheck) vcgBlocked(tol float64) bool {
	v := coreCheck{W: c.W, winners: c.winners, w: c.w, all: c.all, pi: make([]float64, len(c.pi))}
	for k := range v.pi {
		v.pi[k] = c.vcg(k)
	}
	return v.blocking() > tol
}

// Day and Cramton's (2012) example: bidders 1 and 2 want A and B for 28 and 20,
// bidder 3 wants both for 32, bidders 4 and 5 want A and B for 14 and 12. Winners
// 1 and 2; VCG payments 14 and 12 sum to 26, which bidder 3 blocks with 32; the
// minimum-revenue core is p1 + p2 = 32 with p1 >= 14, p2 >= 12, and its point
// nearest VCG splits the 6 equally: 17 and 15.
func TestCorePaymentsDayCramtonExample(t *testing.T) {
	res := solveJSON(t, `{"pools":[{"id":"A","supply":1,"reserve_price":0},{"id":"B","supply":1,"reserve_price":0}],
	"bidders":[{"id":"b1","limit":28,"bundles":[{"A":1}]},{"id":"b2","limit":20,"bundles":[{"B":1}]},
	{"id":"b3","limit":32,"bundles":[{"A":1,"B":1}]},{"id":"b4","limit":14,"bundles":[{"A":1}]},
	{"id":"b5","limit":12,"bundles":[{"B":1}]}]}`)
	wantPayments(t, res, map[string][2]float64{"b1": {17, 14}, "b2": {15, 12}})
	if res.FinalRound.Coalitions != 1 {
		t.Errorf("%d blocking coalitions generated, want 1 (bidder 3's)", res.FinalRound.Coalitions)
	}
}

// A seller: the operator has no unit of A; the seller offers one for at least 5,
// buyers want it for 10 and 8 (no reserve). The seller sells to b1 (welfare 5).
// VCG: b1 pays 8 (b2 would have bought), the seller receives 10 (without it
// nothing trades): a deficit of 2. The core adds that the operator is not out of
// pocket (b1's payment covers the seller's receipt) and, from b2 with the seller,
// b1 pays at least 8; the least revenue is 0, and the point nearest VCG shares
// the deficit: b1 pays 9, the seller receives 9.
func TestCorePaymentsWithASeller(t *testing.T) {
	res := solveJSON(t, `{"pools":[{"id":"A","supply":0,"reserve_price":0}],
	"bidders":[{"id":"s","limit":-5,"bundles":[{"A":-1}]},{"id":"b1","limit":10,"bundles":[{"A":1}]},
	{"id":"b2","limit":8,"bundles":[{"A":1}]}]}`)
	wantPayments(t, res, map[string][2]float64{"s": {-9, -10}, "b1": {9, 8}})
}

// The Day-Cramton market with a reserve price of 10 on A: everything above the
// reserve value shifts. Winners 1 and 2 (welfare 48 - 10 = 38); VCG, above the
// reserve value of A: bidder 1 max(32 - 10, 14 - 10 + 20) - 20 = 4, bidder 2
// max(22, 18 + 12) - 18 = 12, which bidder 3 blocks (22 > 16): the least revenue
// above reserve is 22, split to 4 + 3 and 12 + 3. Bidder 1 pays 10 + 7 = 17, bidder
// 2 pays 15.
func TestCorePaymentsWithAReserve(t *testing.T) {
	res := solveJSON(t, `{"pools":[{"id":"A","supply":1,"reserve_price":10},{"id":"B","supply":1,"reserve_price":0}],
	"bidders":[{"id":"b1","limit":28,"bundles":[{"A":1}]},{"id":"b2","limit":20,"bundles":[{"B":1}]},
	{"id":"b3","limit":32,"bundles":[{"A":1,"B":1}]},{"id":"b4","limit":14,"bundles":[{"A":1}]},
	{"id":"b5","limit":12,"bundles":[{"B":1}]}]}`)
	wantPayments(t, res, map[string][2]float64{"b1": {17, 14}, "b2": {15, 12}})
}

func solveJSON(t *testing.T, doc string) auction.Result {
	t.Helper()
	var inst auction.Instance
	if err := json.Unmarshal([]byte(doc), &inst); err != nil {
		t.Fatal(err)
	}
	res, err := auction.Solve(inst, auction.Options{})
	if err != nil || !res.Converged {
		t.Fatal(err, res.Converged)
	}
	if err := auction.Check(inst, res); err != nil {
		t.Fatal(err)
	}
	if res.FinalRound.Payments != auction.PaymentsCore {
		t.Fatalf("payments %q, want core", res.FinalRound.Payments)
	}
	return res
}

// wantPayments checks the winners are exactly those given, each with its
// {payment, VCG payment}, to 1e-9.
func wantPayments(t *testing.T, res auction.Result, want map[string][2]float64) {
	t.Helper()
	if len(res.Winners) != len(want) {
		t.Fatalf("winners %+v, want %v", res.Winners, want)
	}
	for _, w := range res.Winners {
		pv, ok := want[w.ID]
		if !ok || !w.Core || math.Abs(w.Payment-pv[0]) > 1e-9 || math.Abs(w.VCG-pv[1]) > 1e-9 {
			t.Errorf("winner %+v, want payment %v and VCG %v", w, pv[0], pv[1])
		}
	}
}
