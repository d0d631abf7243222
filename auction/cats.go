package auction

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// CATSDistributions are the distributions GenerateCATS knows, after the
// Combinatorial Auction Test Suite (Leyton-Brown, Pearson and Shoham, EC 2000).
var CATSDistributions = []string{"arbitrary", "matching", "paths", "regions", "scheduling"}

// GenerateCATS writes a seeded CATS-like instance of about bids bundles over goods
// single-unit pools, in the shape of the instances in testdata/cats: each good is a
// pool of supply 1 with a reserve price of 5% of the average value per good, and a
// bidder's alternatives are XOR bundles with a limit each. The generators follow
// the suite's descriptions in simplified form (they are not CATS v2.1's code):
//
//   - regions: goods on a grid; a bundle grows from a good through its
//     neighbours; values are common values plus private ones, superadditive;
//   - arbitrary: the same over a complete graph with random affinities, so
//     bundles have no spatial structure;
//   - paths: goods are the edges of a random near-planar graph of cities; a
//     bidder wants to connect two cities, its bundles are alternative routes;
//   - matching: goods are time slots at four airports; a bundle is a take-off
//     slot and the landing slot a flight time later, at different departure times;
//   - scheduling: goods are the time slots of one machine; a bundle is a run of
//     slots long enough for the bidder's job, worth more before its deadline.
//
// It returns EINVALID for an unknown distribution or sizes below 4 goods or 1 bid.
func GenerateCATS(dist string, goods, bids int, seed uint64) (Instance, error) {
	if goods < 4 || bids < 1 {
		return Instance{}, invalid("cats: need at least 4 goods and 1 bid, got %d and %d", goods, bids)
	}
	g := catsGen{rng: rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d)), goods: goods}
	switch dist {
	case "regions":
		g.regions(bids, false)
	case "arbitrary":
		g.regions(bids, true)
	case "paths":
		g.paths(bids)
	case "matching":
		g.matching(bids)
	case "scheduling":
		g.scheduling(bids)
	default:
		return Instance{}, invalid("cats: unknown distribution %q (want one of %v)", dist, CATSDistributions)
	}
	return g.instance(), nil
}

type catsBid struct {
	goods []int
	value float64
}

type catsGen struct {
	rng     *rand.Rand
	goods   int
	bidders [][]catsBid
	count   int
}

func (g *catsGen) add(bids []catsBid) {
	var keep []catsBid
	for _, b := range bids {
		slices.Sort(b.goods)
		b.goods = slices.Compact(b.goods)
		b.value = math.Round(b.value)
		dup := false
		for _, k := range keep {
			dup = dup || slices.Equal(k.goods, b.goods)
		}
		if len(b.goods) > 0 && b.value > 0 && !dup {
			keep = append(keep, b)
		}
	}
	if len(keep) > 0 {
		g.bidders = append(g.bidders, keep)
		g.count += len(keep)
	}
}

func (g *catsGen) instance() Instance {
	total, units := 0.0, 0
	for _, bs := range g.bidders {
		for _, b := range bs {
			total += b.value
			units += len(b.goods)
		}
	}
	reserve := math.Round(0.05*total/float64(max(units, 1))*1e4) / 1e4
	inst := Instance{Params: DefaultParams}
	for i := range g.goods {
		inst.Pools = append(inst.Pools, Pool{ID: fmt.Sprintf("g%d", i), Supply: 1, ReservePrice: reserve})
	}
	for i, bs := range g.bidders {
		b := Bidder{ID: fmt.Sprintf("b%d", i)}
		for _, bid := range bs {
			bundle := Bundle{}
			for _, good := range bid.goods {
				bundle[fmt.Sprintf("g%d", good)] = 1
			}
			b.Bundles = append(b.Bundles, bundle)
			b.Limits = append(b.Limits, bid.value)
		}
		inst.Bidders = append(inst.Bidders, b)
	}
	return inst
}

// regions: goods on a grid (or, arbitrary, a complete graph with random
// affinities); each bidder's first bundle grows from a random good towards
// neighbours it values, and its alternatives grow from other goods of the first,
// to the same size, valued with the bidder's private values.
func (g *catsGen) regions(bids int, arbitrary bool) {
	r := g.newRegionsGen(arbitrary)
	for g.count < bids {
		g.add(r.bidder())
	}
}

// regionsGen is what regions draws bidders from: the goods' layout and their
// common values.
type regionsGen struct {
	*catsGen
	arbitrary bool
	side      int         // regions: the grid's side
	common    []float64   // per good: its common value
	affinity  [][]float64 // arbitrary: pairwise affinity
}

