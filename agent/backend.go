// Package agent is Clearhouse's cluster agent as a library: a poll loop that reads one
// cluster's allocation from the server's JSON API, drives a Backend (one cluster manager:
// a simulation, Kubernetes, Slurm) to match it, and reports what the cluster did through
// POST /api/v1/clusters/{cluster}/updates.
//
// The package speaks only the JSON API: it imports none of the server's packages
// (exchange, fleet, web, store, ledger), as any agent written by a platform team would
// not. Backends live in subpackages (agent/simulate, agent/kubernetes, agent/slurm) and
// register themselves with Register, so the command line only names them.
package agent

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Backend is one cluster manager as the agent's loop drives it. The loop calls the
// methods once per poll, in this order: ApplyQuotas, FollowReservations, SyncTasks,
// Measure (last, so that the report describes the cluster as the poll leaves it);
// never two at once. Every method is level-triggered and idempotent: it is
// given the whole desired state, compares it with what the cluster holds, corrects the
// difference and says what it did. A restart of the agent (with the same config) must
// not duplicate anything in the cluster nor lose an event: events are derived from the
// cluster's own state, and the server ignores repeats.
//
// An error from a method is reported to operators (the report's agent.errors) and the
// loop goes on with the other methods: a cluster whose quotas cannot be written still
// reports its tasks. A method returns what it managed to do alongside its error.
type Backend interface {
	// Name is the backend's registered name: "simulate", "kubernetes", "slurm", "print".
	Name() string
	// Measure reads what runs now: each pool's used units and capacity, and each team's
	// own usage per pool (best-effort tasks left out: they borrow idle quota). Pools and
	// teams not in the config are left out.
	Measure(ctx context.Context, now time.Time) (Measurement, error)
	// ApplyQuotas makes each team's limit in the cluster equal to want (the server's
	// one rule, Allocation.Limits: its holdings, what it offers included, plus its
	// reservations running now beyond its own quota; the best-effort grant apart). With
	// a config the loop lists every team and pool it maps (0 where the team holds
	// nothing) and leaves out the others (reporting that once as an error). It returns
	// the drift it corrected: each value someone else changed from what the backend had
	// set, with what was there. A first write, or a change because want changed, is not
	// a correction.
	ApplyQuotas(ctx context.Context, want []Quota) ([]Correction, error)
	// FollowReservations makes the cluster's reservations follow the plan (Slurm:
	// advanced reservations; Kubernetes: nothing beyond the quota) and reports what the
	// reservations' jobs did since the last call: starts (early ones included), ends,
	// usage per request and pool, and tasks waiting. A job in plan.Refused was started
	// early and the server refused the start: the backend stops it.
	FollowReservations(ctx context.Context, plan Plan) (JobReport, error)
	// SyncTasks starts each best-effort task in run that is not running yet
	// (deterministic names: a task is never started twice), stops each task in stop, and
	// returns the task events observed since the last call: started, done, failed,
	// stopped, each with the time the cluster recorded. A task in stop that the cluster
	// does not run is reported stopped, so the server stops listing it.
	SyncTasks(ctx context.Context, run, stop []Task) ([]TaskEvent, error)
	// Close releases the backend's connections. Whoever opened the backend calls it
	// once, after the loop ends.
	Close() error
}

// Quota is a team's limit of one pool: units of the pool (cores, GiB, GPUs), as the
// pool counts them. Units is the limit of the team's own work; BestEffort the units
// granted to its best-effort tasks now, which the backend enforces apart (see Limit).
type Quota struct {
	Team       string `json:"team"`
	Pool       string `json:"pool"`
	Units      int64  `json:"units"`
	BestEffort int64  `json:"best_effort,omitempty"`
}

// Measurement is what a cluster runs now.
type Measurement struct {
	Pools  []PoolMeasure
	Owners []OwnerUsage
}

// PoolMeasure is one pool's units in use now (all work: reservations, owners' own,
// best-effort) and its capacity (0: not measured, not sent). The server records the
// measured capacity and sells from it (unless an operator overrides it: docs/capacity.md).
type PoolMeasure struct {
	Pool     string `json:"pool"`
	Used     int64  `json:"used"`
	Capacity int64  `json:"capacity,omitempty"`
}

