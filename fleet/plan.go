package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// PlanConfig is the reservation plan's clock: slots of Slot, windows ending within
// Horizon of now.
type PlanConfig struct {
	Slot    time.Duration
	Horizon time.Duration
	// Period is what a pool's unit cost is per (the auction cadence): the default
	// price of a unit-slot is UnitCost * Slot / Period.
	Period time.Duration
}

// DefaultPlanConfig plans 14 days ahead in 5-minute slots.
var DefaultPlanConfig = PlanConfig{Slot: 5 * time.Minute, Horizon: 14 * 24 * time.Hour, Period: 24 * time.Hour}

// rebaseEvery is how often the in-memory plan moves its origin forward: it plans
// over Horizon plus this much, so a window may always end Horizon after now.
const rebaseEvery = 24 * time.Hour

// slotEpoch anchors absolute slots (a Monday, midnight UTC), so learned predictors
// keep their daily and weekly phase when the plan is rebuilt at another origin.
var slotEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Reservations is the service for short-term reservations. The database is the
// source of truth; the scheduler engine in memory is a cache of it, brought up to
// date whenever the plan's version in the database moved: by replaying what
// another server's write did (plan_changes.go), or by a rebuild after a
// settlement, an offer that sets quota aside, and once a day. Every write runs in
// one transaction that bumps the version, so writers are serialized across servers
// and a failed write leaves nothing behind: the engine is rebuilt from what
// committed.
type Reservations struct {
	db     *store.DB
	ledger *ledger.Ledger
	now    func() time.Time
	cfg    PlanConfig

	// writers lets one of this server's plan writes at a time wait for the
	// plan's row: they are serialized by it anyway, and one waiting there holds a
	// database connection, so a burst of them would take the whole pool and
	// pages would wait for a connection (PostgreSQL shares it between reads and
	// writes).
	writers chan struct{}

	mu         sync.Mutex
	plan       *plan
	updates    PlanUpdates        // how this server's plan was brought up to date
	learn      *learned           // the learned predictors as of the database's log (predictors.go)
	seasonal   *scheduler.Shifted // the plan's views of them, in its slots
	fractional *scheduler.Shifted
	observer   PlanObserver    // told of every plan update; nil: nobody
	notices    *notify.Service // teams told of reservations their cluster refused and of work beyond their limits
}

// NewReservations returns the reservation service on db, charging through l.
func NewReservations(db *store.DB, l *ledger.Ledger, now func() time.Time, cfg PlanConfig) *Reservations {
	if cfg.Slot <= 0 {
		cfg.Slot = DefaultPlanConfig.Slot
	}
	if cfg.Horizon <= 0 {
		cfg.Horizon = DefaultPlanConfig.Horizon
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultPlanConfig.Period
	}
	return &Reservations{db: db, ledger: l, now: func() time.Time { return now().UTC() }, cfg: cfg, writers: make(chan struct{}, 1),
		notices: notify.New(db, now)}
}

// UseNotices makes the service tell teams through n (the binary's one service,
// which queues e-mail when it is on) instead of its own, which keeps notifications in
// the app.
func (s *Reservations) UseNotices(n *notify.Service) { s.notices = n }

// Config is the plan's clock.
func (s *Reservations) Config() PlanConfig { return s.cfg }

// plan is the engine and the mapping between its slots and wall-clock time.
type plan struct {
	eng     *scheduler.Engine
	origin  time.Time
	slotLen time.Duration
	version int64
	pools   map[string]exchange.Pool
	ops     []planOp // what the current write did to eng, for the other servers (plan_changes.go)
}

// slot is the slot holding t (floor).
func (p *plan) slot(t time.Time) scheduler.Slot {
	d := t.Sub(p.origin)
	s := d / p.slotLen
	if d < 0 && d%p.slotLen != 0 {
		s--
	}
	return scheduler.Slot(s)
}

// ceil is the first slot starting at or after t.
func (p *plan) ceil(t time.Time) scheduler.Slot {
	s := p.slot(t)
	if p.at(s).Before(t) {
		s++
	}
	return s
}

// at is when slot s starts.
func (p *plan) at(s scheduler.Slot) time.Time { return p.origin.Add(time.Duration(s) * p.slotLen) }

// slots is how many slots a duration in seconds takes.
func (p *plan) slots(seconds int64) scheduler.Slot {
	return scheduler.Slot(ceilDiv(time.Duration(seconds)*time.Second, p.slotLen))
}

// bumpPlan marks the plan changed, inside tx: every server rebuilds its engine
// before its next reservation call.
func bumpPlan(tx *gorm.DB) error { return exchange.MarkPlanChanged(tx) }

