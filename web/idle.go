package web

import (
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

func (s *Server) renderIdle(c *gin.Context, status int, failed string, errs templates.FieldErrors) {
	ctx := c.Request.Context()
	settings, err := s.svc.BestEffort.Settings(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	v := templates.IdleView{Errors: errs, Failed: failed}
	for _, p := range besteffort.Policies() {
		v.Policies = append(v.Policies, templates.Option{Value: p, Label: idlePolicyWords[p]})
	}
	abacus := map[string]bool{}
	for _, st := range settings {
		v.Pools = append(v.Pools, templates.IdlePoolRow{Pool: st.Pool, Policy: st.Policy, Alpha: strconv.FormatFloat(st.Alpha, 'g', -1, 64),
			MinRuntime: fmtDuration(st.MinRuntime), Exposure: strconv.FormatFloat(st.Exposure, 'g', -1, 64)})
		if st.Policy == besteffort.PolicyAbacus {
			cluster, _, _ := strings.Cut(st.Pool, "/")
			abacus[cluster] = true
		}
	}
	for _, cluster := range slices.Sorted(maps.Keys(abacus)) {
		a, err := s.svc.BestEffort.Auction(ctx, cluster)
		if err != nil {
			s.fail(c, err)
			return
		}
		if len(a.Jobs) == 0 {
			continue
		}
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
		v.Auctions = append(v.Auctions, t)
	}
	reports, err := s.svc.BestEffort.FairnessReports(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	for _, r := range reports {
		for _, pf := range r.Pools {
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
			t.Unfairness = append(t.Unfairness, fmtDecimal(pf.MeasuredUnfairness, 2))
			for _, pol := range t.Policies {
				t.Unfairness = append(t.Unfairness, fmtDecimal(pf.Unfairness[pol], 2))
			}
			v.Reports = append(v.Reports, t)
		}
	}
	jobs, err := s.svc.BestEffort.Jobs(ctx, besteffort.JobFilter{Statuses: []besteffort.JobStatus{besteffort.JobQueued, besteffort.JobRunning}, Limit: 200})
	if err != nil {
		s.fail(c, err)
		return
	}
	for _, j := range jobs {
		v.Jobs = append(v.Jobs, bestEffortRow(j, s.now()))
	}
	s.render(c, status, templates.IdlePage(s.page(c, "Idle capacity", "idle"), v))
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
