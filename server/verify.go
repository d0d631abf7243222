package server

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
)

// Verify runs every package's checks of the invariants on db: what `clearhouse
// verify` and the scheduled verify report.
func Verify(ctx context.Context, db *store.DB) ([]ledger.Violation, error) {
	l := ledger.New(db, time.Now)
	var all []ledger.Violation
	for _, check := range []func() ([]ledger.Violation, error){
		func() ([]ledger.Violation, error) { return l.Verify(ctx) },
		func() ([]ledger.Violation, error) { return MarketFor(db).Verify(ctx) },
		func() ([]ledger.Violation, error) {
			return fleet.NewReservations(db, l, time.Now, fleet.DefaultPlanConfig).Verify(ctx)
		},
		func() ([]ledger.Violation, error) {
			return besteffort.New(db, l, time.Now, besteffort.DefaultConfig).Verify(ctx)
		},
		func() ([]ledger.Violation, error) { return verifyTrail(ctx, db) },
	} {
		vs, err := check()
		if err != nil {
			return all, err
		}
		all = append(all, vs...)
	}
	return all, nil
}

// verifyTrail checks the audit trail's chain (audit.Trail.Verify) as verify's other
// checks are reported. A database from before the trail (a backup being restored,
// migrated when the server next starts) has none to check.
func verifyTrail(ctx context.Context, db *store.DB) ([]ledger.Violation, error) {
	if !db.Read.Migrator().HasTable("audit_head") {
		return nil, nil
	}
	ps, err := audit.NewTrail(db).Verify(ctx)
	out := make([]ledger.Violation, 0, len(ps))
	for _, p := range ps {
		out = append(out, ledger.Violation{Check: p.Check, Detail: p.Detail})
	}
	return out, err
}

// MarketFor builds the market service for one command, with reserve prices from
// measured utilization as the server has them.
func MarketFor(db *store.DB) *exchange.Market {
	m := exchange.NewMarket(db, ledger.New(db, time.Now), time.Now)
	m.UseMeasuredUtilization(fleet.NewUtilization(db, time.Now, fleet.DefaultUtilizationConfig))
	return m
}
