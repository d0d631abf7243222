package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"gorm.io/gorm"
)

// ReserveCurve is an operator's named weighting curve; pools refer to one. Spec is
// the auction.CurveSpec as JSON.
type ReserveCurve struct {
	ID        string
	Name      string
	Spec      string
	UpdatedAt time.Time
}

// CurveSpec returns the curve's parsed spec.
func (c ReserveCurve) CurveSpec() (auction.CurveSpec, error) {
	var s auction.CurveSpec
	err := json.Unmarshal([]byte(c.Spec), &s)
	return s, err
}

// SaveCurve creates or replaces a reserve curve after checking that it has the five
// properties (auction.CurveSpec.Build). Auctions already open keep the reserve
// prices they fixed when they opened. Returns EINVALID naming the fault.
func (m *Market) SaveCurve(ctx context.Context, id, name string, spec auction.CurveSpec) (ReserveCurve, error) {
	id, name = strings.TrimSpace(id), strings.TrimSpace(name)
	if err := checkSlug("id", id); err != nil {
		return ReserveCurve{}, err
	}
	if name == "" {
		name = id
	}
	c, err := spec.Build()
	if err != nil {
		return ReserveCurve{}, err
	}
	raw, err := json.Marshal(c.Spec())
	if err != nil {
		return ReserveCurve{}, err
	}
	rc := ReserveCurve{ID: id, Name: name, Spec: string(raw), UpdatedAt: m.now()}
	return rc, m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var before *curveState
		var old ReserveCurve
		if err := tx.Take(&old, "id = ?", id).Error; err == nil {
			before = &curveState{Name: old.Name, Spec: json.RawMessage(old.Spec)}
		} else if !errors.Is(err, gorm.ErrRecordNotFound) {
			return err
		}
		if err := tx.Save(&rc).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "curve.save", "curve:"+id, before, curveState{Name: name, Spec: raw})
	})
}

// curveState is a reserve curve in the audit trail.
type curveState struct {
	Name string          `json:"name"`
	Spec json.RawMessage `json:"spec"`
}

// Curves lists every reserve curve by id.
func (m *Market) Curves(ctx context.Context) ([]ReserveCurve, error) {
	var cs []ReserveCurve
	return cs, m.db.Read.WithContext(ctx).Order("id").Find(&cs).Error
}

// Curve returns one curve or ENOTFOUND.
func (m *Market) Curve(ctx context.Context, id string) (ReserveCurve, error) {
	var c ReserveCurve
	err := m.db.Read.WithContext(ctx).Take(&c, "id = ?", id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ReserveCurve{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "curve: no reserve curve %q", id)
	}
	return c, err
}

// curvesIn builds every stored curve, inside tx.
func (m *Market) curvesIn(tx *gorm.DB) (map[string]auction.Curve, error) {
	var cs []ReserveCurve
	if err := tx.Find(&cs).Error; err != nil {
		return nil, err
	}
	out := make(map[string]auction.Curve, len(cs))
	for _, c := range cs {
		spec, err := c.CurveSpec()
		if err != nil {
			return nil, clearhouse.Errorf(clearhouse.EINTERNAL, "curve %s: %v", c.ID, err)
		}
		built, err := spec.Build()
		if err != nil {
			return nil, clearhouse.Errorf(clearhouse.EINTERNAL, "curve %s: %v", c.ID, err)
		}
		out[c.ID] = built
	}
	return out, nil
}

// ReservePrice is the pool's reserve price in dollars per unit at utilization psi:
// curve c's phi(psi) times the pool's unit cost (auction.ReservePrice). It is the
// one computation of a reserve; the market's auctions, ReservePrices and the
// operator's pages all use it. It is rounded up to the micro-dollar, the grid the
// auction's clock moves on, so the reserve a page shows is the price an auction
// starts at. EINVALID for psi outside [0, 1] or a negative cost.
func (p Pool) ReservePrice(c auction.Curve, psi float64) (float64, error) {
	r, err := auction.ReservePrice(c, psi, p.UnitCost.Dollars())
	if err != nil {
		return 0, err
	}
	m := math.Round(r * 1e6)
	if m/1e6 < r {
		m++
	}
	return m / 1e6, nil
}

// ReservePrices returns each pool's reserve price now (dollars per unit), from its
// curve, utilization psi and unit cost.
func (m *Market) ReservePrices(ctx context.Context) (map[string]float64, error) {
	db := m.db.Read.WithContext(ctx)
	curves, err := m.curvesIn(db)
	if err != nil {
		return nil, err
	}
	var pools []Pool
	if err := db.Find(&pools).Error; err != nil {
		return nil, err
	}
	util, err := m.utilizationIn(db, pools)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(pools))
	for _, p := range pools {
		if c, ok := curves[p.CurveID]; ok {
			if r, err := p.ReservePrice(c, util[p.ID]); err == nil {
				out[p.ID] = r
			}
		}
	}
	return out, nil
}
