package auction

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"
)

// FinalParams set the final round: its time limit and whether it runs.
type FinalParams struct {
	Seconds float64 `json:"seconds,omitempty"`
	Off     bool    `json:"off,omitempty"`
}

// DefaultFinalSeconds is the final round's time limit when params.final_round
// does not set one: long enough to prove optimality on the CATS benchmarks and to
// close most of the gap on a 10,000-order market, short against a bid window.
const DefaultFinalSeconds = 10.0

// MaxFinalSeconds is the longest time limit an instance may set.
const MaxFinalSeconds = 3600.0

// CheckFinalSeconds is the one rule for a final round's time limit, wherever it is
// given (an instance's params, serve's and auction tick's --final-round-seconds, the
// operator's form): from 0 (the default, DefaultFinalSeconds) to MaxFinalSeconds. It
// returns EINVALID saying so, without naming the field: callers prefix their own.
func CheckFinalSeconds(seconds float64) error {
	if !finite(seconds) || seconds < 0 || seconds > MaxFinalSeconds {
		return invalid("must be from 0 (the default, %g) to %g seconds, got %v", DefaultFinalSeconds, MaxFinalSeconds, seconds)
	}
	return nil
}

// FinalRoundParams returns params.final_round for a time limit in seconds as
// operators give it: 0 turns the final round off.
func FinalRoundParams(seconds float64) *FinalParams {
	if seconds == 0 {
		return &FinalParams{Off: true}
	}
	return &FinalParams{Seconds: seconds}
}

// seconds returns the time limit, the default when unset.
func (f *FinalParams) seconds() float64 {
	if f == nil || f.Seconds == 0 {
		return DefaultFinalSeconds
	}
	return f.Seconds
}

// FinalRound is what the final round did: the welfare of its allocation and of the
// clock's, the best proven upper bound, whether the allocation is proved optimal,
// and the time it took.
type FinalRound struct {
	Welfare      float64 `json:"welfare"`
	ClockWelfare float64 `json:"clock_welfare"`
	Bound        float64 `json:"bound"`
	Optimal      bool    `json:"optimal"`
	Seconds      float64 `json:"seconds"`
	// Payments is the rule the winners' payments follow: PaymentsCore,
	// PaymentsCappedPrices or PaymentsMixed (absent in results from before it).
	Payments string `json:"payments,omitempty"`
	// Parts is how many independent parts the market split into, CoreParts how
	// many of them pay core-selecting payments, Coalitions how many blocking
	// coalitions constraint generation added, PaymentSeconds the time payments took.
	Parts          int     `json:"parts,omitempty"`
	CoreParts      int     `json:"core_parts,omitempty"`
	Coalitions     int     `json:"coalitions,omitempty"`
	PaymentSeconds float64 `json:"payment_seconds,omitempty"`
	// LeastRevenueParts is how many of the CoreParts pay the least-revenue core
	// point the LP found instead of the one nearest VCG, because the nearest-VCG
	// step (ldp) failed on a degenerate system: their payments are in the core
	// and of least revenue, but not proved nearest VCG.
	LeastRevenueParts int `json:"least_revenue_parts,omitempty"`
	// Prices are linear per-pool prices that support the final allocation as well
	// as possible (supportingPrices: minimum total violation), present only when
	// the final round changed the clock's allocation and the LP was small enough;
	// Unsupported lists the orders they fail to support (empty: they support it
	// exactly). The published prices stay the clock's.
	Prices      map[string]float64 `json:"prices,omitempty"`
	Unsupported []string           `json:"unsupported,omitempty"`
}

// Gap is the share of the bound the allocation may still be short of it: 0 when
// proved optimal.
func (f FinalRound) Gap() float64 {
	if f.Optimal || f.Bound <= 0 {
		return 0
	}
	return max(0, (f.Bound-f.Welfare)/f.Bound)
}

// allocation is the final round's outcome over the whole instance.
type allocation struct {
	choice  []int // per bidder: bundle index, or -1
	welfare float64
	bound   float64
	optimal bool
	nodes   int
	parts   []partResult
}

// partResult is one independent part's outcome: its local choice (a column per
// local bidder, or -1), welfare, and whether it is proved optimal.
type partResult struct {
	p       *problem
	choice  []int32
	value   float64
	optimal bool
}

