package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/internal/racetest"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// An auction with 100,000 open orders from 200 teams previews, closes and settles
// (every order wins: the pools have room for all), on SQLite and PostgreSQL: no
// statement takes an unbounded list, and every invariant holds afterwards.
func TestAHundredThousandOrdersPreviewCloseAndSettle(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 100,000 orders take a minute or more to seed and settle")
	}
	racetest.SkipUnderRace(t, "a scale run; the market's concurrency has its own tests under -race, "+
		"and the clock's parallel step auction's TestSolveIsTheSameOnOneCoreAndOnSeveral")
	const n = 100_000
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		// The two halves side by side: the PostgreSQL half mostly waits on its
		// server, whose CPU is not this process's.
		t.Parallel()
		ctx := context.Background()
		big := exchangetest.NewBig(t, db, 200, 10*n)
		start := time.Now()
		big.Seed(t, db, n)
		t.Logf("seeded %d orders in %v", n, time.Since(start).Round(time.Millisecond))
		start = time.Now()
		run, err := big.M.Preview(ctx, big.AuctionID)
		if err != nil || run.Orders != n || !run.Converged {
			t.Fatalf("preview: %+v, %v", run, err)
		}
		t.Logf("preview in %v", time.Since(start).Round(time.Millisecond))
		start = time.Now()
		run, err = big.M.Close(ctx, big.AuctionID)
		if err != nil || run.Orders != n || !run.Converged {
			t.Fatalf("close: %+v, %v", run, err)
		}
		t.Logf("close and settlement in %v", time.Since(start).Round(time.Millisecond))
		rep, err := big.M.SettlementReport(ctx, big.AuctionID)
		if err != nil || len(rep.Lines) != n || rep.BuyersPaid != rep.SellersReceived+rep.TreasuryNet || rep.BuyersPaid <= 0 {
			t.Fatalf("report: %d lines, paid %s, %v", len(rep.Lines), rep.BuyersPaid, err)
		}
		won, err := big.M.Orders(ctx, exchange.OrderFilter{AuctionID: big.AuctionID, Statuses: []exchange.OrderStatus{exchange.OrderWon}, Limit: 10})
		if err != nil || len(won) != 10 {
			t.Fatalf("won orders: %d, %v", len(won), err)
		}
		vs, err := big.L.Verify(ctx)
		if err != nil || len(vs) > 0 {
			t.Fatalf("ledger: %v %v", vs, err)
		}
		if vs, err = big.M.Verify(ctx); err != nil || len(vs) > 0 {
			t.Fatalf("market: %v %v", vs, err)
		}
	})
}
