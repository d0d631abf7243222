package metrics

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/prometheus/client_golang/prometheus"
)

// databaseCollector reads, at each scrape, the figures the database holds for every
// replica alike: open orders, the e-mail outbox, when each cluster's agent was last
// seen, best-effort tasks, overdue auctions and oversold pools.
type databaseCollector struct {
	db  *store.DB
	now func() time.Time

	openOrders, outbox, outboxRetrying, agentAge, agentCorrections, agentErrorAt, tasks, preempted, waiting, overdue, lastSettled, oversold *prometheus.Desc
}

func newDatabaseCollector(db *store.DB, now func() time.Time) *databaseCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, labels, nil)
	}
	return &databaseCollector{db: db, now: now,
		openOrders:       d("open_orders", "Orders in open auctions, by status (open, awaiting_approval).", "status"),
		outbox:           d("email_outbox_pending", "Notification e-mails waiting in the outbox to be sent."),
		outboxRetrying:   d("email_outbox_retrying", "Outbox e-mails that failed at least once and wait for a retry."),
		agentAge:         d("agent_last_seen_age_seconds", "Seconds since a cluster's agent last authenticated (token use is recorded at most once a minute).", "cluster"),
		agentCorrections: d("agent_drift_corrections_total", "Drift corrections a cluster's agent reported in all: limits in the cluster that someone else changed and the agent set back.", "cluster"),
		agentErrorAt:     d("agent_last_error_timestamp_seconds", "Unix time of the last agent report that carried errors, by cluster (see /operate for the errors).", "cluster"),
		tasks:            d("best_effort_tasks_running", "Best-effort tasks running on idle capacity, by cluster.", "cluster"),
		preempted:        d("best_effort_tasks_preempted_total", "Best-effort tasks preempted so far, by cluster.", "cluster"),
		waiting:          d("best_effort_jobs_waiting", "Best-effort jobs queued and waiting for idle capacity, by cluster.", "cluster"),
		overdue:          d("auctions_overdue", "Auctions whose bid window ended but that are not yet settled or failed."),
		lastSettled:      d("auction_last_settled_timestamp_seconds", "Unix time the most recently settled auction settled."),
		oversold:         d("pool_oversold_units", "Units of quota teams hold beyond the pool's effective capacity (an operator's override, else the agent's measured capacity, else the configured one), 0 for every pool that fits.", "pool"),
	}
}

func (c *databaseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.openOrders, c.outbox, c.outboxRetrying, c.agentAge, c.agentCorrections, c.agentErrorAt, c.tasks, c.preempted, c.waiting, c.overdue, c.lastSettled, c.oversold} {
		ch <- d
	}
}

// scrapeTimeout bounds the queries of one scrape.
const scrapeTimeout = 5 * time.Second

