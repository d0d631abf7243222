package auction

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GenConfig shapes a synthetic quota market.
type GenConfig struct {
	Seed      uint64
	Clusters  int     // clusters, each with Resources pools
	Resources int     // resource types per cluster (cpu, ram, ssd, gpu, ...)
	Bidders   int     // orders
	Scarcity  float64 // demand over supply: 1 balanced, 2 twice as much wanted as offered
}

var resourceNames = []string{"cpu", "ram", "ssd", "gpu", "hdd", "net", "tpu", "fpga"}

// resourceName names the r-th resource type.
func resourceName(r int) string {
	if r < len(resourceNames) {
		return resourceNames[r]
	}
	return fmt.Sprintf("res%d", r)
}

// Generate writes a seeded synthetic instance shaped like a real quota market:
// clusters x resource types; buyers wanting a fixed mix of resources co-located in
// one cluster, as XOR alternatives across one to three clusters; sellers giving up
// quota in congested clusters; traders moving quota from one cluster to another;
// about one order in five with its own limit per bundle. Limits sit around the
// bundle's reserve value plus a premium; Scarcity sets how much is wanted against
// what the operator offers. The same config always gives the same instance.
func Generate(cfg GenConfig) Instance {
	g := newQuotaGen(cfg)
	inst := Instance{Params: DefaultParams, Pools: g.pools()}
	for i := range g.cfg.Bidders {
		inst.Bidders = append(inst.Bidders, g.bidder(i))
	}
	return inst
}

// quotaGen is Generate's state: the config with its defaults, the random source,
// and what the pools and orders are drawn around.
type quotaGen struct {
	cfg        GenConfig
	rng        *rand.Rand
	unit       []float64   // per resource type: typical units per order
	congestion []float64   // per cluster: utilization, 0.3 to 0.98
	reserve    [][]float64 // per cluster and resource type: the pool's reserve price
}