// newRegionsGen draws the goods' common values and (arbitrary) their pairwise
// affinities.
func (g *catsGen) newRegionsGen(arbitrary bool) *regionsGen {
	r := &regionsGen{catsGen: g, arbitrary: arbitrary, side: int(math.Ceil(math.Sqrt(float64(g.goods))))}
	r.common = make([]float64, g.goods)
	for i := range r.common {
		r.common[i] = 1 + 99*g.rng.Float64()
	}
	r.affinity = make([][]float64, g.goods)
	if arbitrary {
		for i := range r.affinity {
			r.affinity[i] = make([]float64, g.goods)
			for j := range r.affinity[i] {
				r.affinity[i][j] = g.rng.Float64()
			}
		}
	}
	return r
}

// bidder draws one bidder's bundles: its private values (within 20% of the
// common ones), a size (growing by one with probability 0.8, up to a quarter of
// the goods), a first bundle grown from a random good, and up to five
// alternatives grown from the first's other goods, kept when worth at least 80%
// of the first.
func (r *regionsGen) bidder() []catsBid {
	private := make([]float64, r.goods)
	for i := range private {
		private[i] = r.common[i] * (r.rng.Float64()*0.4 - 0.2)
	}
	size := 1
	for size < r.goods/4 && r.rng.Float64() < 0.8 {
		size++
	}
	first := r.grow(r.rng.IntN(r.goods), size, private)
	alts := []catsBid{first}
	for _, start := range first.goods[1:] {
		if len(alts) >= 1+r.rng.IntN(6) {
			break
		}
		if b := r.grow(start, len(first.goods), private); b.value >= 0.8*first.value {
			alts = append(alts, b)
		}
	}
	return alts
}

// neighbours returns the goods next to x on the grid (none for arbitrary).
func (r *regionsGen) neighbours(x int) []int {
	if r.arbitrary {
		return nil
	}
	side := r.side
	row, col := x/side, x%side
	var out []int
	for _, d := range [][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
		if rr, cc := row+d[0], col+d[1]; rr >= 0 && rr < side && cc >= 0 && cc < side && rr*side+cc < r.goods {
			out = append(out, rr*side+cc)
		}
	}
	return out
}

// grow grows a bundle of up to size goods from start, adding one candidate at a
// time, drawn with probability in proportion to its weight; the bundle is worth
// its goods' common and private values, superadditively.
func (r *regionsGen) grow(start, size int, private []float64) catsBid {
	in := map[int]bool{start: true}
	set := []int{start}
	for len(set) < size {
		weight := r.candidates(set, in, private)
		if len(weight) == 0 {
			break
		}
		pick := r.draw(weight)
		in[pick] = true
		set = append(set, pick)
	}
	v := 0.0
	for _, x := range set {
		v += r.common[x] + private[x]
	}
	return catsBid{goods: set, value: v * math.Pow(float64(len(set)), 0.2)} // superadditive
}

// candidates returns the goods a bundle (set, and in its goods) may grow by, with
// their weights.
func (r *regionsGen) candidates(set []int, in map[int]bool, private []float64) map[int]float64 {
	// Candidates: neighbours of the set (regions) or every other good
	// weighted by its affinity to the set (arbitrary), by value.
	weight := map[int]float64{}
	for _, x := range set {
		if r.arbitrary {
			for y := range r.goods {
				if !in[y] {
					weight[y] += r.affinity[x][y] * (r.common[y] + private[y])
				}
			}
		} else {
			for _, y := range r.neighbours(x) {
				if !in[y] {
					weight[y] = r.common[y] + private[y]
				}
			}
		}
	}
	return weight
}

// draw picks one of the candidates (weight not empty) with probability in
// proportion to its weight (at least 0.01), going through them in order. The weights
// are summed in that order too: a float sum in the map's random order could differ in
// its last bits from run to run, and so, rarely, the pick.
func (r *regionsGen) draw(weight map[int]float64) int {
	keys := make([]int, 0, len(weight))
	for y := range weight {
		keys = append(keys, y)
	}
	slices.Sort(keys)
	sum := 0.0
	for _, y := range keys {
		sum += max(weight[y], 0.01)
	}
	pick, u := keys[len(keys)-1], r.rng.Float64()*sum
	for _, y := range keys {
		if u -= max(weight[y], 0.01); u <= 0 {
			pick = y
			break
		}
	}
	return pick
}

