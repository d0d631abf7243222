package exchange

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"gorm.io/gorm"
)

// Cadence is how the market schedules its auctions.
type Cadence struct {
	// Every is the time from one auction's opening to the next's; zero turns
	// automatic scheduling off (operators schedule auctions by hand).
	Every time.Duration
	// Window is how long each auction takes bids (at most Every).
	Window time.Duration
	// PreviewEvery is how often an open auction's preliminary prices are refreshed.
	PreviewEvery time.Duration
	// Params are the clock's parameters for new auctions.
	Params auction.Params
}

// DefaultCadence opens a one-hour window every day and refreshes prices every five
// minutes.
var DefaultCadence = Cadence{Every: 24 * time.Hour, Window: time.Hour, PreviewEvery: 5 * time.Minute, Params: auction.DefaultParams}

// TickReport says what one Tick did.
type TickReport struct {
	Opened, Previewed, Closed []int64
	Scheduled                 *Auction
}

// Tick is the market's scheduled job: it closes and settles auctions whose window
// ended, then opens auctions whose window began (after the close, so that an
// auction never opens beside one that has not settled), refreshes the preliminary
// prices of open auctions when they are older than PreviewEvery, and schedules the
// next auction on the cadence when none is pending. Every step keeps its state in
// the database, so a restart in the middle loses nothing and a repeated step
// changes nothing.
func (m *Market) Tick(ctx context.Context, cad Cadence) (TickReport, error) {
	var rep TickReport
	live := func() ([]Auction, error) {
		var open []Auction
		err := m.db.Read.WithContext(ctx).Where("status IN ?", []AuctionStatus{AuctionOpen, AuctionClosing}).Order("closes_at").Find(&open).Error
		return open, err
	}
	open, err := live()
	if err != nil {
		return rep, err
	}
	for _, a := range open {
		if a.Halted() {
			continue // its close failed: an operator retries or cancels it
		}
		if !m.now().Before(a.ClosesAt) || a.Status == AuctionClosing {
			if _, err := m.Close(ctx, a.ID); err != nil {
				return rep, fmt.Errorf("closing auction %d: %w", a.ID, err)
			}
			rep.Closed = append(rep.Closed, a.ID)
		}
	}
	opened, err := m.OpenDue(ctx)
	for _, a := range opened {
		rep.Opened = append(rep.Opened, a.ID)
	}
	if err != nil {
		return rep, err
	}
	if open, err = live(); err != nil {
		return rep, err
	}
	now := m.now()
	for _, a := range open {
		if !now.Before(a.ClosesAt) || a.Status != AuctionOpen {
			continue // closed by the next tick, or halted
		}
		var last AuctionRun
		err := m.db.Read.WithContext(ctx).Where("auction_id = ?", a.ID).Order("id DESC").Take(&last).Error
		if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && now.Sub(last.RanAt) >= cad.PreviewEvery) {
			if _, err := m.Preview(ctx, a.ID); err != nil {
				return rep, fmt.Errorf("previewing auction %d: %w", a.ID, err)
			}
			rep.Previewed = append(rep.Previewed, a.ID)
		} else if err != nil {
			return rep, err
		}
	}
	if cad.Every > 0 {
		a, scheduled, err := m.scheduleNext(ctx, cad)
		if err != nil {
			return rep, err
		}
		if scheduled {
			rep.Scheduled = &a
		}
	}
	return rep, nil
}

// scheduleNext schedules the next auction on the cadence when none is scheduled or
// open: one Every after the last auction opened, or now when that time has passed.
func (m *Market) scheduleNext(ctx context.Context, cad Cadence) (Auction, bool, error) {
	var pending int64
	if err := m.db.Read.WithContext(ctx).Model(&Auction{}).Where("status IN ?",
		[]AuctionStatus{AuctionScheduled, AuctionOpen, AuctionClosing}).Count(&pending).Error; err != nil {
		return Auction{}, false, err
	}
	if pending > 0 {
		return Auction{}, false, nil
	}
	now := m.now().Truncate(time.Minute)
	opens := now
	var last Auction
	if err := m.db.Read.WithContext(ctx).Order("opens_at DESC").Take(&last).Error; err == nil {
		if next := last.OpensAt.Add(cad.Every); next.After(now) {
			opens = next
		}
	}
	window := min(cad.Window, cad.Every)
	if window <= 0 {
		window = time.Hour
	}
	a, err := m.ScheduleAuction(ctx, opens, opens.Add(window), cad.Params)
	return a, err == nil, err
}
