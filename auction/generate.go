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
	cfg.Clusters = max(cfg.Clusters, 1)
	cfg.Resources = max(cfg.Resources, 1)
	if cfg.Scarcity <= 0 {
		cfg.Scarcity = 1.5
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	inst := Instance{Params: DefaultParams}
	unit := make([]float64, cfg.Resources) // typical units per order and cost per unit
	cost := make([]float64, cfg.Resources)
	for r := range unit {
		unit[r] = float64(int(math.Pow(4, float64(r%3))) * 10) // 10, 40, 160 ...
		cost[r] = 4 / unit[r] * (0.5 + rng.Float64())
	}
	congestion := make([]float64, cfg.Clusters) // utilization of each cluster, 0.3 to 0.98
	for c := range congestion {
		congestion[c] = 0.3 + 0.68*rng.Float64()
	}
	id := func(c, r int) string { return fmt.Sprintf("c%03d/%s", c, resourceName(r)) }
	reserve := make([][]float64, cfg.Clusters)
	curve, _ := DefaultCurve.Build()
	// Expected demand per pool, to size supply by scarcity.
	perPool := float64(cfg.Bidders) * 1.5 / float64(cfg.Clusters)
	for c := range cfg.Clusters {
		reserve[c] = make([]float64, cfg.Resources)
		for r := range cfg.Resources {
			rp, _ := ReservePrice(curve, congestion[c], cost[r])
			reserve[c][r] = math.Round(rp*1e4) / 1e4
			supply := math.Round(perPool * unit[r] * 0.6 / cfg.Scarcity * (1.2 - congestion[c]))
			inst.Pools = append(inst.Pools, Pool{ID: id(c, r), Supply: max(supply, 0), ReservePrice: reserve[c][r]})
		}
	}
	value := func(c int, mix []float64) float64 {
		v := 0.0
		for r, q := range mix {
			v += q * reserve[c][r]
		}
		return v
	}
	for i := range cfg.Bidders {
		b := Bidder{ID: fmt.Sprintf("t%d/%d", i%97, i)}
		kind := rng.Float64()
		// A mix: one to all resource types, in multiples of their typical unit.
		mix := make([]float64, cfg.Resources)
		n := 1 + rng.IntN(cfg.Resources)
		for _, r := range rng.Perm(cfg.Resources)[:n] {
			mix[r] = unit[r] * float64(1+rng.IntN(4))
		}
		home := rng.IntN(cfg.Clusters)
		premium := 1.1 + rng.Float64()*1.5
		switch {
		case kind < 0.15: // seller in a congested cluster
			c := home
			if congestion[c] < 0.7 {
				c = (home + 1) % cfg.Clusters
			}
			bundle := Bundle{}
			for r, q := range mix {
				if q > 0 {
					bundle[id(c, r)] = -q
				}
			}
			l := -value(c, mix) * (0.8 + rng.Float64()*0.8)
			b.Limit = &l
			b.Bundles = []Bundle{bundle}
		case kind < 0.25 && cfg.Clusters > 1: // trader: leave one cluster for another
			to := (home + 1 + rng.IntN(cfg.Clusters-1)) % cfg.Clusters
			bundle := Bundle{}
			for r, q := range mix {
				if q > 0 {
					bundle[id(home, r)] = -q
					bundle[id(to, r)] = q
				}
			}
			l := (value(to, mix) - value(home, mix)) + value(to, mix)*(premium-1)
			b.Limit = &l
			b.Bundles = []Bundle{bundle}
		default: // buyer, XOR across one to three clusters
			alts := 1 + rng.IntN(min(3, cfg.Clusters))
			perBundle := rng.Float64() < 0.2
			for a := range alts {
				c := (home + a*(1+rng.IntN(max(cfg.Clusters/3, 1)))) % cfg.Clusters
				if a > 0 && containsCluster(b.Bundles, id(c, firstRes(mix))) {
					continue
				}
				bundle := Bundle{}
				for r, q := range mix {
					if q > 0 {
						bundle[id(c, r)] = q
					}
				}
				b.Bundles = append(b.Bundles, bundle)
				if perBundle {
					b.Limits = append(b.Limits, value(c, mix)*(premium+0.3*rng.Float64()))
				}
			}
			if !perBundle {
				l := value(home, mix) * premium
				b.Limit = &l
			}
		}
		inst.Bidders = append(inst.Bidders, b)
	}
	return inst
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
