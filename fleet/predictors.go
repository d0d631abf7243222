package fleet

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/scheduler"
	"gorm.io/gorm"
)

// The learned predictors live in the database, not in a server's memory: a
// snapshot of their state as of one observation (predictor_state) and the log of
// observations made since (predictor_observations: each decided bid, and what each
// reservation used when it left the plan), in the order the plan's writers made
// them. Every writer holds the plan's row lock, so the log's order is the order
// the observations were made in on every server. A server brings its predictors up
// to date before every write and before a read when the log has grown: it
// restores the snapshot when it has none or the snapshot is newer than what it
// applied, then applies the observations after it. Two servers that applied the
// same log hold equal predictors and quote identical prices; a restart loses
// nothing. A failed write drops the server's predictors (they may have learned from
// what did not commit); the next call restores them.
//
// The log is folded into the snapshot (compactLearned) by the plan's tick once it
// holds compactAfter observations or a day has passed, so the database keeps a
// snapshot and at most about a day of observations.
//
// The LP-based predictor learns every bid but never refits inline (a refit solves
// the allocation of a week of bids: about a second on 10,000): the tick refits it
// when a refit is due (refitLearned) and records that in the log as a demand with
// no requests, so every server's copy refits at the same point of the log, and
// folds the log into the snapshot at once, so other servers load the solved model
// instead of solving it again.

// compactAfter is how many observations the log holds before the tick folds them
// into the snapshot.
const compactAfter = 1000

// predictorStateRow is the one row of predictor_state: the learned predictors'
// state after observation Upto (State "" before anything was learned).
type predictorStateRow struct {
	ID        int
	Upto      int64
	State     string
	UpdatedAt time.Time
}

// TableName is the predictor_state table.
func (predictorStateRow) TableName() string { return "predictor_state" }

// PredictorObservation is one observation in the learned predictors' log: Kind
// "demand" (Body a scheduler.Demand) or "use" (Body a scheduler.Use), in absolute
// slots (slot 0 starts at slotEpoch).
type PredictorObservation struct {
	ID        int64
	Kind      string
	Body      string
	CreatedAt time.Time
}

// TableName is the predictor_observations table.
func (PredictorObservation) TableName() string { return "predictor_observations" }

// learnedState is what the snapshot holds.
type learnedState struct {
	Seasonal   scheduler.PredictorState `json:"seasonal"`
	Fractional scheduler.PredictorState `json:"fractional"`
}

// learned is a server's copy of the learned predictors, in absolute slots.
type learned struct {
	seasonal   *scheduler.Seasonal
	fractional *scheduler.Fractional
	upto       int64 // the last observation applied
	pending    []PredictorObservation
	fresh      int // bids applied since the LP-based predictor's last refit (or the restore)
}

// apply teaches both predictors one observation.
func (l *learned) apply(o PredictorObservation) error {
	switch o.Kind {
	case "demand":
		var d scheduler.Demand
		if err := json.Unmarshal([]byte(o.Body), &d); err != nil {
			return fmt.Errorf("predictor observation %d: %w", o.ID, err)
		}
		if len(d.Requests) == 0 { // the tick's refit of the LP-based predictor
			l.fractional.Refit(d.Now)
			l.fresh = 0
			return nil
		}
		l.seasonal.Observe(d)
		l.fractional.Observe(d)
		l.fresh++
	case "use":
		var u scheduler.Use
		if err := json.Unmarshal([]byte(o.Body), &u); err != nil {
			return fmt.Errorf("predictor observation %d: %w", o.ID, err)
		}
		l.seasonal.ObserveUse(u)
		l.fractional.ObserveUse(u)
	default:
		return fmt.Errorf("predictor observation %d: unknown kind %q", o.ID, o.Kind)
	}
	return nil
}

// record applies a new observation and keeps it to be stored when the write
// commits.
func (l *learned) record(kind string, body any, now time.Time) {
	b, err := json.Marshal(body)
	if err != nil {
		return // plain values: never happens
	}
	o := PredictorObservation{Kind: kind, Body: string(b), CreatedAt: now}
	if l.apply(o) == nil {
		l.pending = append(l.pending, o)
	}
}

func (l *learned) state() (string, error) {
	var st learnedState
	var err error
	if st.Seasonal, err = scheduler.SavePredictor(l.seasonal); err != nil {
		return "", err
	}
	if st.Fractional, err = scheduler.SavePredictor(l.fractional); err != nil {
		return "", err
	}
	b, err := json.Marshal(st)
	return string(b), err
}

