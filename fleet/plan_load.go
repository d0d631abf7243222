package fleet

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/scheduler"
)

// LoadPoint is one pool's plan at one instant: its capacity, the quota teams hold
// in it (guaranteed to them), and the units reservations take, from quotas and
// from the uncommitted rest.
type LoadPoint struct {
	At        time.Time
	Capacity  int64
	Quota     int64
	Reserved  int64 // in all
	FromQuota int64 // of Reserved, inside the owners' quotas
}

// PoolLoad samples a pool's plan every step over [from, to), both clipped to the
// plan's horizon. ENOTFOUND for an unknown pool.
func (s *Reservations) PoolLoad(ctx context.Context, pool string, from, to time.Time, step time.Duration) ([]LoadPoint, error) {
	qs, err := Quotas(s.db.Read.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	var out []LoadPoint
	err = s.read(ctx, func(p *plan, now time.Time) error {
		if _, ok := p.pools[pool]; !ok {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "pool: no pool %q", pool)
		}
		every := max(scheduler.Slot(step/p.slotLen), 1)
		lo, hi := max(p.slot(from), 0), min(p.ceil(to), p.eng.Horizon())
		for t := lo; t < hi; t += every {
			pt := LoadPoint{At: p.at(t), Capacity: p.eng.Capacity(pool, t)}
			for _, q := range qs {
				if q.PoolID != pool {
					continue
				}
				inUse := p.eng.QuotaInUse(q.TeamID, pool, t, t+1)
				free := p.eng.Own(q.TeamID, pool, t, t+1, nil)[0]
				pt.Quota += inUse + max(free, 0) // the owner's quota in this slot
				pt.FromQuota += inUse
			}
			shared := pt.Capacity - pt.Quota - p.eng.Free(pool, t, t+1)
			pt.Reserved = pt.FromQuota + max(shared, 0)
			out = append(out, pt)
		}
		return nil
	})
	return out, err
}

// Reserve submits a definition for by's team under a new id, in one call: the web
// form's way. A bad definition is refused before any id is taken.
func (s *Reservations) Reserve(ctx context.Context, by identity.User, d Definition) (ReservationView, error) {
	if err := s.prepare(by, &d, true); err != nil {
		return ReservationView{}, err
	}
	id, err := s.NewReservation(ctx, by)
	if err != nil {
		return ReservationView{}, err
	}
	return s.Submit(ctx, by, id, d)
}
