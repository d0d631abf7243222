package fleet

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/scheduler"
)

// NewReservation hands out a reservation id for the user's team, to submit a
// definition under (YARN's new-reservation). EFORBIDDEN for a user on no team.
func (s *Reservations) NewReservation(ctx context.Context, by identity.User) (int64, error) {
	if !by.Role.OnTeam() || by.TeamID == "" {
		return 0, clearhouse.Errorf(clearhouse.EFORBIDDEN, "Only team members and owners make reservations.")
	}
	now := s.now()
	r := Reservation{TeamID: by.TeamID, CreatedBy: &by.ID, Status: ReservationNew, CreatedAt: now, UpdatedAt: now}
	err := s.db.Write.WithContext(ctx).Omit("ID").Create(&r).Error
	return r.ID, err
}

// ActFor checks that by may act for team (EFORBIDDEN otherwise); best-effort
// jobs use it too.
func ActFor(by identity.User, team string) error {
	if !by.Role.OnTeam() || by.TeamID != team {
		return clearhouse.Errorf(clearhouse.EFORBIDDEN, "team: you cannot act for team %q", team)
	}
	return nil
}

// prepare fills in the team and checks the definition before any write.
func (s *Reservations) prepare(by identity.User, d *Definition, needValue bool) error {
	if d.Team == "" {
		d.Team = by.TeamID
	}
	if err := ActFor(by, d.Team); err != nil {
		return err
	}
	return d.Validate(s.now(), s.cfg.Slot, s.cfg.Horizon, needValue)
}

// takeReservation loads one reservation of by's team with its requests, inside tx.
func (s *Reservations) takeReservation(tx *gorm.DB, by identity.User, id int64, now time.Time) (ReservationView, error) {
	vs, err := s.views(tx, tx.Where("id = ?", id), now)
	if err != nil {
		return ReservationView{}, err
	}
	if len(vs) == 0 || ActFor(by, vs[0].TeamID) != nil {
		return ReservationView{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "reservation: no reservation %d for your team", id)
	}
	return vs[0], nil
}

// Submit submits a definition under an id from NewReservation. The scheduler
// prices it without its value and accepts it when the value covers the price: the
// price is held on the team's budget and the requests are planned. Otherwise it is
// rejected (no room in its windows, or too dear) and nothing is held. Submitting
// the same definition again returns the first result; another definition under a
// used id is ECONFLICT. EINVALID names the field of a bad definition;
// EUNPROCESSABLE when the budget cannot cover the price (the id stays unused).
func (s *Reservations) Submit(ctx context.Context, by identity.User, id int64, d Definition) (ReservationView, error) {
	if err := s.prepare(by, &d, true); err != nil {
		return ReservationView{}, err
	}
	var out ReservationView
	err := s.write(ctx, func(tx *gorm.DB, p *plan, now time.Time) error {
		v, err := s.takeReservation(tx, by, id, now)
		if err != nil {
			return err
		}
		if v.Status != ReservationNew {
			if v.Digest == d.digest() {
				out = v
				return nil
			}
			return clearhouse.Errorf(clearhouse.ECONFLICT, "id: reservation %d was already submitted with another definition; ask for a new id", id)
		}
		if err := s.place(ctx, tx, p, now, &v, d, fmt.Sprintf("reservation/%d/hold/first", id)); err != nil {
			return err
		}
		out, err = s.takeReservation(tx, by, id, now)
		return err
	})
	return out, err
}

