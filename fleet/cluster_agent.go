package fleet

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// Assignment is one request of a reservation as a cluster agent sees it: Units of
// Count it should run now (0 while it waits for its planned start). A waiting
// request with MayStartNow set fits the plan from now for its whole duration (ERA's
// "empty allocation" extension in Rayon): the cluster may start it now and report
// the start (AgentReport.Starts), which moves it and frees its planned slots. The
// requests so marked in one allocation fit together.
type Assignment struct {
	Reservation   int64
	Request       int
	Team          string
	Configuration map[string]int64
	Count         int64
	Units         int64
	Start, End    time.Time
	Arrival       time.Time
	Deadline      time.Time
	MayStartNow   bool
	// Beyond is, for a running request, its units of each pool taken now from the
	// pool's shared capacity rather than its team's own quota (see Limit).
	Beyond map[string]int64
}

// Allocation is what each job of one cluster should have in the current slot.
type Allocation struct {
	Cluster  string
	Now      time.Time
	SlotEnds time.Time // the allocation holds until then
	Running  []Assignment
	Waiting  []Assignment
	// Upcoming is every booked request whose planned start is still ahead, within the
	// plan's horizon (Units 0): a cluster manager that reserves ahead (Slurm) makes
	// its reservation at booking, not when its slot starts.
	Upcoming []Assignment
	// Holdings is every team's holdings of the cluster's pools, with what is on
	// offer: with Running, what Limits takes.
	Holdings []Holding
}