// decompose splits the instance into independent problems: pools joined by any
// bidder's bundles (all its alternatives together) form one part. Bundles that
// cannot add welfare (they only buy and are worth less than their reserve value)
// or can never fit are left out, except the clock's own choices.
func (c *clock) decompose() []*problem {
	sets := newPoolSets(len(c.ids))
	root := c.joinPools(sets)
	parts := c.partsOf(sets, root)
	local := make([]int32, len(c.ids)) // pool -> local index in its part
	for r := range local {
		local[r] = -1
	}
	for _, p := range parts {
		c.localize(p, local)
	}
	return parts
}

// poolSets is a union-find forest over pools: each pool leads, through its
// parent, to the root pool of its set.
type poolSets []int32

// newPoolSets returns n pools, each a set of its own.
func newPoolSets(n int) poolSets {
	parent := make(poolSets, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	return parent
}

// find returns the root of x's set, halving the path to it on the way.
func (parent poolSets) find(x int32) int32 {
	for parent[x] != x {
		parent[x] = parent[parent[x]]
		x = parent[x]
	}
	return x
}

// keeps reports whether bidder b's bundle k goes into the final round: the
// clock's choice always does; another bundle when it sells, or when it only buys,
// is worth more than its reserve value, and asks for no pool more than the pool
// can ever hold.
func (c *clock) keeps(b *bidder, k int) bool {
	if k == b.choice {
		return true
	}
	w, sells := b.limits[k], false
	for _, it := range b.bundles[k] {
		w -= it.q * c.reserve[it.pool]
		if it.q < 0 {
			sells = true
		} else if it.q > c.scale[it.pool]+feasibleTol {
			return false
		}
	}
	return w > 0 || sells
}

// joinPools joins in sets the pools of each bidder's kept bundles, and returns
// per bidder a pool of its set, or -1 when it keeps no bundle.
func (c *clock) joinPools(sets poolSets) []int32 {
	root := make([]int32, len(c.bidders))
	for bi := range c.bidders {
		b := &c.bidders[bi]
		root[bi] = -1
		for k, items := range b.bundles {
			if !c.keeps(b, k) {
				continue
			}
			for _, it := range items {
				if root[bi] < 0 {
					root[bi] = sets.find(it.pool)
				} else if a, z := sets.find(root[bi]), sets.find(it.pool); a != z {
					sets[z] = a
				}
			}
		}
	}
	return root
}

// partsOf returns a problem per set of pools, in the order of each set's first
// bidder, holding the bidders whose kept bundles use the set (root: a pool of
// each bidder's set, or -1). Its columns' items still use the instance's pools.
func (c *clock) partsOf(sets poolSets, root []int32) []*problem {
	byRoot := map[int32]*problem{}
	var parts []*problem
	for bi := range c.bidders {
		if root[bi] < 0 {
			continue
		}
		r := sets.find(root[bi])
		p := byRoot[r]
		if p == nil {
			p = &problem{}
			byRoot[r] = p
			parts = append(parts, p)
		}
		c.addBidder(p, bi)
	}
	return parts
}

// addBidder adds bidder bi to p as its next local bidder: a column per kept
// bundle, worth the bundle's limit less its reserve value, and the clock's
// choice among them.
func (c *clock) addBidder(p *problem, bi int) {
	b := &c.bidders[bi]
	lb := int32(len(p.owner))
	p.owner = append(p.owner, int32(bi))
	p.first = append(p.first, int32(len(p.cols)))
	p.clock = append(p.clock, -1)
	for k, items := range b.bundles {
		if !c.keeps(b, k) {
			continue
		}
		col := column{bidder: lb, bundle: int32(k), w: b.limits[k]}
		for _, it := range items {
			col.w -= it.q * c.reserve[it.pool]
			if it.q > 0 {
				col.size += it.q / max(c.scale[it.pool], 1)
			}
		}
		col.items = items // pools renumbered by localize
		if k == b.choice {
			p.clock[lb] = int32(len(p.cols))
		}
		p.cols = append(p.cols, col)
	}
}

// localize finishes a part: it closes p.first, renumbers the pools its columns
// use to local ones (in the order the columns first use them, each column's items
// sorted by them), and sets the local pools' supply and lambda. local maps pools
// to local indices; entries a previous part left are told apart by checking them
// against this part's pools.
func (c *clock) localize(p *problem, local []int32) {
	p.first = append(p.first, int32(len(p.cols)))
	var pools []int32
	for j := range p.cols {
		items := make([]item, len(p.cols[j].items))
		for i, it := range p.cols[j].items {
			if local[it.pool] < 0 || int(local[it.pool]) >= len(pools) || pools[local[it.pool]] != it.pool {
				local[it.pool] = int32(len(pools))
				pools = append(pools, it.pool)
			}
			items[i] = item{local[it.pool], it.q}
		}
		slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.pool, b.pool) })
		p.cols[j].items = items
	}
	p.supply = make([]float64, len(pools))
	p.lambda = make([]float64, len(pools))
	for i, g := range pools {
		p.supply[i] = c.supply[g]
		p.lambda[i] = max(c.price[g]-c.reserve[g], 0)
	}
}