// Update replaces an accepted reservation's definition when the new one can be
// honoured; otherwise the old one stands and the error says why (EUNPROCESSABLE
// when the new one does not fit or its value does not cover its price). Slots the
// old definition already used are charged; the new one is priced from now.
func (s *Reservations) Update(ctx context.Context, by identity.User, id int64, d Definition) (ReservationView, error) {
	if err := s.prepare(by, &d, true); err != nil {
		return ReservationView{}, err
	}
	var out ReservationView
	err := s.write(ctx, func(tx *gorm.DB, p *plan, now time.Time) error {
		v, err := s.takeReservation(tx, by, id, now)
		if err != nil {
			return err
		}
		if v.Status != ReservationAccepted {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "reservation: %d is %s; only an accepted reservation can be updated", id, phase(v.Reservation, v.Requests, now))
		}
		if v.Digest == d.digest() {
			out = v
			return nil
		}
		if err := p.cancel(p.ceil(now), id); err != nil {
			return err
		}
		prev := int64(0)
		if v.HoldID != nil {
			prev = *v.HoldID
		}
		if err := endRequests(tx, &v, ceilTime(now, s.cfg.Slot)); err != nil {
			return err
		}
		if _, err := s.settleCharges(ctx, tx, &v, now, true); err != nil {
			return err
		}
		if err := tx.Where("reservation_id = ?", id).Delete(&ReservationRequest{}).Error; err != nil {
			return err
		}
		if err := s.place(ctx, tx, p, now, &v, d, fmt.Sprintf("reservation/%d/hold/after/%d", id, prev)); err != nil {
			return err
		}
		if v.Status != ReservationAccepted {
			return clearhouse.Errorf(clearhouse.EUNPROCESSABLE, "The new definition cannot be honoured (%s); reservation %d stands as it was.", v.Note, id)
		}
		out, err = s.takeReservation(tx, by, id, now)
		return err
	})
	return out, err
}

// requests turns a definition into the engine's requests at now.
func (p *plan) requests(d Definition, now time.Time) []scheduler.Request {
	out := make([]scheduler.Request, len(d.Requests))
	for i, r := range d.Requests {
		// A window open since the current slot began may start in it; otherwise the
		// arrival is rounded up to a slot boundary, so no start precedes it.
		arrival := max(p.slot(now), p.ceil(r.Arrival))
		out[i] = scheduler.Request{Config: scheduler.Config(r.Configuration), Count: r.Count, Overhead: scheduler.Config(r.Overhead),
			Duration: scheduler.Slot(ceilDiv(r.Duration, p.slotLen)), Arrival: arrival, Deadline: p.slot(r.Deadline)}
	}
	return out
}

// place prices and plans definition d for reservation v, inside tx: accepted, it
// holds the price and records the requests where the plan put them; rejected, it
// records why. v is updated in place.
func (s *Reservations) place(ctx context.Context, tx *gorm.DB, p *plan, now time.Time, v *ReservationView, d Definition, holdKey string) error {
	reqs := p.requests(d, now)
	lang := scheduler.BidLanguage(d.language())
	bid := scheduler.Bid{ID: v.ID, Owner: v.TeamID, Requests: reqs, Value: d.Value.Dollars(), Language: lang}
	er, accepted, err := p.makeReservation(p.slot(now), bid)
	if err != nil {
		return err
	}
	cluster := d.Cluster()
	v.Status, v.Note, v.Price, v.HoldID, v.Captured, v.Released = ReservationRejected, "", 0, nil, 0, 0
	specs := d.Requests
	if accepted && lang == scheduler.BidAny {
		specs = specs[er.Chosen : er.Chosen+1] // the reservation holds the one the scheduler chose
	}
	charges := make([]ledger.Money, len(specs))
	if !accepted {
		bid.ID, bid.Value = 0, 0
		if o, ok, _ := p.eng.QuoteBid(p.slot(now), bid); !ok {
			v.Note = "no room for it in its windows"
		} else {
			v.Note = fmt.Sprintf("its value %s does not cover the price %s", d.Value, moneyOf(o.Price))
		}
	} else {
		v.Status, v.Price = ReservationAccepted, min(moneyOf(er.Price), d.Value)
		weights := make([]int64, len(er.Requests))
		for i := range er.Requests {
			weights[i] = er.SharedUnitSlots(i)
		}
		charges = splitCharge(v.Price, weights)
		if v.Price > 0 {
			h, err := s.ledger.WithTx(tx).PlaceHold(ctx, holdKey, ledger.TeamAccount(v.TeamID), v.Price, fmt.Sprintf("reservation:%d", v.ID))
			if err != nil {
				return err
			}
			v.HoldID = &h.ID
		}
	}
	for i, r := range specs {
		row := ReservationRequest{ReservationID: v.ID, Idx: i, Configuration: configJSON(r.Configuration), Count: r.Count,
			Duration: int64(time.Duration(ceilDiv(r.Duration, s.cfg.Slot)) * s.cfg.Slot / time.Second),
			Arrival:  r.Arrival.UTC(), Deadline: r.Deadline.UTC(), Charge: charges[i]}
		if len(r.Overhead) > 0 {
			o := configJSON(r.Overhead)
			row.Overhead = &o
		}
		if accepted {
			at := p.at(er.Starts[i])
			row.StartAt = &at
		}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
	}
	value := d.Value
	return tx.Model(&Reservation{}).Where("id = ?", v.ID).Updates(map[string]any{
		"status": v.Status, "note": v.Note, "cluster_id": cluster, "value": value, "price": v.Price,
		"hold_id": v.HoldID, "captured": 0, "released": 0, "digest": d.digest(), "updated_at": now, "decided_at": now,
		"language": d.language()}).Error
}

