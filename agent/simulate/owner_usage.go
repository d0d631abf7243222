package simulate

import (
	"hash/fnv"
	"math"
	"time"
)

// OwnerUsage is the units a team's own work uses of its quota in a pool at t, in the
// demo and the simulate backend: a daily wave between 10% and
// 90% of the quota, whose phase and a small hourly jitter are fixed by the seed, the
// team and the pool (so a seed gives the same usage every run).
func OwnerUsage(seed uint64, team, pool string, quota int64, t time.Time) int64 {
	if quota <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(team + "\x00" + pool))
	k := h.Sum64() ^ seed*0x9e3779b97f4a7c15
	phase := float64(k%1000) / 1000 * 2 * math.Pi
	hours := float64(t.Unix()) / 3600
	jitter := float64((k^uint64(int64(hours))*0xbf58476d1ce4e5b9)%1000)/1000*0.1 - 0.05
	share := 0.5 + 0.4*math.Sin(2*math.Pi*hours/24+phase) + jitter
	return int64(math.Round(min(max(share, 0), 1) * float64(quota)))
}
