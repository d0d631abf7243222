// Package slurm is the cluster agent's Slurm backend: Clearhouse teams are Slurm
// accounts and pools are TRES of one Slurm cluster. Quotas become the accounts'
// association GrpTRES, usage and capacity are read from running jobs and nodes,
// reservations become Slurm advanced reservations, and best-effort tasks are batch
// jobs in a preemptible QOS that Clearhouse owns. It speaks to Slurm only through its
// command-line tools (sacctmgr, scontrol, squeue, sacct, sbatch, scancel) with
// machine-readable output, behind a Runner. docs/slurm.md walks through it.
package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os/user"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// DefaultQOS is the QOS of best-effort jobs when the config names none.
const DefaultQOS = "clearhouse-best-effort"

func init() {
	agent.Register(agent.Kind{
		Name:        "slurm",
		NeedsConfig: true,
		Validate:    Validate,
		Open: func(ctx context.Context, s agent.Setup) (agent.Backend, error) {
			return Open(ctx, s.Config, ExecRunner{}, s.Out, time.Now)
		},
	})
}

var slurmName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Validate checks the Slurm backend's part of a config file: every team names an
// account (and no two the same one), every pool names a TRES with a unit Slurm counts
// in, and the slurm section's names are Slurm names.
func Validate(c *agent.Config) error {
	var errs []error
	owner := map[string]string{}
	for _, team := range slices.Sorted(maps.Keys(c.Teams)) {
		acct := c.Teams[team].Account
		switch {
		case acct == "":
			errs = append(errs, c.Errorf("teams."+team, "teams.%s.account: required (the team's Slurm account)", team))
		case !slurmName.MatchString(acct):
			errs = append(errs, c.Errorf("teams."+team+".account", "teams.%s.account %q: not a Slurm account name", team, acct))
		case owner[strings.ToLower(acct)] != "":
			errs = append(errs, c.Errorf("teams."+team+".account", "teams.%s.account %q: already team %s's account", team, acct, owner[strings.ToLower(acct)]))
		default:
			owner[strings.ToLower(acct)] = team
		}
	}
	for _, pool := range slices.Sorted(maps.Keys(c.Pools)) {
		p := c.Pools[pool]
		switch {
		case p.TRES == "":
			errs = append(errs, c.Errorf("pools."+pool, "pools.%s.tres: required (the Slurm TRES: cpu, mem, gres/gpu, ...)", pool))
		case !tresName.MatchString(p.TRES):
			errs = append(errs, c.Errorf("pools."+pool+".tres", "pools.%s.tres %q: not a TRES name (cpu, mem, gres/gpu, license/x)", pool, p.TRES))
		default:
			if _, err := parseUnit(p.TRES, p.Unit); err != nil && p.Unit != "" {
				errs = append(errs, c.Errorf("pools."+pool+".unit", "pools.%s.%v", pool, err))
			}
		}
	}
	if s := c.Slurm; s != nil {
		for key, v := range map[string]string{"cluster": s.Cluster, "qos": s.QOS, "partition": s.Partition} {
			if v != "" && !slurmName.MatchString(v) {
				errs = append(errs, c.Errorf("slurm."+key, "slurm.%s %q: not a Slurm name", key, v))
			}
		}
	}
	return errors.Join(errs...)
}

var tresName = regexp.MustCompile(`^[a-z]+(/[A-Za-z0-9_.:-]+)?$`)

// pool is a Clearhouse pool as the backend counts it: its TRES and how many of the
// TRES one unit of the pool is.
type pool struct {
	name, tres string
	unit       int64
}

// Backend is the Slurm backend. Its state across polls is what it reported already
// (so it reports each event once per process; a restarted agent reports again what
// Slurm still shows, and the server ignores repeats), the jobs it saw in Clearhouse's
// reservations and the GrpTRES values it set; each is bounded by what the server lists
// now and the config maps (see reported, ended, ranIn, lastSet). Everything else is
// read from Slurm at every poll.
type Backend struct {
	run       Runner
	out       io.Writer
	now       func() time.Time
	cluster   string // the Slurm cluster (sacctmgr's cluster=)
	qos       string
	partition string
	accounts  map[string]string // team -> account
	teams     map[string]string // lower-case account -> team
	beTeams   map[string]string // lower-case best-effort account -> team
	agentUser string            // the user the agent runs as: the one user of the best-effort accounts
	pools     map[string]pool   // Clearhouse pool -> TRES
	tresPools map[string][]pool // TRES -> the pools counting it
	since     time.Time         // how far back accounting is read: the oldest thing still followed

	// reported is the events this process returned of each task ("started", "done"),
	// so each is returned once. A task's are forgotten once the server lists it no
	// more (forgetUnlisted): bounded by the tasks listed now.
	reported map[int64]map[string]bool
	// ended is the reservations whose end this process returned, forgotten once the
	// plan has them no more: bounded by the reservations planned now.
	ended map[string]bool
	// ranIn is the jobs this process saw queued or running in each of Clearhouse's
	// reservations. Accounting does not always name a job's reservation (seen with
	// Slurm 22.05: sacct's Reservation column empty for a job squeue showed in one),
	// so a reservation's end is also found by these job ids. A reservation's are
	// forgotten once its end is told, or once the plan has it no more and no job is
	// queued in it.
	ranIn map[string]map[int64]bool
	// qosChecked is when ensureQOS last read the QOS list and the users' associations,
	// and qosUsed the other QOS the accounts used then (sorted, comma-separated).
	qosChecked time.Time
	qosUsed    string
	// lastSet is each GrpTRES value this process set (or found as it wanted), by
	// lastSetKey: a value that differs from it was changed by someone else (drift).
	// It starts empty: after a restart the first write of a value is not drift.
	lastSet map[string]int64
	opened  bool // Open's checks are done: a QOS list put back from now on is drift
}

