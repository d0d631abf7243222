package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// agentQuota is a team's quota of a pool, as the allocation lists it.
type agentQuota struct {
	Team  string `json:"team"`
	Pool  string `json:"pool"`
	Units int64  `json:"units"`
}

// agentOwnerUsage is what a team's own (not best-effort) work uses of a pool now:
// the owner_usage rows of a report. Rising usage takes idle quota back from
// best-effort tasks at the next decision.
type agentOwnerUsage struct {
	Team  string `json:"team"`
	Pool  string `json:"pool"`
	Units int64  `json:"units"`
}

// ownerUsageSource is where the agent reads owners' usage at every poll: a JSON
// file or the standard output of a command, both holding
// [{"team":"ads","pool":"us-east/cpu","units":40}, ...]. The operator's tooling
// (a scheduler's accounting, a metrics query) writes or prints it.
type ownerUsageSource struct {
	file, command string
	timeout       time.Duration
}

func (s ownerUsageSource) set() bool { return s.file != "" || s.command != "" }

// read returns the rows the source holds now.
func (s ownerUsageSource) read(ctx context.Context) ([]agentOwnerUsage, error) {
	var data []byte
	var err error
	where := s.file
	if s.command != "" {
		where = "--owner-usage-command"
		ctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "sh", "-c", s.command)
		cmd.Stderr = &stderr
		if data, err = cmd.Output(); err != nil {
			return nil, fmt.Errorf("%s: %v %s", where, err, strings.TrimSpace(stderr.String()))
		}
	} else if data, err = os.ReadFile(s.file); err != nil {
		return nil, fmt.Errorf("--owner-usage: %w", err)
	}
	var rows []agentOwnerUsage
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of {\"team\",\"pool\",\"units\"}: %v", where, err)
	}
	return rows, nil
}

// ownerUsage is the owner_usage of this poll: from the source when one is set,
// else simulated from the allocation's quotas when simulating, else none. Rows
// the server would refuse (another cluster's pool, no team, negative units) are
// dropped with a warning, so they do not sink the report's task events.
func (a *clusterAgent) ownerUsage(ctx context.Context, alloc agentAllocation, now time.Time) []agentOwnerUsage {
	var rows []agentOwnerUsage
	switch {
	case a.usage.set():
		var err error
		if rows, err = a.usage.read(ctx); err != nil {
			fmt.Fprintf(a.errOut, "%s owner usage not reported: %v\n", clock(now), err)
			return nil
		}
	case a.sim != nil:
		for _, q := range alloc.Quotas {
			rows = append(rows, agentOwnerUsage{Team: q.Team, Pool: q.Pool, Units: simulatedOwnerUsage(a.sim.seed, q.Team, q.Pool, q.Units, now)})
		}
	}
	return slices.DeleteFunc(rows, func(u agentOwnerUsage) bool {
		if u.Team == "" || u.Units < 0 || !strings.HasPrefix(u.Pool, alloc.Cluster+"/") {
			fmt.Fprintf(a.errOut, "%s owner usage row dropped (team %q, pool %q, units %d): want a team, a pool of %s and units >= 0\n",
				clock(now), u.Team, u.Pool, u.Units, alloc.Cluster)
			return true
		}
		return false
	})
}
