package web

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

func (s *Server) idlePage(c *gin.Context) { s.renderIdle(c, http.StatusOK, "", nil) }

// renderIdle renders the idle capacity page with status: each pool's settings, the
// abacus auctions, the fairness reports and the best-effort jobs queued or running.
// failed names the pool whose form errs holds the errors of, if any.
func (s *Server) renderIdle(c *gin.Context, status int, failed string, errs templates.FieldErrors) {
	ctx := c.Request.Context()
	settings, err := s.svc.BestEffort.Settings(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	v := templates.IdleView{Errors: errs, Failed: failed}
	v.Policies = idlePolicyOptions()
	var abacus []string
	v.Pools, abacus = idlePoolRows(settings)
	if v.Auctions, err = s.idleAuctions(ctx, abacus); err != nil {
		s.fail(c, err)
		return
	}
	reports, err := s.svc.BestEffort.FairnessReports(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	v.Reports = fairnessTables(reports)
	if v.Jobs, err = s.idleJobs(ctx); err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, status, templates.IdlePage(s.page(c, "Idle capacity", "idle"), v))
}

// idlePolicyOptions returns the policies a pool may follow, each in plain words.
func idlePolicyOptions() []templates.Option {
	var opts []templates.Option
	for _, p := range besteffort.Policies() {
		opts = append(opts, templates.Option{Value: p, Label: idlePolicyWords[p]})
	}
	return opts
}

// idlePoolRows returns each pool's settings row, and the clusters (sorted) where
// some pool follows abacus.
func idlePoolRows(settings []besteffort.IdleSettings) ([]templates.IdlePoolRow, []string) {
	var rows []templates.IdlePoolRow
	abacus := map[string]bool{}
	for _, st := range settings {
		rows = append(rows, templates.IdlePoolRow{Pool: st.Pool, Policy: st.Policy, Alpha: strconv.FormatFloat(st.Alpha, 'g', -1, 64),
			MinRuntime: fmtDuration(st.MinRuntime), Exposure: strconv.FormatFloat(st.Exposure, 'g', -1, 64)})
		if st.Policy == besteffort.PolicyAbacus {
			cluster, _, _ := strings.Cut(st.Pool, "/")
			abacus[cluster] = true
		}
	}
	return rows, slices.Sorted(maps.Keys(abacus))
}

// idleAuctions returns the current abacus auction of each of clusters, in their
// order, leaving out those with no jobs.
func (s *Server) idleAuctions(ctx context.Context, clusters []string) ([]templates.AuctionTable, error) {
	var tables []templates.AuctionTable
	for _, cluster := range clusters {
		a, err := s.svc.BestEffort.Auction(ctx, cluster)
		if err != nil {
			return nil, err
		}
		if len(a.Jobs) == 0 {
			continue
		}
		tables = append(tables, auctionTable(cluster, a))
	}
	return tables, nil
}

// auctionTable is one cluster's abacus auction: its summary and a row per job.
func auctionTable(cluster string, a besteffort.AuctionView) templates.AuctionTable {
	t := templates.AuctionTable{Cluster: cluster, Summary: fmt.Sprintf("alpha %g, %d iterations, %s", a.Alpha, a.Iterations, a.Outcome)}
	if a.SLO {
		revenue, _ := moneyfmt.FromDollars(a.Revenue)
		t.Summary += fmt.Sprintf("; SLO variant: the served jobs (budgets %s) share first, the others what they leave", moneyfmt.Cents(revenue))
	}
	for _, j := range a.Jobs {
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(j.Shares)) {
			parts = append(parts, fmt.Sprintf("%s %.1f%%", p, 100*j.Shares[p]))
		}
		shares := strings.Join(parts, ", ")
		if a.SLO && !j.Served { // its own auction among the unserved, over what the served leave
			shares += " of what the served jobs leave"
		}
		row := templates.AuctionRow{Job: "#" + j.Job, Team: j.Team, Budget: monOf(j.Budget), Utility: j.Utility, Shares: shares, SLO: "—"}
		if j.MinUtility != nil {
			served := "not served"
			if j.Served {
				served = "served"
			}
			row.SLO = fmt.Sprintf("%.3g: %s (utility %.3g)", *j.MinUtility, served, j.Value)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// fairnessTables returns a table per pool of each fairness report, in order.
func fairnessTables(reports []besteffort.FairnessReport) []templates.FairnessTable {
	var tables []templates.FairnessTable
	for _, r := range reports {
		for _, pf := range r.Pools {
			tables = append(tables, fairnessTable(r, pf))
		}
	}
	return tables
}

// fairnessTable is one pool's fairness report over r's span: its summary, a row per
// team with its simulated wait under each policy, the report in plain words, and
// the measured and each policy's unfairness.
func fairnessTable(r besteffort.FairnessReport, pf besteffort.PoolFairness) templates.FairnessTable {
	t := templates.FairnessTable{Title: fmt.Sprintf("%s, last %s", pf.Pool, r.Span),
		Summary:  fmt.Sprintf("%s to %s, computed %s; coalition wait %s unit-hours; Shapley %s", fmtTime(r.From), fmtTime(r.To), fmtTime(r.ComputedAt), fmtDecimal(pf.CoalitionValue, 2), exactText(pf.Exact)),
		Policies: slices.Sorted(maps.Keys(pf.Unfairness))}
	if pf.OwnerLoad > 0 {
		t.Summary += fmt.Sprintf("; owners' own demand replayed: %s unit-hours", groupDigits(int64(math.Round(pf.OwnerLoad))))
	}
	if pf.Scale > 1 {
		t.Summary += fmt.Sprintf("; replayed at %d units a simulated task (the work exceeds 20,000 one-unit tasks)", pf.Scale)
	}
	for _, tf := range pf.Teams {
		row := templates.FairnessRow{Team: tf.Team, Shapley: fmtDecimal(tf.Shapley, 2), Measured: fmtDecimal(tf.Measured, 2)}
		for _, pol := range t.Policies {
			row.Simulated = append(row.Simulated, fmtDecimal(tf.Simulated[pol], 2))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Words = fairnessWords(r.Span, pf.MeasuredUnfairness, pf.Unfairness, pf.Teams)
	t.Unfairness = append(t.Unfairness, fmtDecimal(pf.MeasuredUnfairness, 2))
	for _, pol := range t.Policies {
		t.Unfairness = append(t.Unfairness, fmtDecimal(pf.Unfairness[pol], 2))
	}
	return t
}

// idleJobs returns the rows of the best-effort jobs queued or running (200 at most).
func (s *Server) idleJobs(ctx context.Context) ([]templates.BestEffortRow, error) {
	jobs, err := s.svc.BestEffort.Jobs(ctx, besteffort.JobFilter{Statuses: []besteffort.JobStatus{besteffort.JobQueued, besteffort.JobRunning}, Limit: 200})
	if err != nil {
		return nil, err
	}
	units, err := s.poolUnits(ctx)
	if err != nil {
		return nil, err
	}
	var rows []templates.BestEffortRow
	for _, j := range jobs {
		rows = append(rows, bestEffortRow(j, s.now(), units))
	}
	return rows, nil
}

func exactText(exact bool) string {
	if exact {
		return "exact"
	}
	return "sampled"
}

// saveIdleSettings saves one pool's idle settings from its row's form.
func (s *Server) saveIdleSettings(c *gin.Context) {
	pool := c.Param("cluster") + "/" + c.Param("resource")
	st := besteffort.IdleSettings{Pool: pool, Policy: c.PostForm("policy")}
	errs := templates.FieldErrors{}
	var err error
	if st.Alpha, err = strconv.ParseFloat(strings.TrimSpace(c.PostForm("alpha")), 64); err != nil {
		errs["alpha"] = "alpha: give a number from 0 to 1."
	}
	if st.MinRuntime, err = time.ParseDuration(strings.TrimSpace(c.PostForm("min_runtime"))); err != nil {
		errs["min_runtime"] = "minimum runtime: give a duration such as 10m."
	}
	if st.Exposure, err = strconv.ParseFloat(strings.TrimSpace(c.PostForm("exposure")), 64); err != nil {
		errs["exposure"] = "exposure: give a share such as 0.3."
	}
	if len(errs) == 0 {
		if err := s.svc.BestEffort.SetSettings(c.Request.Context(), st); err != nil {
			switch clearhouse.ErrorCode(err) {
			case clearhouse.EINVALID, clearhouse.ECONFLICT:
				errs["form"] = clearhouse.ErrorMessage(err)
			default:
				s.fail(c, err)
				return
			}
		}
	}
	if len(errs) > 0 {
		s.renderIdle(c, http.StatusUnprocessableEntity, pool, errs)
		return
	}
	s.redirectWithFlash(c, "/operate/idle", "ok", fmt.Sprintf("Saved %s: %s, minimum runtime %s, exposure %g.", pool, st.Policy, fmtDuration(st.MinRuntime), st.Exposure))
}

// fairnessWords reads one pool's fairness report for an operator in plain words:
// which policy would have been fairest over the span, whether the waits measured
// here came close, and which teams waited more than their fair share. The exact
// Shapley values stay one click away.
func fairnessWords(span string, measured float64, unfairness map[string]float64, teams []besteffort.TeamFairness) string {
	best, bestU := "", math.Inf(1)
	for _, pol := range slices.Sorted(maps.Keys(unfairness)) {
		if u := unfairness[pol]; u < bestU {
			best, bestU = pol, u
		}
	}
	var b strings.Builder
	switch {
	case best == "":
		b.WriteString("No policy was replayed for this span.")
	case measured <= bestU:
		fmt.Fprintf(&b, "Over the last %s the waits here were as fair as any policy's replay (the fairest replay: %s).", span, best)
	default:
		fmt.Fprintf(&b, "Over the last %s, %s would have shared the waits most fairly; the waits measured here were less fair than its replay.", span, best)
	}
	type over struct {
		team string
		by   float64
	}
	var waited []over
	for _, tf := range teams {
		if d := tf.Measured - tf.Shapley; d > 0.005 {
			waited = append(waited, over{tf.Team, d})
		}
	}
	slices.SortFunc(waited, func(a, b over) int { return cmp.Compare(b.by, a.by) })
	if len(waited) == 0 {
		b.WriteString(" No team waited more than its fair share.")
		return b.String()
	}
	var names []string
	for i, w := range waited {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(waited)-3))
			break
		}
		names = append(names, fmt.Sprintf("%s (by %s unit-hours)", w.team, fmtDecimal(w.by, 1)))
	}
	b.WriteString(" Waited more than their fair share: " + strings.Join(names, ", ") + ".")
	return b.String()
}
