package fleettest

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// ThousandAgents is the load of issue 25's goal: 1,000 agents reporting every 10 s
// (100 reports a second), while each server's pages are read five times a second,
// over windows of 10 s.
var ThousandAgents = Load{Agents: 1000, Every: 10 * time.Second, Window: 10 * time.Second, PagesPerSecond: 5}

// Load is agents' reports, paced, beside pages read at a steady rate.
type Load struct {
	Agents         int           // agents, each reporting once every Every
	Every          time.Duration //
	Window         time.Duration // how long one Run lasts
	PagesPerSecond int           // each reader's pages a second
}

// Measured holds the latencies of the reports and pages of one or more runs.
type Measured struct {
	Reports, Pages []time.Duration
}

// Run runs one window of l: report(i) for the i-th report, each in a goroutine of
// its own, paced at Agents/Every a second, while every reader reads a page
// PagesPerSecond times a second until the last report has been answered. A report or
// page that fails fails tb (Error, so the others finish). The latencies are added to m.
func (l Load) Run(tb testing.TB, m *Measured, report func(i int) error, readers ...func() error) {
	var mu sync.Mutex
	timed := func(into *[]time.Duration, fn func() error) bool {
		start := time.Now()
		if err := fn(); err != nil {
			tb.Error(err)
			return false
		}
		d := time.Since(start)
		mu.Lock()
		*into = append(*into, d)
		mu.Unlock()
		return true
	}
	stop := make(chan struct{})
	var pages sync.WaitGroup
	for _, read := range readers {
		pages.Go(func() {
			tick := time.NewTicker(time.Second / time.Duration(l.PagesPerSecond))
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if !timed(&m.Pages, read) {
					return
				}
			}
		})
	}
	var reports sync.WaitGroup
	tick := time.NewTicker(l.Every / time.Duration(l.Agents))
	end := time.After(l.Window)
pace:
	for i := 0; ; i++ {
		select {
		case <-end:
			break pace
		case <-tick.C:
		}
		reports.Go(func() { timed(&m.Reports, func() error { return report(i) }) })
	}
	tick.Stop()
	reports.Wait()
	close(stop)
	pages.Wait()
}

// ReportMetrics reports, for b's elapsed time, the reports taken a second, the 50th
// and 99th percentiles of a report's and of a page's latency in milliseconds, and the
// pages read a second.
func (m *Measured) ReportMetrics(b *testing.B) {
	b.ReportMetric(float64(len(m.Reports))/b.Elapsed().Seconds(), "reports/s")
	b.ReportMetric(Percentile(m.Reports, 0.5), "report-p50-ms")
	b.ReportMetric(Percentile(m.Reports, 0.99), "report-p99-ms")
	b.ReportMetric(Percentile(m.Pages, 0.5), "page-p50-ms")
	b.ReportMetric(Percentile(m.Pages, 0.99), "page-p99-ms")
	b.ReportMetric(float64(len(m.Pages))/b.Elapsed().Seconds(), "pages/s")
}

// Percentile is the p-th percentile (0 to 1) of ds in milliseconds, 0 for none. It
// sorts ds.
func Percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return float64(ds[min(int(p*float64(len(ds))), len(ds)-1)].Microseconds()) / 1000
}