// moneyOf rounds engine dollars to money (never negative).
func moneyOf(dollars float64) ledger.Money {
	m, err := ledger.FromDollars(max(dollars, 0))
	if err != nil {
		return 0
	}
	return m
}

// Cancel cancels a reservation of by's team: its capacity is free from the next
// slot boundary, slots already used are charged and the rest of the hold is
// released. ECONFLICT for a reservation that has ended.
func (s *Reservations) Cancel(ctx context.Context, by identity.User, id int64) error {
	return s.write(ctx, func(tx *gorm.DB, p *plan, now time.Time) error {
		v, err := s.takeReservation(tx, by, id, now)
		if err != nil {
			return err
		}
		switch v.Status {
		case ReservationNew:
			return tx.Model(&Reservation{}).Where("id = ?", id).Updates(map[string]any{"status": ReservationCancelled, "updated_at": now}).Error
		case ReservationAccepted:
			if err := p.cancel(p.ceil(now), id); err != nil && clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
				return err
			}
			return s.finish(ctx, tx, &v, now, ReservationCancelled, "cancelled by "+by.Email)
		}
		return clearhouse.Errorf(clearhouse.ECONFLICT, "reservation: %d is %s and cannot be cancelled", id, phase(v.Reservation, v.Requests, now))
	})
}

// Quote is what the scheduler would charge for a definition now and where it would
// place its requests, without committing anything. For an ANY definition Starts
// and Ends are those of the request the scheduler would choose, Chosen (its index;
// 0 otherwise).
type Quote struct {
	Feasible bool
	Price    ledger.Money
	Starts   []time.Time
	Ends     []time.Time
	Chosen   int
}

// Quote prices a definition for by's team without its value. EINVALID names the
// field of a bad definition.
func (s *Reservations) Quote(ctx context.Context, by identity.User, d Definition) (Quote, error) {
	if err := s.prepare(by, &d, false); err != nil {
		return Quote{}, err
	}
	var q Quote
	err := s.read(ctx, func(p *plan, now time.Time) error {
		reqs := p.requests(d, now)
		lang := scheduler.BidLanguage(d.language())
		o, ok, err := p.eng.QuoteBid(p.slot(now), scheduler.Bid{Owner: d.Team, Requests: reqs, Language: lang})
		if err != nil || !ok {
			return err
		}
		q.Feasible, q.Price = true, moneyOf(o.Price)
		if lang == scheduler.BidAny {
			q.Chosen, reqs = o.Chosen, reqs[o.Chosen:o.Chosen+1]
		}
		for i, st := range o.Starts {
			q.Starts = append(q.Starts, p.at(st))
			q.Ends = append(q.Ends, p.at(st+reqs[i].Duration))
		}
		return nil
	})
	return q, err
}

