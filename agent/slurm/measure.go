package slurm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// Measure implements agent.Backend: each pool's capacity is the sum of the nodes'
// configured TRES (scontrol show nodes), its use the TRES allocated to running jobs
// (squeue), and each team's own usage the TRES of its account's running jobs outside
// the best-effort QOS. Every configured team and pool is listed, zeros included.
func (b *Backend) Measure(ctx context.Context, now time.Time) (agent.Measurement, error) {
	var capacity tres
	var running []job
	if err := together(
		func() (err error) { capacity, err = b.capacity(ctx); return err },
		func() (err error) { running, err = b.queue(ctx, "RUNNING"); return err },
	); err != nil {
		return agent.Measurement{}, err
	}
	return b.measurement(capacity, running), nil
}

// measurement counts running jobs into pools' use and owners' usage.
func (b *Backend) measurement(capacity tres, running []job) agent.Measurement {
	used := tres{}
	own := map[string]tres{}
	for _, team := range slices.Collect(maps.Keys(b.accounts)) {
		own[team] = tres{}
	}
	for _, j := range running {
		used.add(j.TRES)
		if team := b.team(j.Account); team != "" && j.QOS != b.qos {
			own[team].add(j.TRES)
		}
	}
	var m agent.Measurement
	for _, name := range slices.Sorted(maps.Keys(b.pools)) {
		p := b.pools[name]
		m.Pools = append(m.Pools, agent.PoolMeasure{Pool: name, Used: p.units(used[p.tres]), Capacity: capacity[p.tres] / p.unit})
		for _, team := range slices.Sorted(maps.Keys(own)) {
			m.Owners = append(m.Owners, agent.OwnerUsage{Team: team, Pool: name, Units: p.units(own[team][p.tres])})
		}
	}
	return m
}

// capacity sums the configured TRES (CfgTRES) of every node.
func (b *Backend) capacity(ctx context.Context) (tres, error) {
	out, err := b.run.Run(ctx, "", "scontrol", "--oneliner", "show", "nodes")
	if err != nil {
		return nil, err
	}
	return parseNodes(out)
}

// parseNodes reads scontrol --oneliner show nodes and sums the nodes' CfgTRES.
func parseNodes(out string) (tres, error) {
	total := tres{}
	for _, line := range strings.Split(out, "\n") {
		for _, field := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(field, "CfgTRES="); ok {
				t, err := parseTRES(v)
				if err != nil {
					return nil, fmt.Errorf("scontrol show nodes: %w", err)
				}
				total.add(t)
			}
		}
	}
	return total, nil
}
