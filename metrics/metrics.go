// Package metrics is Clearhouse's Prometheus instrumentation: one registry per
// server holding what the web layer, the market, the reservation plan and the
// scheduled jobs record, and the figures read from the database at each scrape
// (open orders, the e-mail outbox, agents, best-effort tasks, overdue auctions,
// pools oversold beyond their effective capacity).
// Names follow Prometheus's conventions: a clearhouse_ prefix, base units (seconds,
// dollars) in the name, _total on counters.
package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const ns = "clearhouse"

// Metrics is one server's registry and the series it records.
type Metrics struct {
	reg *prometheus.Registry
	all []prometheus.Collector // every registered collector, for Names

	httpDuration *prometheus.HistogramVec
	agentReports *prometheus.CounterVec

	closes       *prometheus.CounterVec
	closeRounds  prometheus.Histogram
	finalGap     prometheus.Histogram
	closeSeconds prometheus.Histogram
	poolsCleared prometheus.Counter
	settleTime   prometheus.Histogram
	winners      prometheus.Counter
	paid         prometheus.Counter

	jobRuns     *prometheus.CounterVec
	jobFailures *prometheus.CounterVec
	jobSkipped  *prometheus.CounterVec
	jobDuration *prometheus.HistogramVec
	jobSuccess  *prometheus.GaugeVec

	planUpdates *prometheus.HistogramVec
	violations  prometheus.Gauge
}

// New returns the metrics of a server of the given version on db; now is the clock
// the database figures are read against (ages of agents, overdue auctions).
func New(db *store.DB, version string, now func() time.Time) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) {
		m.reg.MustRegister(c)
		m.all = append(m.all, c)
	}
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "build_info",
		Help: "Always 1; the version label is the running binary's.", ConstLabels: prometheus.Labels{"version": version}},
		func() float64 { return 1 }))
	for name, pool := range db.Pools() {
		f(collectors.NewDBStatsCollector(pool, name))
	}
	f(newDatabaseCollector(db, now))

	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "http", Name: "request_duration_seconds",
		Help:    "Time to answer an HTTP request, by method, route pattern and status; _count is the number of requests.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"method", "route", "status"})
	m.agentReports = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "agent", Name: "reports_total",
		Help: "Reports cluster agents posted to this server, by cluster and outcome (ok, refused: the server refused the report, error: it failed)."},
		[]string{"cluster", "outcome"})
	m.closes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "auction", Name: "closes_total",
		Help: "Binding auction closes this server ran, by outcome (settled, failed)."}, []string{"outcome"})
	m.finalGap = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: "auction", Name: "final_round_gap_ratio",
		Help:    "Each binding close's final round: the share of its proven welfare bound the allocation may be short of (0: proved optimal).",
		Buckets: []float64{0, 0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5}})
	m.closeRounds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: "auction", Name: "close_rounds",
		Help: "Clock rounds of each binding close.", Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000}})
	m.closeSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: "auction", Name: "close_duration_seconds",
		Help: "Time from stopping bids to a committed settlement, per binding close.", Buckets: prometheus.ExponentialBuckets(0.01, 3, 10)})
	m.poolsCleared = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "auction", Name: "pools_cleared_total",
		Help: "Pools cleared by settled binding closes."})
	m.settleTime = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: "settlement", Name: "duration_seconds",
		Help: "Time of the binding transaction (the clock's run and the settlement) per close.", Buckets: prometheus.ExponentialBuckets(0.01, 3, 10)})
	m.winners = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "settlement", Name: "winners_total",
		Help: "Orders that won a bundle in settled auctions."})
	m.paid = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: "settlement", Name: "paid_dollars_total",
		Help: "Dollars winners paid in settled auctions (sellers are paid from it; the treasury keeps the rest)."})
	m.jobRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "job", Name: "runs_total",
		Help: "Runs of each scheduled job on this server."}, []string{"name"})
	m.jobFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "job", Name: "failures_total",
		Help: "Runs of each scheduled job that failed (or panicked) on this server."}, []string{"name"})
	m.jobSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: "job", Name: "skipped_total",
		Help: "Runs of each scheduled job left to another replica that held its lock."}, []string{"name"})
	m.jobDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "job", Name: "duration_seconds",
		Help: "Time each scheduled job's run took.", Buckets: prometheus.ExponentialBuckets(0.005, 4, 10)}, []string{"name"})
	// The job's label is "name": "job" is the label Prometheus gives every target.
	m.jobSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: "job", Name: "last_success_timestamp_seconds",
		Help: "Unix time of each scheduled job's last successful run on this server."}, []string{"name"})
	m.planUpdates = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: "plan", Name: "update_duration_seconds",
		Help:    "Time of each update of the reservation plan; rebuilt is true when the whole plan was rebuilt from the database first.",
		Buckets: prometheus.ExponentialBuckets(0.001, 3, 10)}, []string{"rebuilt"})
	m.violations = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: "verify", Name: "violations",
		Help: "Invariant violations the last scheduled verify found (0: clean)."})
	for _, c := range []prometheus.Collector{m.httpDuration, m.agentReports, m.closes, m.finalGap, m.closeRounds, m.closeSeconds, m.poolsCleared,
		m.settleTime, m.winners, m.paid, m.jobRuns, m.jobFailures, m.jobSkipped, m.jobDuration, m.jobSuccess, m.planUpdates, m.violations} {
		f(c)
	}
	// The alerts take increase() of these: a series born at its first failure has no
	// earlier sample, and increase() sees nothing. Every outcome starts at 0.
	for _, outcome := range []string{"settled", "failed"} {
		m.closes.WithLabelValues(outcome)
	}
	return m
}