// Allocation returns the plan for cluster in the current slot, and the booked
// requests planned to start later. ENOTFOUND for an unknown cluster.
func (s *Reservations) Allocation(ctx context.Context, cluster string) (Allocation, error) {
	if err := exists(s.db.Read.WithContext(ctx), "clusters", cluster, "cluster: no cluster %q", cluster); err != nil {
		return Allocation{}, err
	}
	holdings, err := clusterHoldings(s.db.Read.WithContext(ctx), cluster)
	if err != nil {
		return Allocation{}, err
	}
	var out Allocation
	var ids []int64
	var eng scheduler.Allocation
	err = s.read(ctx, func(p *plan, now time.Time) error {
		eng = p.eng.CurrentAllocation(p.slot(now))
		out = Allocation{Cluster: cluster, Now: now, SlotEnds: p.at(p.slot(now) + 1), Holdings: holdings}
		for _, a := range append(append([]scheduler.Assignment(nil), eng.Running...), eng.Waiting...) {
			ids = append(ids, a.Reservation)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	if out.Upcoming, err = s.upcoming(ctx, cluster, out.Now); err != nil || len(ids) == 0 {
		return out, err
	}
	db := s.db.Read.WithContext(ctx)
	vs, err := s.views(db, db.Where("id IN ? AND cluster_id = ?", ids, cluster), out.Now)
	if err != nil {
		return out, err
	}
	byID := map[int64]ReservationView{}
	for _, v := range vs {
		byID[v.ID] = v
	}
	conv := func(as []scheduler.Assignment) []Assignment {
		var res []Assignment
		for _, a := range as {
			v, ok := byID[a.Reservation]
			if !ok || a.Request >= len(v.Requests) || v.Requests[a.Request].StartAt == nil {
				continue
			}
			q := v.Requests[a.Request]
			res = append(res, Assignment{Reservation: v.ID, Request: a.Request, Team: v.TeamID, Configuration: q.Config(),
				Count: q.Count, Units: a.Units, Start: *q.StartAt, End: q.End(), Arrival: q.Arrival, Deadline: q.Deadline, MayStartNow: a.MayStartNow, Beyond: a.Beyond})
		}
		return res
	}
	out.Running, out.Waiting = conv(eng.Running), conv(eng.Waiting)
	return out, nil
}

// CapacityReport sets a pool's capacity to Units over [From, To).
type CapacityReport struct {
	Pool     string
	From, To time.Time
	Units    int64
}

// EndReport says a request stopped using its capacity at At: it finished early,
// or failed and will not run again.
type EndReport struct {
	Reservation int64
	Request     int
	At          time.Time
	Failed      bool
}

// StartReport says the cluster started a waiting request early, at At, as an
// allocation's MayStartNow allowed.
type StartReport struct {
	Reservation int64
	Request     int
	At          time.Time
}

// JobRef names one request of a reservation.
type JobRef struct {
	Reservation int64
	Request     int
}

// UsageReport is what a running request used of one pool in the current slot:
// units below what the plan holds for it go back to the plan for the current slot
// at once, and the learned predictors are told what it used when it leaves the
// plan.
type UsageReport struct {
	Reservation int64
	Request     int
	Pool        string
	Units       int64
}

// WaitingReport is how many tasks of a request wait to run.
type WaitingReport struct {
	Reservation int64
	Request     int
	Tasks       int64
}

// AgentReport is what a cluster agent reports.
type AgentReport struct {
	Capacity []CapacityReport
	Ends     []EndReport
	Starts   []StartReport
	Usage    []UsageReport
	Waiting  []WaitingReport
	Pools    []PoolUsageReport // what all the work in each pool uses now (measured utilization)
	// Unplaceable are booked requests the cluster refused to reserve: their
	// reservations end, refunded (refuseUnplaceable).
	Unplaceable []UnplaceableReport
}

// AgentResult is what a report did to the plan.
type AgentResult struct {
	Moved  []int64 // reservations re-planned inside their windows
	AtRisk []int64 // reservations that can no longer be honoured
	Ended  []int64 // reservations whose requests have all ended
	// Started are the early starts the plan took (the requests now start at
	// their reported start); Refused those that no longer fit the plan: the
	// request keeps its planned start and the cluster should stop it.
	Started []JobRef
	Refused []JobRef
	// AlreadyEnded are reported ends of requests that had already ended (a report
	// sent again, an end after the request's end): each with its end on record.
	// RefusedEnds are ends that contradict the record (a request that never ran, an
	// end earlier than the one on record), each with the reason. Neither changed
	// anything; the rest of the report applied.
	AlreadyEnded []EndNote
	RefusedEnds  []EndNote
}

// Bounds on what one agent report may say, so that no agent can make the plan's
// work unbounded: rows per list, and capacity within a sane multiple of the pool's
// configured capacity (hardware added faster than operators record it is fine;
// 2^63 cores is a bug).
const (
	MaxReportRows          = 1000
	MaxCapacityFactor      = exchange.MaxCapacityFactor
	maxReportedUsageFactor = 4 // usage of a request: at most this times what it reserved
)

// validateReport checks a report from cluster's agent against the plan: every
// pool and reservation must be the cluster's, and every number within bounds.
// EINVALID names the field at fault. It returns the reservations the report names.
func (s *Reservations) validateReport(tx *gorm.DB, p *plan, cluster string, rep AgentReport, now time.Time) (map[int64]ReservationView, error) {
	for field, n := range map[string]int{"capacity": len(rep.Capacity), "ends": len(rep.Ends), "starts": len(rep.Starts), "usage": len(rep.Usage), "waiting": len(rep.Waiting),
		"unplaceable": len(rep.Unplaceable)} {
		if n > MaxReportRows {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "%s: at most %d rows per report, got %d; send the rest in another report", field, MaxReportRows, n)
		}
	}
	if err := validateCapacity(p, cluster, rep.Capacity, now); err != nil {
		return nil, err
	}
	byID, err := s.reportedReservations(tx, cluster, rep, now)
	if err != nil {
		return nil, err
	}
	return byID, validateJobRows(p, cluster, rep, byID, now)
}

// badRow is the error of row i of a report's list field.
func badRow(field string, i int, format string, args ...any) error {
	return clearhouse.Errorf(clearhouse.EINVALID, "%s[%d]: %s", field, i, fmt.Sprintf(format, args...))
}

// validateCapacity checks a report's capacity changes: the cluster's pools, within a
// sane multiple of their configured capacity, from a day ago to the plan's horizon.
func validateCapacity(p *plan, cluster string, capacity []CapacityReport, now time.Time) error {
	earliest, latest := now.Add(-24*time.Hour), p.at(p.eng.Horizon())
	for i, c := range capacity {
		pl, ok := p.pools[c.Pool]
		switch {
		case !ok || pl.ClusterID != cluster:
			return badRow("capacity", i, "pool %q is not a pool of cluster %s", c.Pool, cluster)
		case c.Units < 0:
			return badRow("capacity", i, "units must not be negative")
		case c.Units > MaxCapacityFactor*max(pl.Capacity, 1):
			return badRow("capacity", i, "units: %d is more than %d times the pool's configured capacity of %d; have an operator raise it first",
				c.Units, MaxCapacityFactor, pl.Capacity)
		case !c.To.After(c.From):
			return badRow("capacity", i, "to must be after from")
		case c.From.Before(earliest) || c.To.After(latest):
			return badRow("capacity", i, "from and to must lie between %s and the plan's horizon, %s",
				earliest.Format(time.RFC3339), latest.Format(time.RFC3339))
		}
	}
	return nil
}

// reportedReservations reads the reservations a report's ends, usage, starts and
// waiting tasks name, keeping only the cluster's own.
func (s *Reservations) reportedReservations(tx *gorm.DB, cluster string, rep AgentReport, now time.Time) (map[int64]ReservationView, error) {
	ids := map[int64]bool{}
	for _, e := range rep.Ends {
		ids[e.Reservation] = true
	}
	for _, u := range rep.Usage {
		ids[u.Reservation] = true
	}
	for _, st := range rep.Starts {
		ids[st.Reservation] = true
	}
	for _, w := range rep.Waiting {
		ids[w.Reservation] = true
	}
	for _, u := range rep.Unplaceable {
		ids[u.Reservation] = true
	}
	list := make([]int64, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	byID := map[int64]ReservationView{}
	if len(list) > 0 {
		vs, err := s.views(tx, tx.Where("id IN ?", list), now)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if v.ClusterID != nil && *v.ClusterID == cluster {
				byID[v.ID] = v
			}
		}
	}
	return byID, nil
}

// validateJobRows checks a report's ends, starts, usage and waiting tasks: each names
// a request of one of the cluster's reservations (byID), times are not in the future
// and numbers are within bounds.
func validateJobRows(p *plan, cluster string, rep AgentReport, byID map[int64]ReservationView, now time.Time) error {
	check := func(field string, i int, id int64, req int) error {
		v, ok := byID[id]
		if !ok {
			return badRow(field, i, "cluster %s has no reservation %d", cluster, id)
		}
		if req < 0 || req >= len(v.Requests) {
			return badRow(field, i, "reservation %d has no request %d", id, req)
		}
		return nil
	}
	soon := p.at(p.slot(now) + 1)
	for i, e := range rep.Ends {
		if err := check("ends", i, e.Reservation, e.Request); err != nil {
			return err
		}
		if e.At.IsZero() {
			return badRow("ends", i, "at: required (RFC 3339)")
		}
		if e.At.After(soon) {
			return badRow("ends", i, "at: %s is in the future; report an end when it happens", e.At.UTC().Format(time.RFC3339))
		}
	}
	for i, st := range rep.Starts {
		if err := check("starts", i, st.Reservation, st.Request); err != nil {
			return err
		}
		if st.At.IsZero() {
			return badRow("starts", i, "at: required (RFC 3339)")
		}
		if st.At.After(soon) {
			return badRow("starts", i, "at: %s is in the future; report a start when it happens", st.At.UTC().Format(time.RFC3339))
		}
	}
	for i, u := range rep.Usage {
		if err := check("usage", i, u.Reservation, u.Request); err != nil {
			return err
		}
		if u.Units < 0 {
			return badRow("usage", i, "units must not be negative")
		}
		q := byID[u.Reservation].Requests[u.Request]
		per, ok := q.Config()[u.Pool]
		if !ok {
			return badRow("usage", i, "reservation %d request %d uses no pool %q", u.Reservation, u.Request, u.Pool)
		}
		if u.Units > maxReportedUsageFactor*per*q.Count {
			return badRow("usage", i, "units: %d is more than %d times the %d units the request reserved", u.Units, maxReportedUsageFactor, per*q.Count)
		}
	}
	for i, w := range rep.Waiting {
		if err := check("waiting", i, w.Reservation, w.Request); err != nil {
			return err
		}
		if w.Tasks < 0 || w.Tasks > 1_000_000_000 {
			return badRow("waiting", i, "tasks must be from 0 to 1,000,000,000")
		}
	}
	for i, u := range rep.Unplaceable {
		if err := check("unplaceable", i, u.Reservation, u.Request); err != nil {
			return err
		}
		if n := utf8.RuneCountInString(u.Reason); n > maxUnplaceableReason {
			return badRow("unplaceable", i, "reason: at most %d characters, got %d", maxUnplaceableReason, n)
		}
	}
	return nil
}

// Report applies what cluster's agent reports, in one transaction: capacity
// changes (recorded, so a restart keeps them), early ends and failures (the unused
// part of the charge is released at once), usage and waiting tasks. When capacity
// falls below what was promised, reservations are re-planned inside their windows
// and those that no longer fit are recorded as not honoured (their charge settled
// for what they used). A bad report changes nothing.
func (s *Reservations) Report(ctx context.Context, cluster string, rep AgentReport) (AgentResult, error) {
	return s.ReportWith(ctx, cluster, rep)
}

// ReportWith is Report with each step of also run last, in order, inside the same
// transaction: what other services make of the same agent report (its best-effort
// part, work beyond limits) then applies with it or not at all. An error from a step
// is returned as it is, and nothing of the report is kept.
func (s *Reservations) ReportWith(ctx context.Context, cluster string, rep AgentReport, also ...func(tx *gorm.DB) error) (AgentResult, error) {
	var res AgentResult
	err := s.write(ctx, func(tx *gorm.DB, p *plan, now time.Time) error {
		byID, err := s.validateReport(tx, p, cluster, rep, now)
		if err != nil {
			return err
		}
		measured, err := s.recordPoolUsage(tx, p, cluster, rep.Pools, now)
		if err != nil {
			return err
		}
		capacity, err := recordCapacity(tx, p, rep.Capacity, now)
		if err != nil {
			return err
		}
		capacity = append(measured, capacity...) // a measured capacity first: timed changes the agent reports win
		var up scheduler.Update
		touched, err := recordEnds(ctx, tx, p, rep.Ends, byID, &up, &res)
		if err != nil {
			return err
		}
		usage := usageByRequest(rep.Usage, byID)
		for _, u := range rep.Usage {
			if _, planned := p.eng.Reservation(u.Reservation); planned && byID[u.Reservation].Status == ReservationAccepted {
				up.Usage = append(up.Usage, scheduler.Usage{Reservation: u.Reservation, Request: u.Request, Pool: u.Pool, Units: u.Units})
			}
		}
		for _, st := range rep.Starts {
			if _, planned := p.eng.Reservation(st.Reservation); planned && byID[st.Reservation].Status == ReservationAccepted {
				up.Starts = append(up.Starts, scheduler.JobStart{Reservation: st.Reservation, Request: st.Request, At: p.slot(st.At)})
			}
		}
		if err := recordWaiting(ctx, tx, rep.Waiting, byID, now); err != nil {
			return err
		}
		out, err := p.update(p.slot(now), up, capacity)
		if err != nil {
			return err
		}
		if err := s.applyUse(ctx, tx, p, up, out, byID, usage, now, &res); err != nil {
			return err
		}
		if err := s.applyReport(ctx, tx, p, out, now, "capacity in its cluster fell below what was promised"); err != nil {
			return err
		}
		for _, m := range out.Moved {
			res.Moved = append(res.Moved, m.Reservation)
		}
		for _, r := range out.AtRisk {
			res.AtRisk = append(res.AtRisk, r.ID)
			delete(touched, r.ID)
		}
		if err := s.settleEnded(ctx, tx, touched, now, &res); err != nil {
			return err
		}
		if err := s.refuseUnplaceable(ctx, tx, p, rep.Unplaceable, now); err != nil {
			return err
		}
		for _, step := range also {
			if err := step(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return AgentResult{}, err
	}
	return res, nil
}

// recordCapacity stores a report's capacity changes that change the plan (so a
// restart keeps them) and returns those, in UTC. A change that sets what the plan
// already has (an agent repeating itself) is neither stored nor applied; a stored
// change replaces the earlier ones of its pool that it covers, and changes that
// ended a day ago are pruned: the history stays as long as the plan needs it.
func recordCapacity(tx *gorm.DB, p *plan, reported []CapacityReport, now time.Time) ([]CapacityReport, error) {
	capacity := make([]CapacityReport, 0, len(reported))
	rows := make([][]any, 0, len(reported))
	seen := map[CapacityReport]bool{}
	for _, c := range reported {
		c = CapacityReport{Pool: c.Pool, From: c.From.UTC(), To: c.To.UTC(), Units: c.Units}
		if seen[c] || !p.capacityDiffers(c) {
			continue
		}
		seen[c] = true
		if err := tx.Exec("DELETE FROM capacity_changes WHERE pool_id = ? AND from_at >= ? AND to_at <= ?", c.Pool, c.From, c.To).Error; err != nil {
			return nil, err
		}
		capacity = append(capacity, c)
		rows = append(rows, []any{c.Pool, c.From, c.To, c.Units, now})
	}
	if len(rows) == 0 {
		return capacity, nil
	}
	if err := tx.Exec("DELETE FROM capacity_changes WHERE to_at < ?", now.Add(-capacityKept)).Error; err != nil {
		return nil, err
	}
	_, err := store.Insert(tx, "capacity_changes", []string{"pool_id", "from_at", "to_at", "units", "reported_at"}, rows, "")
	return capacity, err
}

// capacityKept is how long a capacity change is kept after it ended: no plan built
// since reads it.
const capacityKept = 24 * time.Hour

// capacityDiffers reports whether c would change the plan: some slot of [From, To)
// inside the horizon has other than c.Units.
func (p *plan) capacityDiffers(c CapacityReport) bool {
	from, to := max(p.slot(c.From), 0), min(p.ceil(c.To), p.eng.Horizon())
	for t := from; t < to; t++ {
		if p.eng.Capacity(c.Pool, t) != c.Units {
			return true
		}
	}
	return false
}

// recordEnds stores the early ends of running requests (a failure also as the
// reservation's note), adds them to up for the engine, and returns the
// reservations they touched. An end of a request already over (sent again, or at
// or after its end) releases nothing and is answered in res.AlreadyEnded; one that
// contradicts the record, in res.RefusedEnds (judgeEnd).
func recordEnds(ctx context.Context, tx *gorm.DB, p *plan, ends []EndReport, byID map[int64]ReservationView, up *scheduler.Update, res *AgentResult) (map[int64]bool, error) {
	touched := map[int64]bool{}
	taken := map[JobRef]time.Time{}
	var rows [][]any
	for _, e := range ends {
		v := byID[e.Reservation]
		q := v.Requests[e.Request]
		ok, already, refused := judgeEnd(v, e, taken)
		if already != nil {
			res.AlreadyEnded = append(res.AlreadyEnded, *already)
		}
		if refused != nil {
			res.RefusedEnds = append(res.RefusedEnds, *refused)
		}
		if !ok {
			continue
		}
		at := e.At.UTC()
		if at.Before(*q.StartAt) {
			at = *q.StartAt
		}
		rows = append(rows, []any{v.ID, int64(e.Request), at})
		if e.Failed {
			note := fmt.Sprintf("request %d failed at %s", e.Request, at.Format(time.RFC3339))
			if err := tx.Model(&Reservation{}).Where("id = ?", v.ID).Update("note", note).Error; err != nil {
				return nil, err
			}
		}
		up.Ends = append(up.Ends, scheduler.JobEnd{Reservation: v.ID, Request: e.Request, At: p.ceil(at)})
		touched[v.ID] = true
		taken[JobRef{v.ID, e.Request}] = at
	}
	return touched, updateRequests(ctx, tx, []store.Column{{Name: "ended_at", Type: "TIMESTAMPTZ"}}, rows)
}

// usageByRequest is the usage a report gives each running request, per pool, over
// what the request last reported. Reports about reservations that ended are left out.
func usageByRequest(reported []UsageReport, byID map[int64]ReservationView) map[[2]int64]map[string]int64 {
	usage := map[[2]int64]map[string]int64{} // reservation, request: units per pool
	for _, u := range reported {
		v := byID[u.Reservation]
		if v.Status != ReservationAccepted {
			continue // a late report about a reservation that has ended
		}
		k := [2]int64{u.Reservation, int64(u.Request)}
		if usage[k] == nil {
			usage[k] = v.Requests[u.Request].UsageByPool()
			if usage[k] == nil {
				usage[k] = map[string]int64{}
			}
		}
		usage[k][u.Pool] = u.Units
	}
	return usage
}

// recordWaiting stores the tasks waiting in each running request's job.
func recordWaiting(ctx context.Context, tx *gorm.DB, waiting []WaitingReport, byID map[int64]ReservationView, now time.Time) error {
	var rows [][]any
	for _, w := range waiting {
		if byID[w.Reservation].Status != ReservationAccepted {
			continue
		}
		rows = append(rows, []any{w.Reservation, int64(w.Request), w.Tasks, now})
	}
	return updateRequests(ctx, tx, []store.Column{{Name: "waiting_tasks", Type: "BIGINT"}, {Name: "reported_at", Type: "TIMESTAMPTZ"}}, rows)
}

// settleEnded settles the charges of the reservations an end touched; those with
// nothing left to run are done.
func (s *Reservations) settleEnded(ctx context.Context, tx *gorm.DB, touched map[int64]bool, now time.Time, res *AgentResult) error {
	for id := range touched {
		vs, err := s.views(tx, tx.Where("id = ?", id), now)
		if err != nil || len(vs) == 0 {
			return err
		}
		done, err := s.settleCharges(ctx, tx, &vs[0], now, false)
		if err != nil {
			return err
		}
		if done {
			s.observeUse(vs[0])
			res.Ended = append(res.Ended, id)
			if err := tx.Model(&Reservation{}).Where("id = ?", id).Updates(map[string]any{"status": ReservationDone, "updated_at": now}).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

// applyReport records what re-planning did: moved reservations get their new
// starts; those at risk are no longer honoured.
func (s *Reservations) applyReport(ctx context.Context, tx *gorm.DB, p *plan, rep scheduler.Report, now time.Time, why string) error {
	for _, m := range rep.Moved {
		vs, err := s.views(tx, tx.Where("id = ?", m.Reservation), now)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if err := s.saveStarts(tx, p, v); err != nil {
				return err
			}
		}
	}
	for _, r := range rep.AtRisk {
		vs, err := s.views(tx, tx.Where("id = ? AND status = ?", r.ID, ReservationAccepted), now)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if err := s.finish(ctx, tx, &v, now, ReservationFailed, why); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyUse records what usage and early starts did to the plan: each reported
// request's usage with, when the plan holds it, the unit-slots it has not used
// so far (what the learned predictors are told when it leaves the plan), in one
// statement for all; and the new starts of requests started early.
func (s *Reservations) applyUse(ctx context.Context, tx *gorm.DB, p *plan, up scheduler.Update, out scheduler.Report, byID map[int64]ReservationView,
	usage map[[2]int64]map[string]int64, now time.Time, res *AgentResult) error {
	rows := make([][]any, 0, len(usage))
	for k, m := range usage {
		unused := byID[k[0]].Requests[k[1]].Unused // as stored, unless the plan holds the request
		if r, ok := p.eng.Reservation(k[0]); ok && r.Unused != nil && int(k[1]) < len(r.Unused) {
			unused = max(r.Unused[k[1]], 0)
		}
		rows = append(rows, []any{k[0], k[1], configJSON(m), unused, now})
	}
	set := []store.Column{{Name: "usage", Type: "TEXT"}, {Name: "unused", Type: "BIGINT"}, {Name: "reported_at", Type: "TIMESTAMPTZ"}}
	if err := updateRequests(ctx, tx, set, rows); err != nil {
		return err
	}
	refused := map[JobRef]bool{}
	for _, st := range out.Refused {
		k := JobRef{st.Reservation, st.Request}
		refused[k] = true
		res.Refused = append(res.Refused, k)
	}
	moved := map[int64]bool{}
	for _, st := range up.Starts {
		k := JobRef{st.Reservation, st.Request}
		if refused[k] {
			continue
		}
		res.Started = append(res.Started, k)
		if !moved[k.Reservation] {
			moved[k.Reservation] = true
			if err := s.saveStarts(tx, p, byID[k.Reservation]); err != nil {
				return err
			}
		}
	}
	return nil
}

// updateRequests sets the set columns of reservation requests, each row naming
// one request (reservation id, index, both int64) and then its values, in one
// statement on PostgreSQL. A request named twice takes its last row, as it
// would from one statement per row; rows go in key order, one lock order for
// every writer.
func updateRequests(ctx context.Context, tx *gorm.DB, set []store.Column, rows [][]any) error {
	key := func(r []any) [2]int64 { return [2]int64{r[0].(int64), r[1].(int64)} }
	last := map[[2]int64]int{}
	for i, r := range rows {
		last[key(r)] = i
	}
	once := make([][]any, 0, len(last))
	for i, r := range rows {
		if last[key(r)] == i {
			once = append(once, r)
		}
	}
	slices.SortFunc(once, func(a, b []any) int {
		ka, kb := key(a), key(b)
		return cmp.Or(cmp.Compare(ka[0], kb[0]), cmp.Compare(ka[1], kb[1]))
	})
	_, err := store.UpdateRows(ctx, tx, "reservation_requests",
		[]store.Column{{Name: "reservation_id", Type: "BIGINT"}, {Name: "idx", Type: "BIGINT"}}, set, once)
	return err
}