// newQuotaGen sets cfg's defaults and draws, in this order, each resource type's
// typical units per order and cost per unit and each cluster's utilization; a
// pool's reserve price follows from the default curve.
func newQuotaGen(cfg GenConfig) *quotaGen {
	cfg.Clusters = max(cfg.Clusters, 1)
	cfg.Resources = max(cfg.Resources, 1)
	if cfg.Scarcity <= 0 {
		cfg.Scarcity = 1.5
	}
	g := &quotaGen{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	g.unit = make([]float64, cfg.Resources) // typical units per order and cost per unit
	cost := make([]float64, cfg.Resources)
	for r := range g.unit {
		g.unit[r] = float64(int(math.Pow(4, float64(r%3))) * 10) // 10, 40, 160 ...
		cost[r] = 4 / g.unit[r] * (0.5 + g.rng.Float64())
	}
	g.congestion = make([]float64, cfg.Clusters) // utilization of each cluster, 0.3 to 0.98
	for c := range g.congestion {
		g.congestion[c] = 0.3 + 0.68*g.rng.Float64()
	}
	curve, _ := DefaultCurve.Build()
	g.reserve = make([][]float64, cfg.Clusters)
	for c := range cfg.Clusters {
		g.reserve[c] = make([]float64, cfg.Resources)
		for r := range cfg.Resources {
			rp, _ := ReservePrice(curve, g.congestion[c], cost[r])
			g.reserve[c][r] = math.Round(rp*1e4) / 1e4
		}
	}
	return g
}

// quotaPool names the pool of resource type r in cluster c.
func quotaPool(c, r int) string { return fmt.Sprintf("c%03d/%s", c, resourceName(r)) }

// pools returns the pools, cluster by cluster: the operator's supply is sized so
// that the expected demand is Scarcity times it, and is smaller the more
// congested the cluster.
func (g *quotaGen) pools() []Pool {
	var pools []Pool
	// Expected demand per pool, to size supply by scarcity.
	perPool := float64(g.cfg.Bidders) * 1.5 / float64(g.cfg.Clusters)
	for c := range g.cfg.Clusters {
		for r := range g.cfg.Resources {
			supply := math.Round(perPool * g.unit[r] * 0.6 / g.cfg.Scarcity * (1.2 - g.congestion[c]))
			pools = append(pools, Pool{ID: quotaPool(c, r), Supply: max(supply, 0), ReservePrice: g.reserve[c][r]})
		}
	}
	return pools
}

// value is the reserve value of a mix in cluster c.
func (g *quotaGen) value(c int, mix []float64) float64 {
	v := 0.0
	for r, q := range mix {
		v += q * g.reserve[c][r]
	}
	return v
}

// bidder draws order i: its kind (15% sellers, 10% traders when there is more
// than one cluster, buyers otherwise), its mix, home cluster and premium.
func (g *quotaGen) bidder(i int) Bidder {
	b := Bidder{ID: fmt.Sprintf("t%d/%d", i%97, i)}
	kind := g.rng.Float64()
	mix := g.mix()
	home := g.rng.IntN(g.cfg.Clusters)
	premium := 1.1 + g.rng.Float64()*1.5
	switch {
	case kind < 0.15:
		g.seller(&b, home, mix)
	case kind < 0.25 && g.cfg.Clusters > 1:
		g.trader(&b, home, mix, premium)
	default:
		g.buyer(&b, home, mix, premium)
	}
	return b
}

// mix draws an order's mix: one to all resource types, in multiples of their
// typical unit.
func (g *quotaGen) mix() []float64 {
	mix := make([]float64, g.cfg.Resources)
	n := 1 + g.rng.IntN(g.cfg.Resources)
	for _, r := range g.rng.Perm(g.cfg.Resources)[:n] {
		mix[r] = g.unit[r] * float64(1+g.rng.IntN(4))
	}
	return mix
}

// seller gives up mix in a congested cluster (home, or the next one when home is
// not), asking around the mix's reserve value.
func (g *quotaGen) seller(b *Bidder, home int, mix []float64) {
	c := home
	if g.congestion[c] < 0.7 {
		c = (home + 1) % g.cfg.Clusters
	}
	bundle := Bundle{}
	for r, q := range mix {
		if q > 0 {
			bundle[quotaPool(c, r)] = -q
		}
	}
	l := -g.value(c, mix) * (0.8 + g.rng.Float64()*0.8)
	b.Limit = &l
	b.Bundles = []Bundle{bundle}
}

// trader moves mix from home to another cluster, paying the difference in
// reserve value plus its premium on the new cluster's.
func (g *quotaGen) trader(b *Bidder, home int, mix []float64, premium float64) {
	to := (home + 1 + g.rng.IntN(g.cfg.Clusters-1)) % g.cfg.Clusters
	bundle := Bundle{}
	for r, q := range mix {
		if q > 0 {
			bundle[quotaPool(home, r)] = -q
			bundle[quotaPool(to, r)] = q
		}
	}
	l := (g.value(to, mix) - g.value(home, mix)) + g.value(to, mix)*(premium-1)
	b.Limit = &l
	b.Bundles = []Bundle{bundle}
}

// buyer wants mix in one of one to three clusters from home on (XOR), with one
// limit at its premium on home's reserve value or, one time in five, a limit per
// bundle.
func (g *quotaGen) buyer(b *Bidder, home int, mix []float64, premium float64) {
	alts := 1 + g.rng.IntN(min(3, g.cfg.Clusters))
	perBundle := g.rng.Float64() < 0.2
	for a := range alts {
		c := (home + a*(1+g.rng.IntN(max(g.cfg.Clusters/3, 1)))) % g.cfg.Clusters
		if a > 0 && containsCluster(b.Bundles, quotaPool(c, firstRes(mix))) {
			continue
		}
		bundle := Bundle{}
		for r, q := range mix {
			if q > 0 {
				bundle[quotaPool(c, r)] = q
			}
		}
		b.Bundles = append(b.Bundles, bundle)
		if perBundle {
			b.Limits = append(b.Limits, g.value(c, mix)*(premium+0.3*g.rng.Float64()))
		}
	}
	if !perBundle {
		l := g.value(home, mix) * premium
		b.Limit = &l
	}
}

func firstRes(mix []float64) int {
	for r, q := range mix {
		if q > 0 {
			return r
		}
	}
	return 0
}

func containsCluster(bundles []Bundle, pool string) bool {
	for _, b := range bundles {
		if _, ok := b[pool]; ok {
			return true
		}
	}
	return false
}
