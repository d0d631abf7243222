package demo

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
)

// seedUsage writes 14 days of 5-minute usage samples, as cluster agents would
// have reported them, for every demo pool but ap-south/gpu (left without data, so
// the demo shows the held/capacity fallback): a daily cycle around each cluster's
// level, busier on weekdays, with noise.
func seedUsage(ctx context.Context, db *store.DB, pools []exchange.Pool, now time.Time) error {
	level := map[string]float64{"us-east": 0.86, "eu-west": 0.62, "ap-south": 0.34}
	swing := map[string]float64{"cpu": 0.10, "ram": 0.06, "disk": 0.02, "gpu": 0.12}
	rng := rand.New(rand.NewPCG(3, 5))
	const slot = 5 * time.Minute
	end := now.Truncate(slot)
	var rows [][]any
	for _, p := range pools {
		if p.ID == "ap-south/gpu" || p.Capacity == 0 {
			continue
		}
		for t := end.Add(-14 * 24 * time.Hour); t.Before(end); t = t.Add(slot) {
			hour := float64(t.Hour()) + float64(t.Minute())/60
			x := level[p.ClusterID] + swing[p.Resource]*math.Sin((hour-9)/24*2*math.Pi)
			if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
				x -= 0.08
			}
			x = min(max(x+rng.NormFloat64()*0.02, 0), 1)
			rows = append(rows, []any{p.ID, t, int64(math.Round(x * float64(p.Capacity))), p.Capacity, "agent"})
		}
	}
	_, err := store.Insert(db.Write.WithContext(ctx), "usage_samples", []string{"pool_id", "slot_at", "used", "capacity", "source"}, rows, "")
	return err
}