// finalRound chooses the allocation of greatest welfare among all submitted
// bundles, starting from the clock's (the bidders' current choices), within the
// time limit; maxNodes > 0 also caps branch and bound's nodes per part, which
// makes the search reproducible whatever the machine's speed.
func (c *clock) finalRound(limit time.Duration, maxNodes int) allocation {
	start := time.Now()
	deadline := start.Add(limit)
	parts := c.decompose()
	sort.SliceStable(parts, func(i, j int) bool { return len(parts[i].cols) < len(parts[j].cols) })
	a := allocation{choice: make([]int, len(c.bidders)), optimal: true}
	for bi := range a.choice {
		a.choice[bi] = -1
	}
	for i, p := range parts {
		// Each part gets an equal share of the time left; parts that finish early
		// leave theirs to the larger ones after them.
		share := time.Until(deadline) / time.Duration(len(parts)-i)
		s := p.solve(time.Now().Add(max(share, 0)), maxNodes)
		a.parts = append(a.parts, partResult{p: p, choice: s.choice, value: s.value, optimal: s.optimal})
		a.nodes += s.nodes
		a.welfare += s.value
		a.bound += max(s.bound, s.value)
		a.optimal = a.optimal && s.optimal
		for lb, j := range s.choice {
			if j >= 0 {
				a.choice[p.owner[lb]] = int(p.cols[j].bundle)
			}
		}
	}
	if a.optimal {
		a.bound = a.welfare
	}
	return a
}

// solve runs winner determination on one part until end (or maxNodes branch and
// bound nodes, when positive): the incumbents, the Lagrangian bound, and branch and
// bound where the LP fits, else the Lagrangian bound for as long as time allows.
func (p *problem) solve(end time.Time, maxNodes int) solution {
	s := p.heuristics(end)
	p.prove(&s, end, maxNodes)
	return s
}

// prove continues solve from the incumbents s: the Lagrangian bound, then branch
// and bound or more Lagrangian steps, and sets s.optimal.
func (p *problem) prove(s *solution, end time.Time, maxNodes int) {
	p.lagrangian(s, 200, end)
	if p.fitsLP() && s.bound > s.value+pruneTol(s.value) {
		p.branchAndBound(s, end, maxNodes)
	} else if s.bound <= s.value+pruneTol(s.value) {
		s.bound, s.optimal = s.value, true
	} else {
		p.lagrangian(s, math.MaxInt32, end)
		s.optimal = s.bound <= s.value+pruneTol(s.value)
	}
	if s.optimal {
		s.bound = s.value
	}
}

// changed reports whether two allocations differ.
func changed(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return true
		}
	}
	return false
}

// welfareOf is the welfare of a choice per bidder: limits less reserve value.
func (c *clock) welfareOf(choice []int) float64 {
	w := 0.0
	for bi, k := range choice {
		if k >= 0 {
			b := &c.bidders[bi]
			w += b.limits[k]
			for _, it := range b.bundles[k] {
				w -= it.q * c.reserve[it.pool]
			}
		}
	}
	return w
}