// Jobs makes the counters of each named scheduled job exist at 0 (runs, failures,
// skipped), so that the first failure of a job is an increase an alert sees.
func (m *Metrics) Jobs(names ...string) {
	for _, n := range names {
		m.jobRuns.WithLabelValues(n)
		m.jobFailures.WithLabelValues(n)
		m.jobSkipped.WithLabelValues(n)
	}
}

// Handler serves the registry in Prometheus's exposition formats. A database figure
// that cannot be read is left out and the rest is still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: m.reg})
}

// Registry is the registry, for tests and for callers that add their own series.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveRequest records one answered HTTP request. route is the matched pattern
// (never the raw path, whose ids would make a series per request; "" is recorded as
// "unmatched"). Every label is bounded whatever a client sends: a method outside
// HTTP's standard ones is "OTHER", a status outside 100-599 "other".
func (m *Metrics) ObserveRequest(method, route string, status int, took time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	code := "other"
	if status >= 100 && status <= 599 {
		code = strconv.Itoa(status)
	}
	m.httpDuration.WithLabelValues(MethodLabel(method), route, code).Observe(took.Seconds())
}

// MethodLabel is the method label of a request: the method when it is one of
// HTTP's standard methods (RFC 9110 and PATCH), else "OTHER", so that a client
// cannot add series by inventing methods.
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "OTHER"
}

// AgentReported records one report an authenticated cluster agent posted; cluster
// must be the one its token is for (never a client's path), so the label is bounded
// by the clusters the market knows.
func (m *Metrics) AgentReported(cluster string, status int) {
	outcome := "ok"
	switch {
	case status >= 500:
		outcome = "error"
	case status >= 400:
		outcome = "refused"
	}
	m.agentReports.WithLabelValues(cluster, outcome).Inc()
}

// AuctionClosed records a committed binding close (exchange.CloseObserver).
func (m *Metrics) AuctionClosed(st exchange.CloseStats) {
	outcome := "failed"
	if st.Settled {
		outcome = "settled"
	}
	m.closes.WithLabelValues(outcome).Inc()
	m.closeRounds.Observe(float64(st.Rounds))
	m.closeSeconds.Observe(st.Close.Seconds())
	m.settleTime.Observe(st.Settle.Seconds())
	m.poolsCleared.Add(float64(st.Pools))
	m.winners.Add(float64(st.Winners))
	m.paid.Add(float64(st.Paid) / 1e6)
	if st.FinalRound {
		m.finalGap.Observe(st.FinalGap)
	}
}

// PlanUpdated records one update of the reservation plan (fleet.PlanObserver).
func (m *Metrics) PlanUpdated(rebuilt bool, took time.Duration) {
	m.planUpdates.WithLabelValues(strconv.FormatBool(rebuilt)).Observe(took.Seconds())
}

// JobRan records one run of a scheduled job: ran is false when another replica
// held the job's lock; err is its failure.
func (m *Metrics) JobRan(job string, ran bool, took time.Duration, err error, at time.Time) {
	if !ran && err == nil {
		m.jobSkipped.WithLabelValues(job).Inc()
		return
	}
	m.jobRuns.WithLabelValues(job).Inc()
	m.jobDuration.WithLabelValues(job).Observe(took.Seconds())
	if err != nil {
		m.jobFailures.WithLabelValues(job).Inc()
		return
	}
	m.jobSuccess.WithLabelValues(job).Set(float64(at.Unix()))
}

// Verified records what the scheduled verify found.
func (m *Metrics) Verified(violations int) { m.violations.Set(float64(violations)) }

// Names lists the name of every series family the registry can serve, whether or
// not it has a sample yet (dashboards and alert rules are checked against it).
func (m *Metrics) Names() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range m.all {
			c.Describe(ch)
		}
		close(ch)
	}()
	var names []string
	for d := range ch {
		// A Desc shows its name only in its String: Desc{fqName: "name", ...}.
		s := d.String()
		if i := strings.Index(s, `fqName: "`); i >= 0 {
			rest := s[i+len(`fqName: "`):]
			names = append(names, rest[:strings.IndexByte(rest, '"')])
		}
	}
	return names
}
