package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"time"
)

// maxErrors bounds the errors one report carries (the latest are kept).
const maxErrors = 20

// maxCorrections bounds the drift corrections one report carries (the latest are
// kept), and maxStatusText each text of the status: the server refuses a report past
// either (100 corrections; 500 characters, of which clipText's ellipsis is one).
const (
	maxCorrections = 100
	maxStatusText  = 480
)

// maxReclaimed bounds what one report says was reclaimed (the latest are kept; the
// server takes at most 1,000 rows).
const maxReclaimed = 1000

// Loop follows one cluster's allocation: each poll reads it from the server, drives
// the backend to match it and reports what the cluster did. Set the exported fields
// before Run or Poll; a Loop is not safe for concurrent use.
type Loop struct {
	Client  *Client
	Backend Backend
	// Config is the cluster's config file: with one, every team and pool it maps gets a
	// quota each poll (0 when the team holds none), and the allocation's teams and
	// pools it does not map are left out and reported once as an error. Nil: the
	// allocation's teams and pools pass as they are.
	Config     *Config
	Out        io.Writer        // the server's answers and what the agent measured
	ErrOut     io.Writer        // errors, which the next poll retries
	Now        func() time.Time // stamps lines written without an answer from the server
	OwnerUsage OwnerUsageSource // where owners' usage is read (unset: what the backend measures)
	Version    string           // the agent's version, reported to operators
	// Every is the time between polls; after a poll that failed the loop waits longer
	// (exponential backoff with jitter, from Every up to MaxBackoff).
	Every, MaxBackoff time.Duration

	// Reported once the server accepts them; kept for the next poll when a report
	// fails on the way, dropped when the server refuses it.
	starts      []JobStart
	ends        []JobEnd
	events      []TaskEvent
	measured    []JobMeasurement
	corrections []Correction
	reclaimed   []Reclaimed
	errs        []string
	pollErrs    []string // the backend's errors in the last poll (PollErrors)

	refused []JobKey        // early starts the server refused: the next plan says so
	unknown map[string]bool // teams and pools outside the config, reported once
	noClaim bool            // told once that the backend cannot reclaim
	abacus  abacusMeter
}

// Run polls at once and then every Every until ctx ends or stop fires (a nil stop
// never does), which is not an error; a poll under way when stop fires finishes first.
// A poll that fails is printed and retried after a backoff that doubles with each
// failure in a row (from Every, at most MaxBackoff, with jitter so that many agents
// do not retry in step), unless the server refused the token: that error is returned
// at once.
func (l *Loop) Run(ctx context.Context, stop <-chan time.Time) error {
	failures := 0
	for {
		wait := l.Every
		if err := l.Poll(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if Refused(err) {
				return err
			}
			failures++
			wait = Backoff(l.Every, l.MaxBackoff, failures, rand.Float64())
			fmt.Fprintf(l.ErrOut, "%s error: %v (retrying at the next poll, in %s)\n", Clock(l.now()), err, wait.Round(time.Millisecond))
		} else {
			failures = 0
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-stop:
			timer.Stop()
			return nil
		case <-timer.C:
		}
	}
}

// Backoff is the wait after the n-th failed poll in a row (n >= 1): every times 2^n,
// at most limit (when limit > 0), scaled by a jitter from one half to one (j in
// [0, 1)); never below every.
func Backoff(every, limit time.Duration, n int, j float64) time.Duration {
	d := every
	for range min(n, 30) {
		d *= 2
		if limit > 0 && d >= limit {
			d = limit
			break
		}
	}
	return max(time.Duration(float64(d)*(0.5+j/2)), every)
}

