package agent

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

// OwnerUsageSource is where the agent reads owners' usage at every poll, in place of
// what the backend measures: a JSON file or the standard output of a command (run
// with sh -c, for Timeout at most), both holding
// [{"team":"ads","pool":"us-east/cpu","units":40}, ...]. The operator's tooling (a
// scheduler's accounting, a metrics query) writes or prints it.
type OwnerUsageSource struct {
	File, Command string
	Timeout       time.Duration
}

// Set reports whether a file or a command is given.
func (s OwnerUsageSource) Set() bool { return s.File != "" || s.Command != "" }

// read returns the rows the source holds now.
func (s OwnerUsageSource) read(ctx context.Context) ([]OwnerUsage, error) {
	var data []byte
	var err error
	where := s.File
	if s.Command != "" {
		where = "--owner-usage-command"
		ctx, cancel := context.WithTimeout(ctx, s.Timeout)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "sh", "-c", s.Command)
		cmd.Stderr = &stderr
		if data, err = cmd.Output(); err != nil {
			return nil, fmt.Errorf("%s: %v %s", where, err, strings.TrimSpace(stderr.String()))
		}
	} else if data, err = os.ReadFile(s.File); err != nil {
		return nil, fmt.Errorf("--owner-usage: %w", err)
	}
	var rows []OwnerUsage
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of {\"team\",\"pool\",\"units\"}: %v", where, err)
	}
	return rows, nil
}

// ownerUsage is the owner_usage of this poll: from the source when one is set, else
// what the backend measured. Rows the server would refuse (another cluster's pool, no
// team, negative units) are dropped with a warning, so they do not sink the report's
// task events.
func (l *Loop) ownerUsage(ctx context.Context, cluster string, measured []OwnerUsage, now time.Time) []OwnerUsage {
	rows := measured
	if l.OwnerUsage.Set() {
		var err error
		if rows, err = l.OwnerUsage.read(ctx); err != nil {
			fmt.Fprintf(l.ErrOut, "%s owner usage not reported: %v\n", Clock(now), err)
			return nil
		}
	}
	return slices.DeleteFunc(slices.Clone(rows), func(u OwnerUsage) bool {
		if u.Team == "" || u.Units < 0 || !strings.HasPrefix(u.Pool, cluster+"/") {
			fmt.Fprintf(l.ErrOut, "%s owner usage row dropped (team %q, pool %q, units %d): want a team, a pool of %s and units >= 0\n",
				Clock(now), u.Team, u.Pool, u.Units, cluster)
			return true
		}
		return false
	})
}