// Plan is the reservations' part of the allocation at Now: the jobs that run in the
// slot ending at SlotEnds, the jobs waiting in their window, and every booked job
// planned to start later (Upcoming: a backend whose manager reserves ahead makes
// their reservations now). Refused lists the early starts the server refused since
// the last call.
type Plan struct {
	Cluster  string
	Now      time.Time
	SlotEnds time.Time
	Running  []Job
	Waiting  []Job
	Upcoming []Job
	Refused  []JobKey
}

// JobReport is what the reservations' jobs did, as the updates endpoint takes it.
// Unplaceable lists the booked jobs the cluster refused to reserve, at every call
// while it refuses them (the server ends each once).
type JobReport struct {
	Starts      []JobStart
	Ends        []JobEnd
	Usage       []JobUsage
	Waiting     []JobWaiting
	Unplaceable []JobUnplaceable
}

// Setup is what opening a backend is given: the cluster, its config file (nil when
// the command was given none: only the simulate and print backends run without one),
// where to print what it does, and the simulation's knobs (the simulate backend's
// alone; the others ignore them).
type Setup struct {
	Cluster  string
	Config   *Config
	Out      io.Writer
	Simulate Simulation
}

// Simulation is how the simulate backend plays the cluster: the seed of every random
// draw (the same seed gives the same run), the probability that a job or task fails,
// that a job finishes before its planned end, and the share of its units a running
// job uses.
type Simulation struct {
	Seed        uint64
	FailRate    float64
	FinishEarly float64
	Use         float64
}

// Kind is a registered backend: its name, how to open it, and how it checks its own
// part of a config file (its section and the teams' and pools' fields it reads).
// Validate returns *ConfigError values (joined with errors.Join when several), made
// with Config.Errorf so they name the file and line; it is nil when the backend reads
// no config. NeedsConfig says the backend refuses to run without a config file.
type Kind struct {
	Name        string
	Open        func(ctx context.Context, s Setup) (Backend, error)
	Validate    func(c *Config) error
	NeedsConfig bool
}

var kinds = map[string]Kind{}

// Register makes a backend kind known by its name; a backend package calls it from
// init, and the command imports the package for that effect. It panics on a second
// kind of the same name (a programming error).
func Register(k Kind) {
	if _, dup := kinds[k.Name]; dup || k.Name == "" || k.Open == nil {
		panic("agent: Register: empty, incomplete or duplicate backend " + strconv.Quote(k.Name))
	}
	kinds[k.Name] = k
}

// Kinds returns the names of the registered backends, sorted.
func Kinds() []string { return slices.Sorted(maps.Keys(kinds)) }

// Lookup returns the registered kind of that name, or an error naming the known ones.
func Lookup(name string) (Kind, error) {
	k, ok := kinds[name]
	if !ok {
		return Kind{}, fmt.Errorf("backend %q: not known (known: %s)", name, strings.Join(Kinds(), ", "))
	}
	return k, nil
}

// clipped is the correction with each text cut to what a report may carry.
func clipped(c Correction) Correction {
	for _, s := range []*string{&c.Team, &c.Pool, &c.Object, &c.Was, &c.Now} {
		*s = clipText(*s, maxStatusText)
	}
	return c
}

// Reclaimer is a backend that can take back a team's own work beyond its limit: for
// each Reclaim it stops the team's newest work in the pool (Kubernetes: evicts pods;
// Slurm: requeues jobs) until at least Units are freed, touching only what it maps,
// and says what it stopped. Best-effort tasks and reservations' jobs are never taken.
type Reclaimer interface {
	Reclaim(ctx context.Context, r []Reclaim) ([]Reclaimed, error)
}

// SharingAware is a backend that maps the pools' idle-sharing settings onto the
// cluster's own sharing (Kubernetes: Kueue's lending limits). The loop hands it the
// allocation's pools before each ApplyQuotas.
type SharingAware interface {
	SetPoolSharing([]PoolSharing)
}