// restoreLearned builds predictors from the snapshot row; before anything was
// learned it builds fresh ones (the LP-based one on the pools' capacities) and
// stores them as the snapshot, so every server starts from the same state.
func (s *Reservations) restoreLearned(tx *gorm.DB, row predictorStateRow, now time.Time) (*learned, error) {
	l := &learned{upto: row.Upto}
	if row.State == "" {
		var pools []exchange.Pool
		if err := tx.Order("id").Find(&pools).Error; err != nil {
			return nil, err
		}
		capacity := map[string]int64{}
		for _, p := range pools {
			capacity[p.ID] = p.Capacity
		}
		secs := int(s.cfg.Slot / time.Second)
		l.seasonal, l.fractional = scheduler.NewSeasonal(secs), scheduler.NewFractional(secs, capacity)
		l.fractional.Inline = false
		st, err := l.state()
		if err != nil {
			return nil, err
		}
		return l, tx.Model(&predictorStateRow{}).Where("id = 1").Updates(map[string]any{"state": st, "updated_at": now}).Error
	}
	var st learnedState
	if err := json.Unmarshal([]byte(row.State), &st); err != nil {
		return nil, fmt.Errorf("predictor state: %w", err)
	}
	p, err := scheduler.RestorePredictor(st.Seasonal)
	if err != nil {
		return nil, fmt.Errorf("predictor state: %w", err)
	}
	q, err := scheduler.RestorePredictor(st.Fractional)
	if err != nil {
		return nil, fmt.Errorf("predictor state: %w", err)
	}
	var ok1, ok2 bool
	l.seasonal, ok1 = p.(*scheduler.Seasonal)
	l.fractional, ok2 = q.(*scheduler.Fractional)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("predictor state: kinds %s and %s are not seasonal and fractional", st.Seasonal.Kind, st.Fractional.Kind)
	}
	l.fractional.Inline = false
	return l, nil
}

// refitLearned refits the LP-based predictor when a refit is due, inside the
// tick's transaction after syncLearned: the refit is recorded and stored at once
// and the log folded into the snapshot.
func (s *Reservations) refitLearned(tx *gorm.DB, now time.Time) error {
	at := s.absSlot(now)
	if s.learn == nil || s.learn.fresh == 0 || !s.learn.fractional.RefitDue(at) {
		return nil
	}
	s.learn.record("demand", scheduler.Demand{Now: at}, now)
	if err := s.flushLearned(tx); err != nil {
		return err
	}
	return s.foldLearned(tx, now)
}

// syncLearned brings the server's predictors up to date with the database, inside
// the plan's write lock, and points the plan's price views at them.
// It reads the snapshot and the log only when they hold what the server has not
// applied: a write usually costs one small statement here.
func (s *Reservations) syncLearned(tx *gorm.DB, now time.Time) error {
	var v struct{ Upto, Obs int64 }
	got := tx.Raw(`SELECT upto, (SELECT COALESCE(MAX(id), 0) FROM predictor_observations) AS obs
		FROM predictor_state WHERE id = 1`).Scan(&v)
	if got.Error != nil {
		return fmt.Errorf("predictor state: %w", got.Error)
	}
	if got.RowsAffected == 0 {
		return fmt.Errorf("predictor state: %w", gorm.ErrRecordNotFound)
	}
	if s.learn == nil || v.Upto > s.learn.upto {
		var row predictorStateRow
		if err := tx.Take(&row, 1).Error; err != nil {
			return fmt.Errorf("predictor state: %w", err)
		}
		l, err := s.restoreLearned(tx, row, now)
		if err != nil {
			return err
		}
		s.learn = l
	}
	var obs []PredictorObservation
	if v.Obs > s.learn.upto {
		if err := tx.Where("id > ?", s.learn.upto).Order("id").Find(&obs).Error; err != nil {
			return err
		}
	}
	for _, o := range obs {
		if err := s.learn.apply(o); err != nil {
			return err
		}
		s.learn.upto = o.ID
	}
	if s.seasonal == nil {
		s.seasonal, s.fractional = &scheduler.Shifted{}, &scheduler.Shifted{}
	}
	s.seasonal.P, s.fractional.P = s.learn.seasonal, s.learn.fractional
	return nil
}

// flushLearned stores the observations the write made, in the order they were made.
func (s *Reservations) flushLearned(tx *gorm.DB) error {
	if s.learn == nil {
		return nil
	}
	for i := range s.learn.pending {
		o := &s.learn.pending[i]
		if err := tx.Omit("ID").Create(o).Error; err != nil {
			return err
		}
		s.learn.upto = o.ID
	}
	s.learn.pending = nil
	return nil
}