// Poll reads the allocation, drives the backend (ApplyQuotas, Reclaim when the
// allocation lists excess to take back and the backend is a Reclaimer,
// FollowReservations, SyncTasks, Measure) and reports the early starts, ends, usage,
// waiting tasks, best-effort events, pools' and owners' usage, the teams whose own
// usage exceeds their limit, what was reclaimed, measured abacus jobs and the agent's
// status. An error of the backend is printed and reported; it does not fail the poll.
// The allocation's or the report's error is returned.
func (l *Loop) Poll(ctx context.Context) error {
	l.pollErrs = nil
	alloc, err := l.Client.Allocation(ctx)
	if err != nil {
		return err
	}
	now := alloc.Now.UTC()
	b := l.Backend
	if sa, ok := b.(SharingAware); ok {
		sa.SetPoolSharing(alloc.Pools)
	}
	quotas := l.quotas(alloc, now)
	corrections, err := b.ApplyQuotas(ctx, quotas)
	l.note(now, "apply quotas", err)
	for _, c := range corrections {
		l.corrections = append(l.corrections, clipped(c))
	}
	if len(l.corrections) > maxCorrections {
		l.corrections = slices.Delete(l.corrections, 0, len(l.corrections)-maxCorrections)
	}
	for _, c := range corrections {
		fmt.Fprintf(l.Out, "%s corrected %s\n", Clock(now), c)
	}
	l.reclaim(ctx, alloc.Reclaim, now)
	jobs, err := b.FollowReservations(ctx, Plan{Cluster: alloc.Cluster, Now: now, SlotEnds: alloc.SlotEnds,
		Running: alloc.Running, Waiting: alloc.Waiting, Upcoming: alloc.Upcoming, Refused: l.refused})
	l.note(now, "follow reservations", err)
	l.refused = nil
	l.starts, l.ends = append(l.starts, jobs.Starts...), append(l.ends, jobs.Ends...)
	events, err := b.SyncTasks(ctx, alloc.BestEffort, alloc.Preempt)
	l.note(now, "sync tasks", err)
	l.events = append(l.events, events...)
	l.measured = append(l.measured, l.abacus.observe(alloc.BestEffort, events, now, l.Out)...)
	m, err := b.Measure(ctx, now)
	l.note(now, "measure", err)

	owners := l.ownerUsage(ctx, alloc.Cluster, m.Owners, now)
	over := l.overLimit(quotas, owners)
	for _, o := range over {
		fmt.Fprintf(l.Out, "%s over limit: %s uses %d of %s, limit %d\n", Clock(now), o.Team, o.Used, o.Pool, o.Limit)
	}
	up := Updates{Ends: l.ends, Starts: l.starts, Usage: jobs.Usage, Waiting: jobs.Waiting, Unplaceable: jobs.Unplaceable, BestEffort: l.events,
		Pools: poolUsage(m.Pools), OwnerUsage: owners, BestEffortJobs: l.measured, OverLimit: over, Reclaimed: l.reclaimed,
		Agent: &Status{Backend: b.Name(), Version: l.Version, Corrections: l.corrections, Errors: l.errs}}
	ans, err := l.Client.Report(ctx, up)
	if err != nil {
		if Rejected(err) {
			// The server refused this report; sending it again will not help. The early
			// starts in it did not happen: the backend stops them at the next poll.
			for _, s := range l.starts {
				l.refused = append(l.refused, JobKey{Reservation: s.Reservation, Request: s.Request})
			}
			l.sent()
		}
		return err
	}
	l.sent()
	l.refused = ans.RefusedStarts
	if len(ans.Moved)+len(ans.AtRisk)+len(ans.Ended)+len(ans.RefusedStarts)+len(ans.RefusedEnds) > 0 {
		fmt.Fprintf(l.Out, "%s server: %s\n", Clock(now), answerText(ans))
	}
	return nil
}

// sent forgets what the last report carried.
func (l *Loop) sent() {
	l.starts, l.ends, l.events, l.measured, l.corrections, l.reclaimed, l.errs = nil, nil, nil, nil, nil, nil, nil
}

// reclaim hands the allocation's excess to take back to the backend when it is a
// Reclaimer, and keeps what it stopped for the report; a backend that is not one is
// noted once (the excess stays reported).
func (l *Loop) reclaim(ctx context.Context, want []Reclaim, now time.Time) {
	if len(want) == 0 {
		return
	}
	r, ok := l.Backend.(Reclaimer)
	if !ok {
		if !l.noClaim {
			l.noClaim = true
			l.note(now, "reclaim", fmt.Errorf("the %s backend cannot take back work beyond limits; the excess is reported only", l.Backend.Name()))
		}
		return
	}
	done, err := r.Reclaim(ctx, want)
	l.note(now, "reclaim", err)
	for _, d := range done {
		fmt.Fprintf(l.Out, "%s reclaimed %s (%s, %d of %s)\n", Clock(now), d.Object, d.Team, d.Units, d.Pool)
	}
	l.reclaimed = append(l.reclaimed, done...)
	if len(l.reclaimed) > maxReclaimed {
		l.reclaimed = slices.Delete(l.reclaimed, 0, len(l.reclaimed)-maxReclaimed)
	}
}

// overLimit is each team and pool whose own usage (owners, summed per team and pool)
// exceeds the limit the loop applied (0 where it applied none); with a config, only
// the teams and pools it maps are judged. By team and pool.
func (l *Loop) overLimit(applied []Quota, owners []OwnerUsage) []OverLimit {
	limit := map[[2]string]int64{}
	for _, q := range applied {
		limit[[2]string{q.Team, q.Pool}] = q.Units
	}
	used := map[[2]string]int64{}
	for _, u := range owners {
		if l.Config != nil {
			_, team := l.Config.Teams[u.Team]
			_, pool := l.Config.Pools[u.Pool]
			if !team || !pool {
				continue // not mapped: the loop applies no limit there
			}
		}
		used[[2]string{u.Team, u.Pool}] += u.Units
	}
	var out []OverLimit
	for _, k := range slices.SortedFunc(maps.Keys(used), func(x, y [2]string) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) }) {
		if used[k] > limit[k] {
			out = append(out, OverLimit{Team: k[0], Pool: k[1], Used: used[k], Limit: limit[k]})
		}
	}
	return out
}