// ReservationFilter selects reservations: of one team (empty: every team), with a
// request whose window meets [From, To) (zero: unbounded).
type ReservationFilter struct {
	Team     string
	From, To time.Time
	Statuses []ReservationStatus
	Before   int64 // only reservations with a smaller id (the next page)
	Limit    int   // at most 1,000
}

// Reservations lists the newest reservations the filter selects (at most Limit),
// oldest of them first.
func (s *Reservations) Reservations(ctx context.Context, f ReservationFilter) ([]ReservationView, error) {
	db := s.db.Read.WithContext(ctx)
	q := db.Where("status <> ?", ReservationNew)
	if f.Team != "" {
		q = q.Where("team_id = ?", f.Team)
	}
	if len(f.Statuses) > 0 {
		q = q.Where("status IN ?", f.Statuses)
	}
	if !f.From.IsZero() {
		q = q.Where("id IN (SELECT reservation_id FROM reservation_requests WHERE deadline > ?)", f.From)
	}
	if !f.To.IsZero() {
		q = q.Where("id IN (SELECT reservation_id FROM reservation_requests WHERE arrival < ?)", f.To)
	}
	if f.Before > 0 {
		q = q.Where("id < ?", f.Before)
	}
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	vs, err := s.views(db, q.Order("id DESC").Limit(limit), s.now())
	for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
		vs[i], vs[j] = vs[j], vs[i]
	}
	return vs, err
}

// Reservation returns one reservation. ENOTFOUND when there is none.
func (s *Reservations) Reservation(ctx context.Context, id int64) (ReservationView, error) {
	db := s.db.Read.WithContext(ctx)
	vs, err := s.views(db, db.Where("id = ?", id), s.now())
	if err != nil {
		return ReservationView{}, err
	}
	if len(vs) == 0 {
		return ReservationView{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "reservation: no reservation %d", id)
	}
	return vs[0], nil
}

// PlanTick says what one Tick did.
type PlanTick struct {
	Charged ledger.Money // captured to the treasury
	Done    []int64      // reservations that ended
}

// Tick is the plan's scheduled job: it captures what accepted reservations have
// earned as their slots pass and closes those whose requests have all ended (the
// rest of their holds released). Its state is in the database: a repeat changes
// nothing, and a restart catches up.
func (s *Reservations) Tick(ctx context.Context) (PlanTick, error) {
	var rep PlanTick
	// Charges and ends change nothing other servers plan around: no rebuild for them.
	err := s.refresh(ctx, func(tx *gorm.DB, p *plan, now time.Time) error {
		// Fold the predictors' log first: the snapshot must not hold what this tick records.
		if err := s.compactLearned(tx, now); err != nil {
			return err
		}
		if err := s.refitLearned(tx, now); err != nil {
			return err
		}
		vs, err := s.views(tx, tx.Where("status = ?", ReservationAccepted), now)
		if err != nil {
			return err
		}
		for i := range vs {
			before := vs[i].Captured
			done, err := s.settleCharges(ctx, tx, &vs[i], now, false)
			if err != nil {
				return err
			}
			rep.Charged += vs[i].Captured - before
			if done {
				s.observeUse(vs[i])
				rep.Done = append(rep.Done, vs[i].ID)
				if err := tx.Model(&Reservation{}).Where("id = ?", vs[i].ID).Updates(map[string]any{"status": ReservationDone, "updated_at": now}).Error; err != nil {
					return err
				}
			}
		}
		p.eng.Retire(p.slot(now))
		return pruneChanges(tx)
	})
	return rep, err
}