// compactLearned folds the log into the snapshot when it holds compactAfter
// observations or the snapshot is a day old, inside the plan's write lock, after
// syncLearned.
func (s *Reservations) compactLearned(tx *gorm.DB, now time.Time) error {
	var row predictorStateRow
	if err := tx.Take(&row, 1).Error; err != nil {
		return err
	}
	n := s.learn.upto - row.Upto
	if n <= 0 || (n < compactAfter && now.Sub(row.UpdatedAt) < 24*time.Hour) {
		return nil
	}
	return s.foldLearned(tx, now)
}

// foldLearned stores the predictors as the snapshot and drops the log it covers.
func (s *Reservations) foldLearned(tx *gorm.DB, now time.Time) error {
	st, err := s.learn.state()
	if err != nil {
		return err
	}
	if err := tx.Model(&predictorStateRow{}).Where("id = 1").
		Updates(map[string]any{"upto": s.learn.upto, "state": st, "updated_at": now}).Error; err != nil {
		return err
	}
	return tx.Where("id <= ?", s.learn.upto).Delete(&PredictorObservation{}).Error
}

// planVersions reads, in one statement, the plan's version and the newest
// observation the database knows of (learnt): a server whose plan is older, or
// whose predictors applied less, must catch up before it reads the plan or quotes.
func planVersions(tx *gorm.DB) (version, learnt int64, err error) {
	var v struct{ Version, Obs, Snap int64 }
	err = tx.Raw(`SELECT version, (SELECT COALESCE(MAX(id), 0) FROM predictor_observations) AS obs,
		(SELECT upto FROM predictor_state WHERE id = 1) AS snap FROM plan_state WHERE id = 1`).Scan(&v).Error
	return v.Version, max(v.Obs, v.Snap), err
}

// learningPlan is the plan's pricing algorithm with learning routed through the
// database: a decided bid is recorded in absolute slots (and applied at once, so
// the next bid in the same write sees it); what reservations used is recorded by
// the service from the database when they leave the plan (observeUse), once,
// whichever server's engine retires them.
type learningPlan struct {
	scheduler.PerPool
	s   *Reservations
	off scheduler.Slot
}

// Observe implements scheduler.Learner.
func (l learningPlan) Observe(d scheduler.Demand) {
	if l.s.learn == nil {
		return
	}
	d.Now += l.off
	reqs := make([]scheduler.Request, len(d.Requests))
	for i, r := range d.Requests {
		r.Arrival += l.off
		r.Deadline += l.off
		reqs[i] = r
	}
	d.Requests = reqs
	l.s.learn.record("demand", d, l.s.now())
}

// ObserveUse implements scheduler.UseLearner: it does nothing, since the engine's
// reservation may have been restored with its requests cut at the plan's origin;
// Reservations.observeUse records use from the database instead.
func (learningPlan) ObserveUse(scheduler.Use) {}

// absSlot is the absolute slot holding t.
func (s *Reservations) absSlot(t time.Time) scheduler.Slot {
	return scheduler.Slot(t.Sub(slotEpoch) / s.cfg.Slot)
}

// observeUse records what a reservation leaving the plan used (ERA section 5.3):
// per request the unit-slots it reserved and those it used (its run to its end,
// early ends included, less the units its cluster reported unused), with the
// requests as they were priced when it was decided.
func (s *Reservations) observeUse(v ReservationView) {
	if s.learn == nil || v.Value == nil {
		return
	}
	decided := v.CreatedAt
	if v.DecidedAt != nil {
		decided = *v.DecidedAt
	}
	now := s.absSlot(decided)
	u := scheduler.Use{Reservation: v.ID, Now: now, Value: v.Value.Dollars()}
	for _, q := range v.Requests {
		if q.StartAt == nil {
			continue // an ANY bid's requests not chosen
		}
		slots := scheduler.Slot(ceilDiv(time.Duration(q.Duration)*time.Second, s.cfg.Slot))
		arrival := s.absSlot(q.Arrival)
		if s.cfg.Slot*time.Duration(arrival) != q.Arrival.Sub(slotEpoch) {
			arrival++
		}
		r := scheduler.Request{Config: scheduler.Config(q.Config()), Count: q.Count, Overhead: q.OverheadByPool(),
			Duration: slots, Arrival: max(arrival, now), Deadline: s.absSlot(q.Deadline)}
		per := int64(0)
		for p := range r.Config {
			per += r.Units(p)
		}
		for p := range r.Overhead {
			if _, ok := r.Config[p]; !ok {
				per += r.Units(p)
			}
		}
		ran := int64(ceilDiv(q.End().Sub(*q.StartAt), s.cfg.Slot))
		u.Requests = append(u.Requests, r)
		u.Reserved = append(u.Reserved, per*int64(slots))
		u.Used = append(u.Used, max(per*min(ran, int64(slots))-q.Unused, 0))
	}
	if len(u.Requests) > 0 {
		s.learn.record("use", u, s.now())
	}
}
