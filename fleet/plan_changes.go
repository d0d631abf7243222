package fleet

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse/scheduler"
	"gorm.io/gorm"
)

// How servers learn of each other's plan writes (issue 25). Every reservation
// write moves the plan's version and records, in the same transaction, what it
// did to its engine: the operations below, in wall-clock times (each server's
// plan has its own origin). A server whose plan is a few versions behind replays
// those operations on its engine, in version order, instead of rebuilding it from
// every reservation: an agent's report costs the other servers what it cost the
// server that took it. Starting from the same engine, replaying the same
// operations gives the same engine (the scheduler is deterministic), so every
// server plans exactly what the writer planned.
//
// A server rebuilds instead when a version has no row (a settlement, an offer or
// a quota grant moved it: exchange.MarkPlanChanged), when it is more than
// maxCatchUp versions behind, when its plan is a day old, or when an operation
// does not replay cleanly.
//
// Replaying never learns twice: a reservation is restored, not priced again (so
// the learned predictors, kept in the database, see each bid once), and value the
// replayed re-planning records as lost is dropped (the writer stored it).

// maxCatchUp is how many versions a server replays at most; further behind, it
// rebuilds. keepChanges is how many versions of operations the tick keeps.
const (
	maxCatchUp  = 2000
	keepChanges = 2 * maxCatchUp
)

// errCatchUp says the plan cannot be brought up to date by replay: rebuild it.
var errCatchUp = errors.New("plan: rebuild")

// PlanUpdates counts how a server brought its plan up to date with the
// database: by replaying other servers' writes, or by rebuilding it.
type PlanUpdates struct {
	Replayed int64 // catch-ups by replay (each of one or more versions)
	Rebuilt  int64 // rebuilds from every reservation
}

// Updates says how this server's plan has been brought up to date so far.
func (s *Reservations) Updates() PlanUpdates {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates
}

// planChange is a row of plan_changes: the operations the write that made Version
// applied to its engine.
type planChange struct {
	Version   int64
	Body      string
	CreatedAt time.Time
}

// TableName is the plan_changes table.
func (planChange) TableName() string { return "plan_changes" }

// planOp is one engine operation: Kind "reserve" (Reservation placed as it is),
// "cancel" (reservation ID from the slot starting At) or "update" (an agent's
// Update at Now).
type planOp struct {
	Kind        string         `json:"kind"`
	Now         time.Time      `json:"now"`
	Reservation *opReservation `json:"reservation,omitempty"`
	ID          int64          `json:"id,omitempty"`
	At          time.Time      `json:"at,omitzero"`
	Update      *opUpdate      `json:"update,omitempty"`
}

type opRequest struct {
	Config   map[string]int64 `json:"config"`
	Overhead map[string]int64 `json:"overhead,omitempty"`
	Count    int64            `json:"count"`
	Duration scheduler.Slot   `json:"duration"`
	Arrival  time.Time        `json:"arrival"`
	Deadline time.Time        `json:"deadline"`
}

type opReservation struct {
	ID       int64                 `json:"id"`
	Owner    string                `json:"owner"`
	Requests []opRequest           `json:"requests"`
	Starts   []time.Time           `json:"starts"`
	Price    float64               `json:"price"`
	Value    float64               `json:"value"`
	Decided  time.Time             `json:"decided"`
	Language scheduler.BidLanguage `json:"language"`
	Chosen   int                   `json:"chosen"`
}

type opJob struct {
	Reservation int64     `json:"reservation"`
	Request     int       `json:"request"`
	At          time.Time `json:"at"`
}

// opUpdate is a scheduler.Update in times; capacity changes keep the times the
// agent reported, clipped to each server's horizon as a rebuild clips them.
type opUpdate struct {
	Capacity []CapacityReport  `json:"capacity,omitempty"`
	Ends     []opJob           `json:"ends,omitempty"`
	Starts   []opJob           `json:"starts,omitempty"`
	Usage    []scheduler.Usage `json:"usage,omitempty"`
}

// makeReservation is Engine.MakeReservation, recorded when accepted.
func (p *plan) makeReservation(now scheduler.Slot, bid scheduler.Bid) (scheduler.Reservation, bool, error) {
	r, ok, err := p.eng.MakeReservation(now, bid)
	if err == nil && ok {
		op := opReservation{ID: r.ID, Owner: r.Owner, Price: r.Price, Value: r.Value, Decided: p.at(r.Decided), Language: r.Language, Chosen: r.Chosen}
		for i, q := range r.Requests {
			op.Requests = append(op.Requests, opRequest{Config: q.Config, Overhead: q.Overhead, Count: q.Count, Duration: q.Duration,
				Arrival: p.at(q.Arrival), Deadline: p.at(q.Deadline)})
			op.Starts = append(op.Starts, p.at(r.Starts[i]))
		}
		p.ops = append(p.ops, planOp{Kind: "reserve", Now: p.at(now), Reservation: &op})
	}
	return r, ok, err
}

// cancel is Engine.Cancel, recorded when it cancelled.
func (p *plan) cancel(at scheduler.Slot, id int64) error {
	err := p.eng.Cancel(at, id)
	if err == nil {
		p.ops = append(p.ops, planOp{Kind: "cancel", At: p.at(at), ID: id})
	}
	return err
}

