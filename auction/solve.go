package auction

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options change what Solve reports.
type Options struct {
	// Trajectory asks for the prices of every round, for charts.
	Trajectory bool
	// MaxNodes, when positive, caps the final round's branch and bound nodes per
	// independent part, so that a search cut short stops at the same place on any
	// machine (tests and benchmarks use it; the time limit still applies).
	MaxNodes int
	// CappedPayments applies the final round's capped-price payment rule to every
	// winner instead of core-selecting payments (for comparisons: the misreport
	// benchmark measures both).
	CappedPayments bool
	// noNearest makes the core payments' nearest-VCG step (ldp) fail, as nnls
	// does on some degenerate systems, so that internal tests reach the fallback
	// to the LP's least-revenue point (corePoint.nearest) on small markets.
	noNearest bool
}

// item is one pool's quantity in a compiled bundle.
type item struct {
	pool int32
	q    float64
}

// bidder is a compiled bidder: bundles as sorted item slices, and its limits.
type bidder struct {
	bundles [][]item
	limits  []float64
	lim     []float64 // limits in micro-dollars, whole numbers: floorMicros(limits[k])
	choice  int       // the bundle it demands now, or -1
	moves   int32     // how many times its choice changed: buyer entries of older choices are stale
	sells   bool      // some bundle has a negative quantity: a price rise can make it more attractive
}

// clock is the compiled state of one run.
type clock struct {
	ids     []string // pool ids, sorted
	supply  []float64
	reserve []float64
	scale   []float64 // Q_r: operator supply plus the quantity offered for sale
	price   []float64 // dollars: micro / 1e6
	micro   []float64 // the price in micro-dollars, a whole number: the clock's own grid
	net     []float64 // winners' net demand per pool at the current choices
	bidders []bidder
	sellers [][]int32 // pool -> bidders with a bundle that sells in it (static)
	buyers  [][]buyer // pool -> bidders whose demanded bundle buys in it (lazily pruned)
	seen    []int     // per bidder: the round it was last queued for re-evaluation
}

// buyer is an entry of a pool's buyer list: bidder bi, whose choice after its
// moves-th change buys in the pool. It is current while the bidder has not moved
// since, and each choice is entered once per pool it buys in, so current entries
// are the pool's buyers, each once.
type buyer struct {
	bi, moves int32
}

// compile turns a validated instance into the clock's dense form. Pools are
// indexed in id order and bidders keep their order, so runs are deterministic.
func compile(inst Instance) *clock {
	pools := append([]Pool(nil), inst.Pools...)
	slices.SortFunc(pools, func(a, b Pool) int { return strings.Compare(a.ID, b.ID) })
	n := len(pools)
	c := &clock{ids: make([]string, n), supply: make([]float64, n), reserve: make([]float64, n),
		scale: make([]float64, n), price: make([]float64, n), micro: make([]float64, n), net: make([]float64, n),
		sellers: make([][]int32, n), buyers: make([][]buyer, n)}
	index := make(map[string]int32, n)
	for i, p := range pools {
		c.ids[i], c.supply[i], c.reserve[i] = p.ID, p.Supply, p.ReservePrice
		c.setMicros(i, ceilMicros(p.ReservePrice)) // never below the reserve
		c.scale[i] = p.Supply
		index[p.ID] = int32(i)
	}
	// One allocation each for every bundle, item and limit: memory linear in the
	// instance, and little for the collector to do.
	nb, ni := 0, 0
	for _, b := range inst.Bidders {
		nb += len(b.Bundles)
		for _, bundle := range b.Bundles {
			ni += len(bundle)
		}
	}
	allBundles, allItems, allLimits, allLim := make([][]item, nb), make([]item, 0, ni), make([]float64, nb), make([]float64, nb)
	c.bidders = make([]bidder, len(inst.Bidders))
	c.seen = make([]int, len(inst.Bidders))
	var offered []item // per bidder: the most any alternative sells, per pool
	for bi, b := range inst.Bidders {
		k0 := len(allBundles) - nb
		nb -= len(b.Bundles)
		end := k0 + len(b.Bundles)
		cb := bidder{bundles: allBundles[k0:end:end], limits: allLimits[k0:end:end], lim: allLim[k0:end:end], choice: -1}
		offered = offered[:0]
		for k, bundle := range b.Bundles {
			start := len(allItems)
			for id, q := range bundle {
				if q == 0 {
					continue
				}
				r := index[id]
				allItems = append(allItems, item{r, q})
				if q < 0 {
					cb.sells = true
					found := false
					for j := range offered {
						if offered[j].pool == r {
							offered[j].q, found = max(offered[j].q, -q), true
						}
					}
					if !found {
						offered = append(offered, item{r, -q})
					}
				}
			}
			items := allItems[start:len(allItems):len(allItems)]
			slices.SortFunc(items, func(a, b item) int { return int(a.pool - b.pool) })
			cb.bundles[k] = items
			cb.limits[k] = b.LimitOf(k)
			cb.lim[k] = floorMicros(cb.limits[k])
		}
		// Q_r counts, per bidder, the most any one of its alternatives offers in r.
		for _, o := range offered {
			c.scale[o.pool] += o.q
			c.sellers[o.pool] = append(c.sellers[o.pool], int32(bi))
		}
		c.bidders[bi] = cb
	}
	return c
}

