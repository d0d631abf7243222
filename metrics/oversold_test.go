package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/metrics"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// clearhouse_pool_oversold_units is 0 for every pool whose holdings fit its
// effective capacity (present from the start, so an alert sees the first rise), and
// how far holdings exceed it where they do not: 60 cores held of a measured 48.
func TestOversoldUnitsPerPool(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		m := metrics.New(db, "test", mk.Clock.Now)
		body := scrape(t, m)
		for _, want := range []string{`clearhouse_pool_oversold_units{pool="us-east/cpu"} 0`, `clearhouse_pool_oversold_units{pool="eu-west/cpu"} 0`} {
			if !strings.Contains(body, want+"\n") {
				t.Errorf("before a measurement the scrape lacks %s", want)
			}
		}
		if err := db.Write.Exec(`INSERT INTO pool_measured_capacity (pool_id, capacity, measured_at) VALUES (?, ?, ?)`, "us-east/cpu", 48, mk.Clock.Now()).Error; err != nil {
			t.Fatal(err)
		}
		body = scrape(t, m)
		for _, want := range []string{`clearhouse_pool_oversold_units{pool="us-east/cpu"} 12`, `clearhouse_pool_oversold_units{pool="eu-west/cpu"} 0`} {
			if !strings.Contains(body, want+"\n") {
				t.Errorf("after measuring 48 cores the scrape lacks %s", want)
			}
		}
	})
}
