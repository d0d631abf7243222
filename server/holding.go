package server

import (
	"context"
)

// holdingLock names the advisory lock that keeps the scheduled holding charge on
// one replica (the table's key would keep a second run from charging anyway).
const holdingLock = 0x686f6c64 // "hold"

// holding is the scheduled holding charge: the month under way, charged once.
func (a *App) holding(ctx context.Context) (bool, error) {
	return a.DB.Exclusive(ctx, holdingLock, func() error {
		run, err := a.Market.ChargeHolding(ctx, a.now())
		if err != nil {
			return err
		}
		if len(run.Charged) > 0 || len(run.Shortfall) > 0 {
			a.log.Info("holding charges", "month", run.Month, "charged", len(run.Charged), "short", len(run.Shortfall))
		}
		for _, s := range run.Shortfall {
			a.log.Warn("holding charge not made: too little available budget", "team", s.TeamID, "pool", s.PoolID, "amount", s.Amount.String())
		}
		return nil
	})
}