// finalPayments is the payment rule. Each winner pays its bundle at the published
// prices (atPrices), capped at its limit; when the caps leave the operator short of
// reserveValue (the reserve value of what it sells, net of what it buys), the
// shortfall is spread as one equal amount t over the winners still below their
// limits, none going past its limit: payment_i = min(limit_i, atPrices_i + t) with
// the least t >= 0 that covers the reserve value. This is the point nearest the
// published prices (least squares) among payments within the limits that cover the
// operator's reserve. It exists whenever the limits cover the reserve value, which
// the final round guarantees (its welfare is never negative).
func finalPayments(atPrices, limits []float64, reserveValue float64) []float64 {
	pay := make([]float64, len(atPrices))
	total := 0.0
	for i := range pay {
		pay[i] = min(limits[i], atPrices[i])
		total += pay[i]
	}
	if total >= reserveValue {
		return pay
	}
	// Water-filling: with t, winner i pays a_i + t until t reaches its room l_i - a_i.
	type room struct {
		i int
		d float64
	}
	var rooms []room
	for i := range pay {
		if d := limits[i] - atPrices[i]; d > 0 {
			rooms = append(rooms, room{i, d})
		}
	}
	slices.SortStableFunc(rooms, func(a, b room) int { return cmp.Compare(a.d, b.d) })
	// f(t) = capped + sum over winners with room above t of (a_i + t).
	capped, open := total, 0.0
	for _, r := range rooms {
		capped -= atPrices[r.i] // their term a_i + t replaces a_i
		open += atPrices[r.i]
	}
	t, k := 0.0, len(rooms)
	for _, r := range rooms {
		// On [prev, r.d], f(t) = capped + open + k t.
		if need := (reserveValue - capped - open) / float64(k); need <= r.d {
			t = max(need, 0)
			break
		}
		capped += limits[r.i]
		open -= atPrices[r.i]
		k--
		t = r.d
	}
	for _, r := range rooms {
		pay[r.i] = min(limits[r.i], atPrices[r.i]+t)
	}
	return pay
}

// Payment rules, as FinalRound.Payments reports them.
const (
	// PaymentsCore: every winner pays a core-selecting payment (corePayments).
	PaymentsCore = "core"
	// PaymentsCappedPrices: every winner pays its bundle at the published prices
	// capped at its limit, with any reserve shortfall spread (finalPayments).
	PaymentsCappedPrices = "capped_prices"
	// PaymentsMixed: winners of parts proved optimal pay core payments, the others
	// capped prices.
	PaymentsMixed = "mixed"
)