// update is Engine.Update with capacity reported in times (clipped to the plan's
// horizon here), recorded when it applied.
func (p *plan) update(now scheduler.Slot, up scheduler.Update, capacity []CapacityReport) (scheduler.Report, error) {
	horizon := p.eng.Horizon()
	for _, c := range capacity {
		from, to := max(p.slot(c.From), 0), min(p.ceil(c.To), horizon)
		if from < to {
			up.Capacity = append(up.Capacity, scheduler.CapacityChange{Pool: c.Pool, From: from, To: to, Units: c.Units})
		}
	}
	out, err := p.eng.Update(now, up)
	if err != nil {
		return out, err
	}
	op := opUpdate{Capacity: capacity, Usage: up.Usage}
	for _, e := range up.Ends {
		op.Ends = append(op.Ends, opJob{Reservation: e.Reservation, Request: e.Request, At: p.at(e.At)})
	}
	for _, s := range up.Starts {
		op.Starts = append(op.Starts, opJob{Reservation: s.Reservation, Request: s.Request, At: p.at(s.At)})
	}
	p.ops = append(p.ops, planOp{Kind: "update", Now: p.at(now), Update: &op})
	return out, nil
}

// replay applies one recorded operation to p's engine. Any error means p no
// longer matches the database: the caller drops it.
func (p *plan) replay(op planOp) error {
	switch op.Kind {
	case "reserve":
		o := op.Reservation
		if o == nil {
			return fmt.Errorf("%w: reserve without a reservation", errCatchUp)
		}
		r := scheduler.Reservation{ID: o.ID, Owner: o.Owner, Price: o.Price, Value: o.Value, Decided: p.slot(o.Decided), Language: o.Language, Chosen: o.Chosen}
		for i, q := range o.Requests {
			r.Requests = append(r.Requests, scheduler.Request{Config: q.Config, Overhead: q.Overhead, Count: q.Count, Duration: q.Duration,
				Arrival: p.slot(q.Arrival), Deadline: p.slot(q.Deadline)})
			if i < len(o.Starts) {
				r.Starts = append(r.Starts, p.slot(o.Starts[i]))
			}
		}
		return p.eng.Restore(r)
	case "cancel":
		return p.eng.Cancel(p.slot(op.At), op.ID)
	case "update":
		if op.Update == nil {
			return fmt.Errorf("%w: update without an update", errCatchUp)
		}
		now := p.slot(op.Now)
		if now < 0 {
			return fmt.Errorf("%w: an update before the plan's origin", errCatchUp)
		}
		up := scheduler.Update{Usage: op.Update.Usage}
		for _, e := range op.Update.Ends {
			up.Ends = append(up.Ends, scheduler.JobEnd{Reservation: e.Reservation, Request: e.Request, At: p.slot(e.At)})
		}
		for _, s := range op.Update.Starts {
			up.Starts = append(up.Starts, scheduler.JobStart{Reservation: s.Reservation, Request: s.Request, At: p.slot(s.At)})
		}
		_, err := p.update(now, up, op.Update.Capacity)
		return err
	}
	return fmt.Errorf("%w: unknown operation %q", errCatchUp, op.Kind)
}

// catchUp brings p from its version to version by replaying the operations
// recorded in between, inside tx (which holds the plan's row lock). errCatchUp,
// or any error, means the caller must rebuild: p may be half updated.
func catchUp(tx *gorm.DB, p *plan, version int64) error {
	if version < p.version || version-p.version > maxCatchUp {
		return errCatchUp
	}
	rows, err := changesBetween(tx, p.version, version)
	if err != nil {
		return err
	}
	return replayChanges(p, rows, version)
}

// changesBetween reads the rows recorded for versions after from, up to to, in
// order.
func changesBetween(tx *gorm.DB, from, to int64) ([]planChange, error) {
	var rows []planChange
	err := tx.Where("version > ? AND version <= ?", from, to).Order("version").Find(&rows).Error
	return rows, err
}

// replayChanges brings p to version by replaying rows, the rows of the versions
// after p's (those of versions p already has are skipped). errCatchUp, or any
// error, means the caller must rebuild: p may be half updated.
func replayChanges(p *plan, rows []planChange, version int64) error {
	if version < p.version {
		return errCatchUp
	}
	first, _ := slices.BinarySearchFunc(rows, p.version+1, func(r planChange, v int64) int { return cmp.Compare(r.Version, v) })
	rows = rows[first:]
	if int64(len(rows)) != version-p.version || (len(rows) > 0 && rows[len(rows)-1].Version != version) {
		return errCatchUp // a version without a row: a change replay cannot follow
	}
	for _, row := range rows {
		var ops []planOp
		if err := json.Unmarshal([]byte(row.Body), &ops); err != nil {
			return fmt.Errorf("plan change %d: %w", row.Version, err)
		}
		for _, op := range ops {
			if err := p.replay(op); err != nil {
				return err
			}
		}
	}
	p.eng.TakeLostValue() // the writer stored what its re-planning lost
	p.ops, p.version = nil, version
	return nil
}

// recordChange stores the operations a write applied, as the row of version.
func recordChange(tx *gorm.DB, p *plan, version int64, now time.Time) error {
	ops := p.ops
	if ops == nil {
		ops = []planOp{}
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return tx.Create(&planChange{Version: version, Body: string(b), CreatedAt: now}).Error
}

// pruneChanges keeps the newest keepChanges versions' operations.
func pruneChanges(tx *gorm.DB) error {
	return tx.Exec("DELETE FROM plan_changes WHERE version <= (SELECT version FROM plan_state WHERE id = 1) - ?", keepChanges).Error
}