// note prints a backend's error and keeps it for the next report (the latest
// maxErrors).
func (l *Loop) note(now time.Time, what string, err error) {
	if err == nil {
		return
	}
	msg := clipText(what+": "+err.Error(), maxStatusText)
	fmt.Fprintf(l.ErrOut, "%s %s\n", Clock(now), msg)
	l.errs = append(l.errs, msg)
	if what != noteConfig {
		l.pollErrs = append(l.pollErrs, msg)
	}
	if len(l.errs) > maxErrors {
		l.errs = slices.Delete(l.errs, 0, len(l.errs)-maxErrors)
	}
}

// PollErrors returns the errors the backend met in the last Poll (nil: none), as
// printed and reported: a poll that returned nil may still have failed in the cluster
// (`clearhouse agent --once` exits non-zero on them). Teams and pools outside the
// config are not among them.
func (l *Loop) PollErrors() []string { return l.pollErrs }

// noteConfig is what note calls the config's errors, which are not the backend's.
const noteConfig = "config"

// quotas is each team's quota of each pool now: the server's Limits when it sends
// them (the one rule), else its holdings (the allocation's quotas) plus its
// reservations running now (units times configuration); and the units granted to its
// best-effort tasks now (the server's, else the tasks to run summed). With a config,
// every team and pool it maps is listed (0 where the team has nothing), so a limit a
// team sold goes back to 0; the others are left out and noted once.
func (l *Loop) quotas(alloc Allocation, now time.Time) []Quota {
	sum := map[[2]string]int64{}
	be := map[[2]string]int64{}
	if alloc.Limits != nil {
		for _, q := range alloc.Limits {
			sum[[2]string{q.Team, q.Pool}] += q.Units
			if q.BestEffort > 0 {
				be[[2]string{q.Team, q.Pool}] += q.BestEffort
			}
		}
	} else {
		for _, q := range alloc.Quotas {
			sum[[2]string{q.Team, q.Pool}] += q.Units
		}
		for _, j := range alloc.Running {
			if j.Units <= 0 || !j.End.IsZero() && !j.End.After(now) {
				continue // the server lists a job that ended early until its slot ends
			}
			for p, n := range j.Configuration {
				sum[[2]string{j.Team, p}] += j.Units * n
			}
		}
		for _, t := range alloc.BestEffort {
			for p, n := range t.Configuration {
				be[[2]string{t.Team, p}] += n
			}
		}
	}
	for k := range be {
		if _, ok := sum[k]; !ok {
			sum[k] = 0
		}
	}
	if l.Config != nil {
		var errs []error
		for k := range sum {
			_, team := l.Config.Teams[k[0]]
			_, pool := l.Config.Pools[k[1]]
			if team && pool {
				continue
			}
			delete(sum, k)
			what := "team " + k[0]
			if team {
				what = "pool " + k[1]
			}
			if l.unknown == nil {
				l.unknown = map[string]bool{}
			}
			if !l.unknown[what] {
				l.unknown[what] = true
				errs = append(errs, fmt.Errorf("%s is not in %s: its quota is not applied", what, l.Config.File))
			}
		}
		slices.SortFunc(errs, func(a, b error) int { return cmp.Compare(a.Error(), b.Error()) })
		l.note(now, noteConfig, errors.Join(errs...))
		for team := range l.Config.Teams {
			for pool := range l.Config.Pools {
				if k := [2]string{team, pool}; sum[k] == 0 {
					sum[k] = 0 // listed, so that a limit the team no longer holds goes back to 0
				}
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(sum), func(x, y [2]string) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
	out := make([]Quota, 0, len(keys))
	for _, k := range keys {
		out = append(out, Quota{Team: k[0], Pool: k[1], Units: sum[k], BestEffort: be[k]})
	}
	return out
}

func (l *Loop) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

// poolUsage is what the backend measured of each pool as the report sends it: a
// capacity of 0 (not measured) is not sent.
func poolUsage(ms []PoolMeasure) []PoolUsage {
	var out []PoolUsage
	for _, m := range ms {
		u := PoolUsage{Pool: m.Pool, Used: m.Used}
		if m.Capacity != 0 {
			u.Capacity = &m.Capacity
		}
		out = append(out, u)
	}
	return out
}
