package exchange_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A binding close refreshes PostgreSQL's statistics of the tables it filled, so the
// settlement report's joins are planned for the rows the close wrote, not for the
// empty tables the statistics taken before it saw.
func TestCloseRefreshesTheSettledTablesStatistics(t *testing.T) {
	db, ok := storetest.NewPostgres(t)
	if !ok {
		t.Skip("needs PostgreSQL (CLEARHOUSE_TEST_POSTGRES)")
	}
	ctx := context.Background()
	mk := newAuctionMarket(t, db)
	for _, team := range []string{"search", "ads"} {
		if _, err := mk.Order("member@"+team, exchange.OrderSpec{Team: team, Limit: money(400),
			Bundles: []exchange.Bundle{{"eu-west/cpu": 100}}}); err != nil {
			t.Fatal(err)
		}
	}
	// What the planner believes about a table: the row count of its last ANALYZE
	// (-1 when never analyzed).
	tuples := func(table string) float64 {
		var n float64
		if err := db.Read.Raw(`SELECT reltuples FROM pg_class WHERE relname = ? AND relnamespace = current_schema()::regnamespace`, table).
			Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"run_outcomes", "settlement_lines"} {
		var rows int64
		db.Read.Raw("SELECT COUNT(*) FROM " + table).Scan(&rows)
		if got := tuples(table); rows == 0 || got != float64(rows) {
			t.Errorf("%s: the planner counts %v rows after the close, the table has %d", table, got, rows)
		}
	}
}