// Open checks that Slurm answers, reads the cluster name from scontrol when the config
// names none, and makes sure the best-effort QOS exists as Clearhouse needs it
// (ensureQOS). now is the clock events and reservations are stamped with.
func Open(ctx context.Context, c *agent.Config, r Runner, out io.Writer, now func() time.Time) (*Backend, error) {
	if c == nil {
		return nil, errors.New("slurm: a config file is required (--config)")
	}
	if out == nil {
		out = io.Discard
	}
	me, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("slurm: the agent's user: %w", err)
	}
	b := &Backend{run: r, out: out, now: now, qos: DefaultQOS, accounts: map[string]string{}, teams: map[string]string{}, beTeams: map[string]string{},
		agentUser: me.Username, lastSet: map[string]int64{},
		pools: map[string]pool{}, tresPools: map[string][]pool{}, reported: map[int64]map[string]bool{}, ended: map[string]bool{}, ranIn: map[string]map[int64]bool{}, since: now().Add(-24 * time.Hour)}
	if s := c.Slurm; s != nil {
		b.cluster, b.partition = s.Cluster, s.Partition
		if s.QOS != "" {
			b.qos = s.QOS
		}
	}
	for team, t := range c.Teams {
		b.accounts[team] = t.Account
		b.teams[strings.ToLower(t.Account)] = team
		b.beTeams[BestEffortAccount(t.Account)] = team
	}
	for name, p := range c.Pools {
		u, err := parseUnit(p.TRES, p.Unit)
		if err != nil {
			return nil, fmt.Errorf("slurm: pool %s: %w", name, err)
		}
		pl := pool{name: name, tres: p.TRES, unit: u}
		b.pools[name] = pl
		b.tresPools[p.TRES] = append(b.tresPools[p.TRES], pl)
	}
	if b.cluster == "" {
		name, err := b.clusterName(ctx)
		if err != nil {
			return nil, err
		}
		b.cluster = name
	}
	if _, err := b.ensureQOS(ctx, nil); err != nil {
		return nil, err
	}
	b.opened = true
	return b, nil
}

// Name implements agent.Backend.
func (b *Backend) Name() string { return "slurm" }

// Close implements agent.Backend: the backend holds no connection.
func (b *Backend) Close() error { return nil }

// clusterName is the ClusterName of the slurm.conf the tools read.
func (b *Backend) clusterName(ctx context.Context) (string, error) {
	out, err := b.run.Run(ctx, "", "scontrol", "show", "config")
	if err != nil {
		return "", fmt.Errorf("slurm: reading the cluster name: %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "ClusterName" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errors.New("slurm: scontrol show config names no ClusterName")
}

// team returns the Clearhouse team of a Slurm account ("" when none is configured).
func (b *Backend) team(account string) string { return b.teams[strings.ToLower(account)] }

// taskTeam returns the team whose best-effort task a job of account runs as: its
// best-effort account's, or its own account's (where tasks ran before best-effort
// accounts existed, so a restarted agent never submits such a task again).
func (b *Backend) taskTeam(account string) string {
	if team := b.beTeams[strings.ToLower(account)]; team != "" {
		return team
	}
	return b.team(account)
}

// units converts TRES counts into a pool's units, rounding up (a job using part of a
// unit uses the unit).
func (p pool) units(count int64) int64 { return (count + p.unit - 1) / p.unit }

// once says whether a task's event is new to this process, and remembers it.
func (b *Backend) once(task int64, event string) bool {
	if b.reported[task][event] {
		return false
	}
	if b.reported[task] == nil {
		b.reported[task] = map[string]bool{}
	}
	b.reported[task][event] = true
	return true
}
