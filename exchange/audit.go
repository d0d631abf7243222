package exchange

import (
	"context"
	"encoding/json"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/ledger"
)

// record appends one change of the market to the audit trail inside tx, at the
// market's clock, with the actor ctx carries. Called last in a use case's
// transaction: the trail's head is level 9 of the lock order (locks.go), after every
// other lock.
func (m *Market) record(ctx context.Context, tx *gorm.DB, action, object string, before, after any) error {
	return audit.Record(ctx, tx, audit.Event{Action: action, Object: object, Before: before, After: after, At: m.now()})
}

// poolState is a pool's settings in the audit trail.
type poolState struct {
	Unit        string       `json:"unit"`
	Capacity    int64        `json:"capacity"`
	UnitCost    ledger.Money `json:"unit_cost"`
	Utilization float64      `json:"utilization"`
	Curve       string       `json:"curve"`
}

func stateOf(p Pool) poolState {
	return poolState{Unit: p.Unit, Capacity: p.Capacity, UnitCost: p.UnitCost, Utilization: p.Utilization, Curve: p.CurveID}
}

// auctionState is an auction in the audit trail.
func auctionState(a Auction) map[string]any {
	st := map[string]any{"status": a.Status, "opens_at": a.OpensAt.UTC(), "closes_at": a.ClosesAt.UTC()}
	if json.Valid([]byte(a.Params)) {
		st["params"] = json.RawMessage(a.Params)
	}
	if a.Failure != "" {
		st["failure"] = a.Failure
	}
	return st
}

// Trail is the audit trail of the market's database, for reading and export.
func (m *Market) Trail() *audit.Trail { return audit.NewTrail(m.db) }
