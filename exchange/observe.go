package exchange

import (
	"context"
	"time"
)

// CloseStats is what one binding close did: the figures an operator's metrics
// follow. Only the call that ran the binding clock reports them, so a repeated
// close reports nothing.
type CloseStats struct {
	AuctionID int64
	Settled   bool // false: the clock did not converge and the auction failed
	Rounds    int
	Pools     int   // pools the binding run cleared (every pool of a settled auction; none of a failed one)
	Winners   int   // orders that won a bundle
	Paid      int64 // micro-dollars winners paid (sellers were paid from it; the treasury kept the rest)
	Close     time.Duration
	Settle    time.Duration // the binding transaction: the clock's run and the settlement
	// FinalRound says whether the final round ran; FinalGap is the share of its proven
	// bound the allocation may be short of (0: proved optimal).
	FinalRound bool
	FinalGap   float64
}

// CloseObserver is told of every binding close after it commits.
type CloseObserver interface {
	AuctionClosed(CloseStats)
}

// ObserveCloses makes o hear of every binding close this market runs.
func (m *Market) ObserveCloses(o CloseObserver) { m.closes = o }

// observeClose reports a committed binding close to the observer, if any. A failure
// to read the figures is not the close's failure: the figures are left out.
func (m *Market) observeClose(ctx context.Context, run AuctionRun, closing, settling time.Duration) {
	if m.closes == nil {
		return
	}
	st := CloseStats{AuctionID: run.AuctionID, Settled: run.Converged, Rounds: run.Rounds, Close: closing, Settle: settling,
		FinalRound: run.FinalRound, FinalGap: run.Gap()}
	db := m.db.Read.WithContext(ctx)
	if run.Converged {
		var pools int64
		_ = db.Model(&RunPrice{}).Where("run_id = ?", run.ID).Count(&pools).Error
		st.Pools = int(pools)
	}
	var fig struct {
		Winners int64
		Paid    int64
	}
	_ = db.Raw(`SELECT COUNT(*) AS winners, COALESCE(SUM(CASE WHEN payment > 0 THEN payment ELSE 0 END), 0) AS paid
		FROM settlement_lines WHERE auction_id = ? AND bundle_index >= 0`, run.AuctionID).Scan(&fig).Error
	st.Winners, st.Paid = int(fig.Winners), fig.Paid
	m.closes.AuctionClosed(st)
}