// paths: cities in the unit square; goods are edges, each city joined to its
// nearest others until there are as many edges as goods. A bidder connects two
// cities; its bundles are routes found with noisy edge lengths, worth a budget
// proportional to the cities' distance less the route's length.
func (g *catsGen) paths(bids int) {
	n := max(4, int(math.Ceil(float64(g.goods)/2.2)))
	xs, ys := make([]float64, n), make([]float64, n)
	for i := range n {
		xs[i], ys[i] = g.rng.Float64(), g.rng.Float64()
	}
	dist := func(a, b int) float64 { return math.Hypot(xs[a]-xs[b], ys[a]-ys[b]) }
	type edge struct{ a, b int }
	var pairs []edge
	for a := range n {
		for b := a + 1; b < n; b++ {
			pairs = append(pairs, edge{a, b})
		}
	}
	slices.SortStableFunc(pairs, func(p, q edge) int { return cmpFloat(dist(p.a, p.b), dist(q.a, q.b)) })
	edges := pairs[:min(g.goods, len(pairs))]
	g.goods = len(edges)
	adj := make([][]int, n) // city -> edge indices
	for i, e := range edges {
		adj[e.a] = append(adj[e.a], i)
		adj[e.b] = append(adj[e.b], i)
	}
	route := func(s, t int, noise float64) ([]int, float64) {
		d := make([]float64, n)
		via := make([]int, n)
		done := make([]bool, n)
		for i := range d {
			d[i], via[i] = math.Inf(1), -1
		}
		d[s] = 0
		for {
			u := -1
			for i := range n {
				if !done[i] && !math.IsInf(d[i], 1) && (u < 0 || d[i] < d[u]) {
					u = i
				}
			}
			if u < 0 || u == t {
				break
			}
			done[u] = true
			for _, ei := range adj[u] {
				e := edges[ei]
				v := e.a + e.b - u
				if l := d[u] + dist(e.a, e.b)*(1+noise*g.rng.Float64()); l < d[v] {
					d[v], via[v] = l, ei
				}
			}
		}
		if via[t] < 0 {
			return nil, 0
		}
		var path []int
		length := 0.0
		for c := t; c != s; {
			e := edges[via[c]]
			path = append(path, via[c])
			length += dist(e.a, e.b)
			c = e.a + e.b - c
		}
		return path, length
	}
	for tries := 0; g.count < bids && tries < 100*bids; tries++ {
		s, t := g.rng.IntN(n), g.rng.IntN(n)
		if s == t {
			continue
		}
		budget := dist(s, t) * (1.5 + g.rng.Float64())
		var alts []catsBid
		for k := range 1 + g.rng.IntN(5) {
			path, length := route(s, t, float64(k)*0.5)
			if path != nil && budget > length {
				alts = append(alts, catsBid{goods: path, value: 1000 * (budget - length)})
			}
		}
		g.add(alts)
	}
}

// matching: four airports with goods/4 time slots each; a flight takes off from
// one at a slot and lands at another a flight time later; a bidder's bundles are
// the same flight at later departures, worth less the later they leave.
func (g *catsGen) matching(bids int) {
	const airports = 4
	slots := g.goods / airports
	g.goods = slots * airports
	for g.count < bids {
		from := g.rng.IntN(airports)
		to := (from + 1 + g.rng.IntN(airports-1)) % airports
		flight := 1 + g.rng.IntN(max(slots/4, 1))
		if flight >= slots {
			continue
		}
		start := g.rng.IntN(slots - flight)
		value := 50 + 100*g.rng.Float64()
		var alts []catsBid
		for delay := 0; delay < 1+g.rng.IntN(8) && start+delay+flight < slots; delay++ {
			t := start + delay
			alts = append(alts, catsBid{goods: []int{from*slots + t, to*slots + t + flight},
				value: value * (1 - 0.08*float64(delay))})
		}
		g.add(alts)
	}
}

// scheduling: one machine's time slots; a bidder's job needs a run of slots and
// is worth its value if it finishes by its deadline, less by a late one; each
// start time is one bundle.
func (g *catsGen) scheduling(bids int) {
	for g.count < bids {
		length := 1 + g.rng.IntN(max(g.goods/8, 1))
		deadline := length + g.rng.IntN(g.goods-length+1)
		late := min(g.goods, deadline+1+g.rng.IntN(g.goods/4+1))
		value := float64(length) * (10 + 20*g.rng.Float64())
		var alts []catsBid
		for s := 0; s+length <= late && len(alts) < 60; s++ {
			v := value
			if s+length > deadline {
				v *= 0.6
			}
			run := make([]int, length)
			for i := range run {
				run[i] = s + i
			}
			alts = append(alts, catsBid{goods: run, value: v})
		}
		g.add(alts)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