// write runs fn in one transaction with an engine that matches the database, and
// moves the plan's version, recording what fn did to the engine so that every
// other server replays it (plan_changes.go). A failed fn rolls
// back and drops the engine (it may hold fn's uncommitted changes); the next call
// rebuilds it.
func (s *Reservations) write(ctx context.Context, fn func(tx *gorm.DB, p *plan, now time.Time) error) error {
	return s.transact(ctx, true, fn)
}

// refresh is write without moving the version: for work other servers' engines do
// not depend on (bringing this server's engine up to date, charging slots that
// passed). The version still moves when the rebuild itself recorded a change.
func (s *Reservations) refresh(ctx context.Context, fn func(tx *gorm.DB, p *plan, now time.Time) error) error {
	return s.transact(ctx, false, fn)
}

func (s *Reservations) transact(ctx context.Context, bump bool, fn func(tx *gorm.DB, p *plan, now time.Time) error) error {
	select {
	case s.writers <- struct{}{}:
		defer func() { <-s.writers }()
	case <-ctx.Done():
		return ctx.Err()
	}
	now := s.now()
	var version int64
	start, reloaded := time.Now(), false // for the observer: whether the plan was rebuilt from the database
	// The server's lock is taken after the plan's row lock, so this server's
	// readers never wait for another server's write to reach the row.
	locked := false
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// The row lock serializes the plan's writers across servers.
		lock := "UPDATE plan_state SET version = version WHERE id = 1 RETURNING version"
		if bump {
			lock = "UPDATE plan_state SET version = version + 1 WHERE id = 1 RETURNING version"
		}
		if err := tx.Raw(lock).Scan(&version).Error; err != nil {
			return err
		}
		s.mu.Lock()
		locked = true
		seen := version
		if bump {
			seen--
		}
		if err := s.syncLearned(tx, now); err != nil {
			return err
		}
		if s.plan != nil && s.plan.version != seen && !s.rebaseDue(now) {
			if err := catchUp(tx, s.plan, seen); err != nil {
				// Too far behind, or a change replay cannot follow; a database error
				// surfaces again in the rebuild.
				s.plan = nil // half replayed: rebuilt below
			} else {
				s.updates.Replayed++
			}
		}
		rebuilt := false
		if s.stale(seen, now) {
			s.plan, reloaded = nil, true
			p, changed, err := s.load(ctx, tx, now)
			if err != nil {
				return err
			}
			s.plan = p
			s.updates.Rebuilt++
			if changed {
				rebuilt = true // other servers must rebuild too: no operations to replay
				if !bump {
					version++
					if err := bumpPlan(tx); err != nil {
						return err
					}
				}
			}
		}
		s.plan.ops = nil
		if err := fn(tx, s.plan, now); err != nil {
			return err
		}
		// A write that dropped the plan (a pricing policy changed what it is built
		// from) leaves no operations: the other servers rebuild too.
		if s.plan != nil && bump && !rebuilt {
			if err := recordChange(tx, s.plan, version, now); err != nil {
				return err
			}
		}
		if s.plan != nil {
			s.plan.ops = nil
		}
		if err := s.storeLost(tx, s.plan, now); err != nil {
			return err
		}
		return s.flushLearned(tx)
	})
	if !locked {
		s.mu.Lock()
		locked = true
	}
	if err != nil {
		s.plan, s.learn = nil, nil
		return err
	}
	if s.plan != nil {
		s.plan.version = version
	}
	if s.observer != nil {
		s.observer.PlanUpdated(reloaded, time.Since(start))
	}
	return nil
}