// choose returns the bundle a proxy demands at the current prices: the largest
// surplus limit_k - q_k.p, ties to the lowest index, if that surplus is not
// negative; else -1. It works in micro-dollars: prices are whole micro-dollars,
// quantities whole units and limits are taken to the micro-dollar below
// (floorMicros), so every cost and surplus is a whole number, exact in a float64
// up to 2^53 micro-dollars ($9 billion): a bundle that costs exactly its limit is
// demanded, one a micro-dollar over is not.
func (c *clock) choose(b *bidder) int {
	best, bestSurplus := -1, math.Inf(-1)
	for k, items := range b.bundles {
		cost := 0.0
		for _, it := range items {
			cost += it.q * c.micro[it.pool]
		}
		if s := b.lim[k] - cost; s > bestSurplus {
			best, bestSurplus = k, s
		}
	}
	if bestSurplus < 0 {
		return -1
	}
	return best
}

// set moves bidder bi to bundle k, updating net demand.
func (c *clock) set(bi, k int) {
	b := &c.bidders[bi]
	if b.choice == k {
		return
	}
	if b.choice >= 0 {
		for _, it := range b.bundles[b.choice] {
			c.net[it.pool] -= it.q
		}
	}
	b.moves++
	if k >= 0 {
		for _, it := range b.bundles[k] {
			c.net[it.pool] += it.q
			if it.q > 0 {
				c.buyers[it.pool] = append(c.buyers[it.pool], buyer{int32(bi), b.moves})
			}
		}
	}
	b.choice = k
}

// Solve runs the ascending clock on a valid instance (see Validate): start at
// reserve prices; each round, every proxy demands its best bundle; stop when no
// pool's net demand exceeds its supply; otherwise raise each over-demanded pool's
// price by the relative step min(alpha z_r / Q_r, delta), at least min_step. A pool
// whose price is zero rises to min_step dollars first. Prices move on the
// micro-dollar grid: the clock starts at each reserve rounded up to the
// micro-dollar, and a raised price is rounded up to the micro-dollar (at least one
// micro-dollar more), so every price it publishes is an exact amount of money and
// proxies demand at exactly those prices (see choose). Only bidders with a bundle in
// a pool whose price moved are re-evaluated. When max_rounds pass without clearing,
// or a pool with excess demand is already at the ceiling of 2^50 micro-dollars per
// unit (maxMicros), the result has Converged false and the last round's prices and
// excess demand.
// When the clock converged and params.final_round is not off, the final round then
// replaces the clock's allocation with one of greater welfare where it finds one,
// and sets payments by the final round's rule (see final.go and
// docs/final-round.md); the prices stay the clock's. Solve returns EINVALID for an
// invalid instance.
func Solve(inst Instance, opt Options) (Result, error) {
	if err := inst.Validate(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	p := inst.Params.withDefaults()
	c := compile(inst)
	for bi := range c.bidders {
		c.set(bi, c.choose(&c.bidders[bi]))
	}
	var traj []Round
	if opt.Trajectory {
		traj = append(traj, Round{Round: 0, Prices: c.priceMap()})
	}
	rounds, converged := 0, false
	var raised, queue []int32
	var choices []int
	for {
		raised = raised[:0]
		for r := range c.net {
			if c.net[r]-c.supply[r] > 1e-9 {
				raised = append(raised, int32(r))
			}
		}
		if len(raised) == 0 {
			converged = true
			break
		}
		if rounds == p.MaxRounds {
			break
		}
		if c.atCeiling(raised) {
			break
		}
		rounds++
		for _, r := range raised {
			z := c.net[r] - c.supply[r]
			step := min(p.Alpha*z/max(c.scale[r], 1), p.Delta)
			step = max(step, p.MinStep)
			if c.micro[r] == 0 {
				c.setMicros(int(r), ceilMicros(p.MinStep))
			} else {
				c.setMicros(int(r), min(raiseMicros(c.micro[r], step), maxMicros))
			}
		}
		// Prices only rise, so a bundle's surplus falls when it buys in a raised pool and
		// grows only when it sells there. A bidder's choice can therefore change only if
		// the bundle it demands buys in a raised pool, or one of its bundles sells there.
		queue = queue[:0]
		for _, r := range raised {
			for _, e := range c.pruneBuyers(r) {
				if bi := e.bi; c.seen[bi] != rounds {
					c.seen[bi] = rounds
					queue = append(queue, bi)
				}
			}
			for _, bi := range c.sellers[r] {
				if c.seen[bi] != rounds {
					c.seen[bi] = rounds
					queue = append(queue, bi)
				}
			}
		}
		choices = c.chooseAll(queue, choices)
		for i, bi := range queue {
			c.set(int(bi), choices[i])
		}
		if opt.Trajectory {
			traj = append(traj, Round{Round: rounds, Prices: c.priceMap()})
		}
	}
	res := c.result(inst)
	if converged && (p.FinalRound == nil || !p.FinalRound.Off) {
		c.final(&res, inst, p.FinalRound, opt)
	}
	res.Converged, res.Rounds, res.Trajectory = converged, rounds, traj
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func (c *clock) priceMap() map[string]float64 {
	m := make(map[string]float64, len(c.ids))
	for r, id := range c.ids {
		m[id] = c.price[r]
	}
	return m
}

func (c *clock) result(inst Instance) Result {
	res := Result{Prices: c.priceMap(), Winners: []Winner{},
		OperatorSold: make(map[string]float64, len(c.ids)), ExcessDemand: make(map[string]float64, len(c.ids))}
	// Recompute net demand from scratch so float drift from incremental updates
	// never reaches the result.
	net := make([]float64, len(c.ids))
	for bi, b := range c.bidders {
		if b.choice < 0 {
			continue
		}
		pay := 0.0 // micro-dollars: whole units times whole micro-dollars, exact
		for _, it := range b.bundles[b.choice] {
			pay += it.q * c.micro[it.pool]
			net[it.pool] += it.q
		}
		pay /= microsPerDollar
		res.Winners = append(res.Winners, Winner{ID: inst.Bidders[bi].ID, BundleIndex: b.choice, Payment: pay, AtPrices: pay})
	}
	for r, id := range c.ids {
		res.OperatorSold[id] = min(max(net[r], 0), c.supply[r])
		res.ExcessDemand[id] = net[r] - c.supply[r]
	}
	return res
}

// pruneBuyers drops from pool r's buyer list the entries made stale by a later
// move of their bidder, and returns the list: each bidder whose demanded bundle
// buys in r, once.
func (c *clock) pruneBuyers(r int32) []buyer {
	kept := c.buyers[r][:0]
	for _, e := range c.buyers[r] {
		if c.bidders[e.bi].moves == e.moves {
			kept = append(kept, e)
		}
	}
	c.buyers[r] = kept
	return kept
}

// parallelMin is the queue length from which proxies are re-evaluated on several
// cores. Choosing only reads prices, and choices are applied in queue order
// afterwards, so the result does not depend on the number of cores.
const parallelMin = 4096

// chooseAll computes every queued bidder's choice at the current prices.
func (c *clock) chooseAll(queue []int32, out []int) []int {
	out = slices.Grow(out[:0], len(queue))[:len(queue)]
	workers := min(runtime.GOMAXPROCS(0), len(queue)/parallelMin+1)
	if workers <= 1 {
		for i, bi := range queue {
			out[i] = c.choose(&c.bidders[bi])
		}
		return out
	}
	var wg sync.WaitGroup
	chunk := (len(queue) + workers - 1) / workers
	for lo := 0; lo < len(queue); lo += chunk {
		hi := min(lo+chunk, len(queue))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				out[i] = c.choose(&c.bidders[queue[i]])
			}
		}()
	}
	wg.Wait()
	return out
}