// final runs the final round on a converged clock and rewrites res's winners,
// payments, operator sales and excess demand for its allocation. The published
// prices stay the clock's. An allocation worth less than the clock's is never
// taken (the search starts from it, so this only guards against float noise).
//
// Payments: each part proved optimal pays core-selecting payments (core.go),
// computed within a budget of the round's own time limit plus what the
// allocation's search left of it, so that the round ends within twice its limit
// (the supporting prices, support.go, get what the payments leave); a part not
// proved optimal, or whose payments could not be proved within the budget,
// pays by the capped-price rule (finalPayments) over all such parts' winners.
// A core part whose nearest-VCG step failed pays the LP's least-revenue core
// point, is counted in FinalRound.LeastRevenueParts, and its winners are marked
// (Winner.LeastRevenue).
// opt.CappedPayments applies the capped-price rule everywhere.
func (c *clock) final(res *Result, inst Instance, fp *FinalParams, opt Options) {
	start := time.Now()
	limit := time.Duration(fp.seconds() * float64(time.Second))
	clockChoice := make([]int, len(c.bidders))
	for bi := range c.bidders {
		clockChoice[bi] = c.bidders[bi].choice
	}
	clockWelfare := c.welfareOf(clockChoice)
	a := c.finalRound(limit, opt.MaxNodes)
	welfare := c.welfareOf(a.choice)
	if welfare < clockWelfare {
		a.choice, welfare = clockChoice, clockWelfare
		a.parts = nil // the parts' allocations are not the one taken
	}
	searched := time.Since(start)
	paid := make([]bool, len(c.bidders))
	corePay := make([]float64, len(c.bidders))
	vcgPay := make([]float64, len(c.bidders))
	leastRevenue := make([]bool, len(c.bidders)) // the winner's part paid the least-revenue point
	payStart := time.Now()
	// The payments' budget: the round's limit, and what the allocation's search left
	// of its own. The round as a whole still ends within twice the limit; a search
	// that proved its allocation early leaves the payments the time it did not use.
	deadline := payStart.Add(limit)
	if bound := start.Add(2 * limit); bound.After(deadline) {
		deadline = bound
	}
	coreParts, coalitions, leastRevenueParts := 0, 0, 0
	// Core payments per part proved optimal, smallest first, each with an equal
	// share of the budget left.
	if !opt.CappedPayments {
		for i, pr := range a.parts {
			if !pr.optimal {
				continue
			}
			share := time.Until(deadline) / time.Duration(len(a.parts)-i)
			cr, ok := pr.p.corePayments(pr.choice, pr.value, time.Now().Add(max(share, 0)), opt)
			if !ok {
				continue
			}
			coreParts++
			coalitions += cr.coalitions
			if cr.leastRevenue {
				leastRevenueParts++
			}
			for lb, j := range pr.choice {
				if j < 0 {
					continue
				}
				bi := pr.p.owner[lb]
				lim := c.bidders[bi].limits[pr.p.cols[j].bundle]
				w := pr.p.cols[j].w
				// limit less the surplus left: never above the limit.
				corePay[bi] = lim - max(w-cr.pi[lb], 0)
				vcgPay[bi] = lim - max(w-cr.vcg[lb], 0)
				paid[bi], leastRevenue[bi] = true, cr.leastRevenue
			}
		}
	}
	// Linear prices supporting the final allocation, where it differs from the
	// clock's (the clock's prices support the clock's own), with what is left of
	// the budget: the payments, which are charged, come first.
	var support map[string]float64
	var unsupported []string
	if changed(clockChoice, a.choice) {
		if price, bad, ok := c.supportingPrices(a.choice, deadline); ok {
			support = make(map[string]float64, len(price))
			for r, id := range c.ids {
				support[id] = price[r]
			}
			unsupported = make([]string, 0, len(bad))
			for _, bi := range bad {
				unsupported = append(unsupported, inst.Bidders[bi].ID)
			}
		}
	}
	var at, limits []float64
	var winners, rest []int
	reserveValue := 0.0
	net := make([]float64, len(c.ids))
	for bi, k := range a.choice {
		if k < 0 {
			continue
		}
		b := &c.bidders[bi]
		cost, rv := 0.0, 0.0
		for _, it := range b.bundles[k] {
			cost += it.q * c.price[it.pool]
			rv += it.q * c.reserve[it.pool]
			net[it.pool] += it.q
		}
		winners = append(winners, bi)
		if !paid[bi] {
			rest = append(rest, len(at))
			at = append(at, cost)
			limits = append(limits, b.limits[k])
			reserveValue += rv
		} else {
			at = append(at, cost)
			limits = append(limits, b.limits[k])
		}
	}
	restAt, restLimits := make([]float64, len(rest)), make([]float64, len(rest))
	for i, w := range rest {
		restAt[i], restLimits[i] = at[w], limits[w]
	}
	restPay := finalPayments(restAt, restLimits, reserveValue)
	pay := make([]float64, len(winners))
	for i, bi := range winners {
		pay[i] = corePay[bi]
	}
	for i, w := range rest {
		pay[w] = restPay[i]
	}
	res.ClockWinners = res.Winners
	res.Winners = make([]Winner, len(winners))
	for i, bi := range winners {
		res.Winners[i] = Winner{ID: inst.Bidders[bi].ID, BundleIndex: a.choice[bi], Payment: pay[i], AtPrices: at[i]}
		if paid[bi] {
			res.Winners[i].Core, res.Winners[i].VCG, res.Winners[i].LeastRevenue = true, vcgPay[bi], leastRevenue[bi]
		}
	}
	for r, id := range c.ids {
		res.OperatorSold[id] = min(max(net[r], 0), c.supply[r])
		res.ExcessDemand[id] = net[r] - c.supply[r]
	}
	rule := PaymentsMixed
	switch {
	case len(rest) == 0:
		rule = PaymentsCore
	case len(rest) == len(winners):
		rule = PaymentsCappedPrices
	}
	res.FinalRound = &FinalRound{Welfare: welfare, ClockWelfare: clockWelfare, Bound: max(a.bound, welfare),
		Optimal: a.optimal, Seconds: searched.Seconds(), Payments: rule, CoreParts: coreParts,
		Parts: len(a.parts), Coalitions: coalitions, LeastRevenueParts: leastRevenueParts,
		PaymentSeconds: time.Since(payStart).Seconds(), Prices: support, Unsupported: unsupported}
	if a.optimal {
		res.FinalRound.Bound = welfare
	}
}
