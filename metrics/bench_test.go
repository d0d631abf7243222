package metrics_test

import (
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/metrics"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// BenchmarkScrape is one scrape's gathering, database queries included, on a
// migrated SQLite database with a few hundred request series.
func BenchmarkScrape(b *testing.B) {
	m := metrics.New(storetest.New(b), "bench", time.Now)
	for i := range 300 {
		m.ObserveRequest("GET", "/route/"+string(rune('a'+i%26))+"/:id", 200+i%5, time.Millisecond)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Registry().Gather(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/scrape")
}

// BenchmarkObserveRequest is what the metrics middleware adds to each request.
func BenchmarkObserveRequest(b *testing.B) {
	m := metrics.New(storetest.New(b), "bench", time.Now)
	for b.Loop() {
		m.ObserveRequest("GET", "/auctions/:id", 200, 3*time.Millisecond)
	}
}