// microsPerDollar is the clock's grid: prices are whole micro-dollars per unit, the
// ledger's unit of money.
const microsPerDollar = 1e6

// setMicros sets pool r's price to m micro-dollars (a whole number).
func (c *clock) setMicros(r int, m float64) {
	c.micro[r], c.price[r] = m, m/microsPerDollar
}

// ceilMicros is d dollars rounded up to a whole number of micro-dollars. A float
// that is the nearest to a whole number of micro-dollars (as every price and limit
// the exchange gives is) stays that number.
func ceilMicros(d float64) float64 {
	m := math.Round(d * microsPerDollar)
	if m/microsPerDollar < d {
		m++
	}
	return m
}

// floorMicros is d dollars rounded down to a whole number of micro-dollars: a
// limit of $900.0000004 lets a bidder pay $900.000000, never more; a seller's
// limit of -$250.0000004 (receive at least that) asks for $250.000001.
func floorMicros(d float64) float64 {
	m := math.Round(d * microsPerDollar)
	if m/microsPerDollar > d {
		m--
	}
	return m
}

// maxMicros is the clock's ceiling: 2^50 micro-dollars (about $1.1 billion per
// unit). Below it a published price in dollars (m/1e6, a float) still turns back
// into exactly its whole micro-dollars (the division and the multiplication back
// err by at most m*2^-52, under a quarter of a micro-dollar); at 2^52 and above
// they no longer do. A market whose demand never settles (a trader that swaps one
// pool for another at any prices, say) would otherwise raise prices without bound,
// off the micro-dollar grid and at last to +Inf, which no page, ledger or JSON
// encoder can take.
const maxMicros = 1 << 50

// atCeiling says whether a pool about to be raised is already at the ceiling: the
// clock then stops where it is, not converged.
func (c *clock) atCeiling(raised []int32) bool {
	for _, r := range raised {
		if c.micro[r] >= maxMicros {
			return true
		}
	}
	return false
}

// raiseMicros is a price of m micro-dollars raised by the relative step, rounded up
// to the micro-dollar and at least one micro-dollar more. The caller keeps it at
// or below maxMicros, where every whole number is a float.
func raiseMicros(m, step float64) float64 {
	return max(math.Ceil(m*(1+step)), m+1)
}