func (c *databaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	db := c.db.Read.WithContext(ctx)
	now := c.now().UTC()
	type labelled struct {
		Label string
		N     int64
	}
	grouped := func(desc *prometheus.Desc, kind prometheus.ValueType, sql string, args ...any) {
		var rows []labelled
		if err := db.Raw(sql, args...).Scan(&rows).Error; err != nil {
			ch <- prometheus.NewInvalidMetric(desc, err)
			return
		}
		for _, r := range rows {
			ch <- prometheus.MustNewConstMetric(desc, kind, float64(r.N), r.Label)
		}
	}
	single := func(desc *prometheus.Desc, sql string, args ...any) {
		var n int64
		if err := db.Raw(sql, args...).Scan(&n).Error; err != nil {
			ch <- prometheus.NewInvalidMetric(desc, err)
			return
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n))
	}
	var orders []labelled
	if err := db.Raw(`SELECT o.status AS label, COUNT(*) AS n FROM orders o JOIN auctions a ON a.id = o.auction_id
		WHERE o.status IN ('open', 'awaiting_approval') AND a.status IN ('scheduled', 'open', 'closing') GROUP BY o.status`).Scan(&orders).Error; err != nil {
		ch <- prometheus.NewInvalidMetric(c.openOrders, err)
	} else {
		n := map[string]int64{"open": 0, "awaiting_approval": 0} // both always present, 0 included
		for _, r := range orders {
			n[r.Label] = r.N
		}
		for status, count := range n {
			ch <- prometheus.MustNewConstMetric(c.openOrders, prometheus.GaugeValue, float64(count), status)
		}
	}
	single(c.outbox, `SELECT COUNT(*) FROM email_outbox WHERE sent_at IS NULL`)
	single(c.outboxRetrying, `SELECT COUNT(*) FROM email_outbox WHERE sent_at IS NULL AND attempts > 0`)
	grouped(c.tasks, prometheus.GaugeValue, `SELECT cluster_id AS label, COUNT(*) AS n FROM best_effort_tasks WHERE status = 'running' GROUP BY cluster_id`)
	grouped(c.preempted, prometheus.CounterValue, `SELECT cluster_id AS label, COUNT(*) AS n FROM best_effort_tasks WHERE status = 'preempted' GROUP BY cluster_id`)
	grouped(c.waiting, prometheus.GaugeValue, `SELECT cluster_id AS label, COUNT(*) AS n FROM best_effort_jobs WHERE status = 'queued' GROUP BY cluster_id`)
	single(c.overdue, `SELECT COUNT(*) FROM auctions WHERE status IN ('open', 'closing') AND closes_at <= ?`, now)

	var seen []struct {
		ClusterID  string
		LastUsedAt time.Time
	}
	if err := db.Raw(`SELECT cluster_id, last_used_at FROM api_tokens WHERE scope = 'agent' AND revoked_at IS NULL AND last_used_at IS NOT NULL`).Scan(&seen).Error; err != nil {
		ch <- prometheus.NewInvalidMetric(c.agentAge, err)
	} else {
		last := map[string]time.Time{}
		for _, s := range seen {
			if s.LastUsedAt.After(last[s.ClusterID]) {
				last[s.ClusterID] = s.LastUsedAt
			}
		}
		for cluster, at := range last {
			ch <- prometheus.MustNewConstMetric(c.agentAge, prometheus.GaugeValue, max(now.Sub(at).Seconds(), 0), cluster)
		}
	}
	var statuses []struct {
		ClusterID   string
		Corrections int64
		ErrorsAt    *time.Time
	}
	if err := db.Raw(`SELECT cluster_id, corrections, errors_at FROM agent_statuses`).Scan(&statuses).Error; err != nil {
		ch <- prometheus.NewInvalidMetric(c.agentCorrections, err)
	} else {
		for _, st := range statuses {
			ch <- prometheus.MustNewConstMetric(c.agentCorrections, prometheus.CounterValue, float64(st.Corrections), st.ClusterID)
			if st.ErrorsAt != nil {
				ch <- prometheus.MustNewConstMetric(c.agentErrorAt, prometheus.GaugeValue, float64(st.ErrorsAt.Unix()), st.ClusterID)
			}
		}
	}
	if caps, err := exchange.PoolCapacities(db, now); err != nil {
		ch <- prometheus.NewInvalidMetric(c.oversold, err)
	} else {
		for _, pc := range caps {
			ch <- prometheus.MustNewConstMetric(c.oversold, prometheus.GaugeValue, float64(pc.Oversold()), pc.Pool)
		}
	}
	var settled []time.Time
	if err := db.Raw(`SELECT settled_at FROM auctions WHERE settled_at IS NOT NULL ORDER BY settled_at DESC LIMIT 1`).Scan(&settled).Error; err != nil {
		ch <- prometheus.NewInvalidMetric(c.lastSettled, err)
	} else if len(settled) == 1 {
		ch <- prometheus.MustNewConstMetric(c.lastSettled, prometheus.GaugeValue, float64(settled[0].Unix()))
	}
}