// read runs fn on an engine that matches the database, bringing it up to date
// first when it is stale.
func (s *Reservations) read(ctx context.Context, fn func(p *plan, now time.Time) error) error {
	db := s.db.Read.WithContext(ctx)
	version, learnt, err := planVersions(db)
	if err != nil {
		return err
	}
	// Other servers' writes, replayed from what they recorded: no lock on the
	// plan's row is needed to read committed versions, and they are read before
	// the server's lock is taken, so that this server's writer (which holds the
	// plan's row while it waits for that lock) and pages never wait for the
	// query. When the plan moved meanwhile, what it lacks is replayed from them,
	// or read again.
	s.mu.Lock()
	from := int64(-1)
	if s.plan != nil && s.plan.version < version && version-s.plan.version <= maxCatchUp {
		from = s.plan.version
	}
	s.mu.Unlock()
	var changes []planChange
	if from >= 0 {
		changes, _ = changesBetween(db, from, version) // on an error: read again below
	}
	s.mu.Lock()
	now := s.now()
	if s.plan != nil && s.plan.version < version && !s.rebaseDue(now) {
		var err error
		if len(changes) > 0 && changes[0].Version <= s.plan.version+1 {
			err = replayChanges(s.plan, changes, version)
		} else {
			err = catchUp(db, s.plan, version)
		}
		if err != nil {
			s.plan = nil
		} else {
			s.updates.Replayed++
		}
	}
	// A plan ahead of version is newer than what was read: up to date.
	stale := s.plan == nil || s.plan.version < version || s.rebaseDue(now) || s.learn == nil || s.learn.upto != learnt
	s.mu.Unlock()
	if stale {
		if err := s.refresh(ctx, func(*gorm.DB, *plan, time.Time) error { return nil }); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plan == nil {
		return clearhouse.Errorf(clearhouse.EINTERNAL, "the reservation plan could not be loaded")
	}
	return fn(s.plan, s.now())
}

// Follow brings this server's plan up to date with the database, as every read does
// first: it replays what other servers wrote, or builds the plan from every
// reservation on a server's first call and after a settlement (about a second at
// 10,000 reservations). A server calls it when it starts and on every tick, so that
// this work is done before a page or an agent's report would wait for it.
func (s *Reservations) Follow(ctx context.Context) error {
	return s.read(ctx, func(*plan, time.Time) error { return nil })
}

func (s *Reservations) stale(version int64, now time.Time) bool {
	return s.plan == nil || s.plan.version != version || s.rebaseDue(now)
}

// rebaseDue reports whether the plan's origin must move: it is a day old, or
// after now (the clock went back).
func (s *Reservations) rebaseDue(now time.Time) bool {
	return s.plan == nil || now.Sub(s.plan.origin) >= rebaseEvery || now.Before(s.plan.origin)
}

// QuotaRow is a team's quota of a pool for the scheduler: what it holds less what
// it has set aside for open offers.
type QuotaRow struct {
	TeamID string
	PoolID string
	Quota  int64
}

// Quotas lists every team's quota of each pool it holds, by team and pool; the
// best-effort step reads it as owners' quotas too.
func Quotas(tx *gorm.DB) ([]QuotaRow, error) {
	var rows []QuotaRow
	err := tx.Raw(`SELECT h.team_id, h.pool_id, h.quantity - COALESCE((SELECT SUM(q.quantity) FROM quota_holds q
		WHERE q.team_id = h.team_id AND q.pool_id = h.pool_id), 0) AS quota
		FROM holdings h WHERE h.quantity > 0 ORDER BY h.team_id, h.pool_id`).Scan(&rows).Error
	return rows, err
}

// CapacityChange is a capacity change a cluster agent reported: the pool has Units
// over [FromAt, ToAt).
type CapacityChange struct {
	ID         int64
	PoolID     string
	FromAt     time.Time
	ToAt       time.Time
	Units      int64
	ReportedAt time.Time
}

// TableName is the capacity_changes table.
func (CapacityChange) TableName() string { return "capacity_changes" }

// load builds the engine from the database at now: pools and their policies with
// their capacity (planCapacity, an override until it expires), quotas from
// holdings, reported capacity changes, then every accepted
// reservation in id order. A reservation that no longer fits where it was is moved
// inside its windows, or fails (recorded, its charge settled); nothing is dropped
// silently.
func (s *Reservations) load(ctx context.Context, tx *gorm.DB, now time.Time) (*plan, bool, error) {
	p := &plan{origin: now.Truncate(s.cfg.Slot), slotLen: s.cfg.Slot, pools: map[string]exchange.Pool{}}
	horizon := scheduler.Slot(ceilDiv(s.cfg.Horizon+rebaseEvery, s.cfg.Slot))
	var pools []exchange.Pool
	if err := tx.Order("id").Find(&pools).Error; err != nil {
		return nil, false, err
	}
	caps, err := exchange.PoolCapacities(tx, now)
	if err != nil {
		return nil, false, err
	}
	byPool := make(map[string]exchange.PoolCapacity, len(caps))
	for _, c := range caps {
		byPool[c.Pool] = c
	}
	capacity := map[string]int64{}
	for _, pl := range pools {
		p.pools[pl.ID] = pl
		capacity[pl.ID] = planCapacity(byPool[pl.ID])
	}
	algo, err := s.algorithm(tx, pools, p.origin)
	if err != nil {
		return nil, false, err
	}
	p.eng = scheduler.NewEngine(horizon, capacity, algo)
	for _, c := range caps { // an override holds until it expires, then the measured capacity again
		if _, known := capacity[c.Pool]; !known || c.Override == nil {
			continue
		}
		if to := min(p.ceil(*c.OverrideExpires), horizon); to > 0 {
			if _, err := p.eng.Update(0, scheduler.Update{Capacity: []scheduler.CapacityChange{{Pool: c.Pool, From: 0, To: to, Units: min(*c.Override, c.Configured)}}}); err != nil {
				return nil, false, fmt.Errorf("capacity override of %s: %w", c.Pool, err)
			}
		}
	}

	qs, err := Quotas(tx)
	if err != nil {
		return nil, false, err
	}
	for _, q := range qs {
		// Holdings never exceed a pool's capacity unless an operator shrank it; the
		// scheduler then guarantees what is left.
		units := min(q.Quota, p.eng.Free(q.PoolID, 0, horizon))
		if units > 0 {
			if _, err := p.eng.SetQuota(0, q.TeamID, q.PoolID, 0, 0, units); err != nil {
				return nil, false, fmt.Errorf("quota of %s in %s: %w", q.TeamID, q.PoolID, err)
			}
		}
	}
	var changes []CapacityChange
	if err := tx.Where("to_at > ?", p.origin).Order("id").Find(&changes).Error; err != nil {
		return nil, false, err
	}
	for _, c := range changes {
		from, to := max(p.slot(c.FromAt), 0), min(p.ceil(c.ToAt), horizon)
		if _, known := capacity[c.PoolID]; !known || from >= to {
			continue
		}
		if _, err := p.eng.Update(0, scheduler.Update{Capacity: []scheduler.CapacityChange{{Pool: c.PoolID, From: from, To: to, Units: c.Units}}}); err != nil {
			return nil, false, fmt.Errorf("capacity change %d: %w", c.ID, err)
		}
	}

	views, err := s.views(tx, tx.Where("status = ?", ReservationAccepted), now)
	if err != nil {
		return nil, false, err
	}
	nowSlot := p.slot(now)
	changed := false
	var usage scheduler.Update
	for _, v := range views {
		er := p.engineReservation(v)
		usage.Usage = append(usage.Usage, p.currentUsage(v, &er, nowSlot)...)
		moved, err := p.eng.RestoreAt(nowSlot, er)
		if err != nil {
			if err := s.finish(ctx, tx, &v, now, ReservationFailed, "no longer fits in its windows: the pool's capacity or the team's quota fell"); err != nil {
				return nil, false, err
			}
			if err := loseReservation(tx, v, now); err != nil {
				return nil, false, err
			}
			changed = true
			continue
		}
		if moved {
			if err := s.saveStarts(tx, p, v); err != nil {
				return nil, false, err
			}
			changed = true
		}
	}
	// A reservation cancelled, or ended early, in the current slot is charged to
	// the slot's end and holds it, as the server that cancelled it or took the
	// end left it: one that ended stays in the plan until the tick retires it, a
	// cancelled one leaves it, so no agent is told to run it.
	over, err := s.views(tx, tx.Where("status IN ? AND updated_at >= ?",
		[]ReservationStatus{ReservationCancelled, ReservationDone}, p.at(nowSlot)), now)
	if err != nil {
		return nil, false, err
	}
	for _, v := range over {
		er := p.engineReservation(v)
		use := p.currentUsage(v, &er, nowSlot)
		if err := p.eng.Restore(er); err != nil {
			continue // the slot is nearly over: not worth failing the rebuild for
		}
		if len(use) > 0 {
			_, _ = p.eng.Update(nowSlot, scheduler.Update{Usage: use})
		}
		if v.Status == ReservationCancelled {
			_ = p.eng.Cancel(p.ceil(now), v.ID)
		}
	}
	// Under-use reported in the current slot goes back to the plan here too.
	for _, u := range usage.Usage {
		if _, ok := p.eng.Reservation(u.Reservation); ok {
			if _, err := p.eng.Update(nowSlot, scheduler.Update{Usage: []scheduler.Usage{u}}); err != nil {
				return nil, false, fmt.Errorf("usage of reservation %d: %w", u.Reservation, err)
			}
		}
	}
	return p, changed, nil
}

// currentUsage is the usage v's cluster reported in slot now for its requests
// running then, to return to a rebuilt plan what they do not use; er's unused
// unit-slots are lowered by what that returns, which the engine counts again.
func (p *plan) currentUsage(v ReservationView, er *scheduler.Reservation, now scheduler.Slot) []scheduler.Usage {
	var out []scheduler.Usage
	for i, q := range v.Requests {
		if q.ReportedAt == nil || p.slot(*q.ReportedAt) != now || q.Usage == nil || er.Starts[i] > now || now >= er.End(i) {
			continue
		}
		for pool, units := range q.UsageByPool() {
			out = append(out, scheduler.Usage{Reservation: v.ID, Request: i, Pool: pool, Units: units})
			if er.Unused != nil {
				er.Unused[i] = max(er.Unused[i]-max(er.Requests[i].Units(pool)-units, 0), 0)
			}
		}
	}
	return out
}

// engineReservation is a stored reservation in the engine's slots. Requests that
// started before the plan's origin are cut to the part from the origin on (they
// are running and never move).
func (p *plan) engineReservation(v ReservationView) scheduler.Reservation {
	er := scheduler.Reservation{ID: v.ID, Owner: v.TeamID, Price: v.Price.Dollars(), Language: scheduler.BidLanguage(v.Language)}
	if v.Value != nil {
		er.Value = v.Value.Dollars()
	}
	ended := false
	for _, q := range v.Requests {
		dur := p.slots(q.Duration)
		start := p.slot(*q.StartAt)
		end := start + dur
		endAt := scheduler.Slot(-1)
		if q.EndedAt != nil {
			endAt, ended = min(max(p.ceil(*q.EndedAt), start), end), true
		}
		req := scheduler.Request{Config: q.Config(), Count: q.Count, Duration: dur, Overhead: q.OverheadByPool(),
			Arrival: min(max(p.ceil(q.Arrival), 0), start), Deadline: max(p.slot(q.Deadline), end)}
		if start < 0 {
			req.Arrival, start = 0, 0
			effective := end
			if endAt >= 0 {
				effective = endAt
			}
			if effective <= 0 { // finished before the origin: takes nothing
				req.Duration, req.Deadline, endAt, ended = 1, max(req.Deadline, 1), 0, true
			} else {
				req.Duration = end
			}
		}
		er.Requests = append(er.Requests, req)
		er.Starts = append(er.Starts, start)
		er.Ended = append(er.Ended, endAt)
	}
	if !ended {
		er.Ended = nil
	}
	if er.Language == scheduler.BidOrderNoGap && len(er.Starts) > 0 && er.Starts[0] == 0 && p.slot(*v.Requests[0].StartAt) < 0 {
		// Its train started before the origin and was cut there: it is kept in order
		// (its running requests are fixed) but can no longer be checked gap by gap.
		er.Language = scheduler.BidOrder
	}
	for i, q := range v.Requests {
		if q.Unused > 0 {
			if er.Unused == nil {
				er.Unused = make([]int64, len(v.Requests))
			}
			er.Unused[i] = q.Unused
		}
	}
	return er
}

// saveStarts records where the engine now plans a reservation's requests that
// have not started.
func (s *Reservations) saveStarts(tx *gorm.DB, p *plan, v ReservationView) error {
	r, ok := p.eng.Reservation(v.ID)
	if !ok {
		return nil
	}
	for i, q := range v.Requests {
		at := p.at(r.Starts[i])
		if q.StartAt != nil && (q.StartAt.Before(p.origin) || q.StartAt.Equal(at)) {
			continue
		}
		if err := tx.Model(&ReservationRequest{}).Where("reservation_id = ? AND idx = ?", v.ID, i).Update("start_at", at).Error; err != nil {
			return err
		}
	}
	return nil
}

// views loads the reservations q selects with their requests.
func (s *Reservations) views(tx *gorm.DB, q *gorm.DB, now time.Time) ([]ReservationView, error) {
	var rs []Reservation
	if err := q.Order("id").Find(&rs).Error; err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	byID := map[int64][]ReservationRequest{}
	for part := range slices.Chunk(ids, 500) {
		var reqs []ReservationRequest
		if err := tx.Where("reservation_id IN ?", part).Order("reservation_id, idx").Find(&reqs).Error; err != nil {
			return nil, err
		}
		for _, q := range reqs {
			byID[q.ReservationID] = append(byID[q.ReservationID], q)
		}
	}
	out := make([]ReservationView, len(rs))
	for i, r := range rs {
		out[i] = ReservationView{Reservation: r, Requests: byID[r.ID], Phase: phase(r, byID[r.ID], now)}
	}
	return out, nil
}

func configJSON(c map[string]int64) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// planCapacity is a pool's capacity for the reservation plan, an override aside:
// the configured capacity, or the measured one when the cluster's agent measured
// less. Reservations are sold from it, so the plan never sells what the cluster does
// not have; a cluster measured larger than configured keeps its configured plan.
func planCapacity(c exchange.PoolCapacity) int64 {
	if c.Measured != nil {
		return min(c.Configured, *c.Measured)
	}
	return c.Configured
}
