package web

import (
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
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// bestEffortForm is an empty job form with the clusters and resources to choose
// from, and the clusters under the abacus policy.
func (s *Server) bestEffortForm(c *gin.Context) (templates.BestEffortForm, error) {
	ctx := c.Request.Context()
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		return templates.BestEffortForm{}, err
	}
	f := templates.BestEffortForm{Errors: templates.FieldErrors{}, Tasks: "10"}
	seenCluster, seenRes := map[string]bool{}, map[string]bool{}
	for _, p := range pools {
		if !seenCluster[p.ClusterID] {
			seenCluster[p.ClusterID] = true
			f.Clusters = append(f.Clusters, templates.Option{Value: p.ClusterID, Label: p.ClusterID})
		}
		if !seenRes[p.Resource] {
			seenRes[p.Resource] = true
			f.Resources = append(f.Resources, templates.ResourceInput{Name: p.Resource, Unit: p.Unit})
			f.Weights = append(f.Weights, templates.ResourceInput{Name: p.Resource, Unit: p.Unit})
		}
	}
	settings, err := s.svc.BestEffort.Settings(ctx)
	if err != nil {
		return f, err
	}
	abacus := map[string]bool{}
	for _, st := range settings {
		if st.Policy == besteffort.PolicyAbacus {
			cluster, _, _ := strings.Cut(st.Pool, "/")
			abacus[cluster] = true
		}
	}
	f.Abacus = slices.Sorted(maps.Keys(abacus))
	return f, nil
}

// jobSpecFromForm reads the posted form into f and a spec, recording what is
// malformed in f.Errors.
func jobSpecFromForm(c *gin.Context, f *templates.BestEffortForm) besteffort.JobSpec {
	f.Cluster, f.Tasks = c.PostForm("cluster"), c.PostForm("tasks")
	f.MaxDuration, f.Budget, f.Utility = strings.TrimSpace(c.PostForm("max_task_duration")), strings.TrimSpace(c.PostForm("budget")), c.PostForm("utility")
	spec := besteffort.JobSpec{Configuration: map[string]int64{}}
	f.Workload = strings.TrimSpace(c.PostForm("workload"))
	if w, err := besteffort.ParseWorkload([]byte(f.Workload)); err != nil {
		f.Errors["workload"] = clearhouse.ErrorMessage(err)
	} else {
		spec.Workload = w
	}
	for i, r := range f.Resources {
		raw := strings.TrimSpace(c.PostForm("u." + r.Name))
		f.Resources[i].Value = raw
		if raw == "" || raw == "0" {
			continue
		}
		n, err := parseWhole(raw, 1, 1_000_000)
		if err != nil {
			f.Errors["u."+r.Name] = err.Error()
			continue
		}
		spec.Configuration[f.Cluster+"/"+r.Name] = n
	}
	if len(spec.Configuration) == 0 && len(f.Errors) == 0 {
		f.Errors["cluster"] = "Give the units of at least one resource a task needs."
	}
	var err error
	if spec.Tasks, err = parseWhole(f.Tasks, 1, besteffort.MaxTasks); err != nil {
		f.Errors["tasks"] = err.Error()
	}
	if f.MaxDuration != "" {
		if spec.MaxTaskDuration, err = time.ParseDuration(f.MaxDuration); err != nil {
			f.Errors["max_task_duration"] = "Give a duration such as 45m or 2h, or leave it empty."
		}
	}
	if slices.Contains(f.Abacus, f.Cluster) {
		// Only the text is read here; a budget of zero or less is refused by the
		// service (besteffort.checkBudget), whose message the form shows.
		if spec.Budget, err = ledger.ParseMoney(f.Budget); err != nil {
			f.Errors["budget"] = "Give a budget in dollars: this cluster shares idle capacity by auction."
		}
		spec.Utility = "linear"
		if f.Utility == "log" {
			spec.Utility = "log"
		}
		f.MinUtility = strings.TrimSpace(c.PostForm("min_utility"))
		if f.MinUtility != "" {
			x, err := strconv.ParseFloat(f.MinUtility, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				f.Errors["min_utility"] = "Give a number, or leave it empty for no minimum."
			} else {
				spec.MinUtility = &x
			}
		}
		for i, w := range f.Weights {
			raw := strings.TrimSpace(c.PostForm("w." + w.Name))
			f.Weights[i].Value = raw
			if raw == "" {
				continue
			}
			x, err := strconv.ParseFloat(raw, 64)
			pool := f.Cluster + "/" + w.Name
			switch {
			case err != nil || !(x > 0):
				f.Errors["w."+w.Name] = "Give a positive number, or leave it empty for 1."
			case spec.Configuration[pool] == 0:
				f.Errors["w."+w.Name] = "A task of this job does not use " + w.Name + "."
			default:
				if spec.Weights == nil {
					spec.Weights = map[string]float64{}
				}
				spec.Weights[pool] = x
			}
		}
	}
	return spec
}

func (s *Server) bestEffortPage(c *gin.Context) {
	f, err := s.bestEffortForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	if len(f.Clusters) > 0 {
		f.Cluster = f.Clusters[0].Value
	}
	s.renderBestEffort(c, http.StatusOK, f, nil)
}

// submitBestEffort queues a job from the form, or (action=quote) shows the shares
// an abacus job would get now.
func (s *Server) submitBestEffort(c *gin.Context) {
	f, err := s.bestEffortForm(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	spec := jobSpecFromForm(c, &f)
	if len(f.Errors) > 0 {
		s.renderBestEffort(c, http.StatusUnprocessableEntity, f, nil)
		return
	}
	ctx := c.Request.Context()
	if c.PostForm("action") == "quote" {
		q, err := s.svc.BestEffort.Quote(ctx, userOf(c), spec)
		if err != nil {
			s.bestEffortFailure(c, err, f)
			return
		}
		var lines []string
		for _, pool := range slices.Sorted(maps.Keys(q.Shares)) {
			lines = append(lines, fmt.Sprintf("%s: %.0f%% of the units that free up", pool, 100*q.Shares[pool]))
		}
		lines = append(lines, fmt.Sprintf("utility %.3g at these shares, with %s", q.Utility, weightsText(q.Weights, spec.Configuration)))
		if q.SLO && q.Served {
			lines = append(lines, "served first: its minimum utility fits beside the other served jobs'")
		} else if q.SLO {
			lines = append(lines, "not served first: the shares are of what the served jobs leave; a minimum utility not met when the job is done is not charged")
		}
		s.renderBestEffort(c, http.StatusOK, f, lines)
		return
	}
	v, err := s.svc.BestEffort.Submit(ctx, userOf(c), spec)
	if err != nil {
		s.bestEffortFailure(c, err, f)
		return
	}
	s.redirectWithFlash(c, "/best-effort", "ok", fmt.Sprintf("Best-effort job #%d queued: %s in %s.", v.ID, countOf(int64(v.Tasks), "task"), v.ClusterID))
}

func (s *Server) bestEffortFailure(c *gin.Context, err error, f templates.BestEffortForm) {
	switch clearhouse.ErrorCode(err) {
	case clearhouse.EINVALID, clearhouse.EUNPROCESSABLE, clearhouse.ECONFLICT:
		field, msg := fieldOf(err)
		switch field {
		case "tasks", "max_task_duration", "budget", "utility", "min_utility", "workload":
		default:
			field, msg = "cluster", clearhouse.ErrorMessage(err)
		}
		f.Errors[field] = msg
		s.renderBestEffort(c, http.StatusUnprocessableEntity, f, nil)
	default:
		s.fail(c, err)
	}
}

func (s *Server) cancelBestEffort(c *gin.Context) {
	id, err := jobID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	// Only a job of the viewer's team gets a confirmation page: any other id is not
	// found, as the cancellation itself would answer.
	j, err := s.svc.BestEffort.Job(c.Request.Context(), id)
	if err == nil && fleet.ActFor(userOf(c), j.TeamID) != nil {
		err = clearhouse.Errorf(clearhouse.ENOTFOUND, "best-effort job: no job %d for your team", id)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	if !s.confirmed(c, "best-effort", templates.Confirm{
		Question: fmt.Sprintf("Cancel best-effort job #%d?", id),
		Lines: []string{"Its waiting tasks are dropped and its running tasks stopped; tasks already done stay done.",
			"What is left of its budget, if it has one, is released to the team."},
		Button: fmt.Sprintf("Cancel job #%d", id), Back: "/best-effort", Keep: "Keep the job",
	}) {
		return
	}
	if _, err := s.svc.BestEffort.Cancel(c.Request.Context(), userOf(c), id); err != nil {
		if clearhouse.ErrorCode(err) == clearhouse.ECONFLICT {
			s.redirectWithFlash(c, "/best-effort", "error", clearhouse.ErrorMessage(err))
			return
		}
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/best-effort", "ok", fmt.Sprintf("Best-effort job #%d cancelled: its running tasks are stopped.", id))
}

func (s *Server) renderBestEffort(c *gin.Context, status int, f templates.BestEffortForm, quote []string) {
	ctx := c.Request.Context()
	u := userOf(c)
	jobs, err := s.svc.BestEffort.Jobs(ctx, besteffort.JobFilter{Team: u.TeamID, Limit: 200})
	if err != nil {
		s.fail(c, err)
		return
	}
	units, err := s.poolUnits(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	v := templates.BestEffortView{Team: u.TeamID, Form: f, Quote: quote}
	for _, j := range jobs {
		v.Jobs = append(v.Jobs, bestEffortRow(j, s.now(), units))
	}
	if v.Accounts, err = s.idleAccounts(ctx, u.TeamID); err != nil {
		s.fail(c, err)
		return
	}
	if v.Fits, err = s.fitRows(ctx, u.TeamID); err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, status, templates.BestEffortPage(s.page(c, "Best-effort jobs", "best-effort"), v))
}

func bestEffortRow(j besteffort.JobView, now time.Time, units map[string]string) templates.BestEffortRow {
	r := templates.BestEffortRow{ID: j.ID, Team: j.TeamID, Configuration: configText(j.Config(), j.Tasks, units), Status: string(j.Status),
		Queued: j.Queued, Running: j.Running, Done: j.Done, Failed: j.Failed, Preempted: j.Preempted,
		CanCancel: j.Status == besteffort.JobQueued || j.Status == besteffort.JobRunning, Workload: workloadLines(j.WorkloadSpec())}
	if j.MaxTaskDuration > 0 {
		r.Configuration += ", at most " + fmtDuration(time.Duration(j.MaxTaskDuration)*time.Second) + " a task"
	}
	r.Position, r.EstimatedStart, r.Waits = jobWait(j, now)
	if j.Budget > 0 {
		r.Budget, r.Charged = mon(j.Budget), mon(j.Captured)
		shares := j.SharesByPool()
		for _, p := range slices.Sorted(maps.Keys(shares)) {
			r.Shares = append(r.Shares, templates.PoolShare{Pool: p, Share: fmt.Sprintf("%.0f%%", 100*shares[p])})
		}
		from := map[string]string{"given": "yours", "equal": "no usable fit yet", "fitted": "learned"}[j.WeightsFrom]
		r.Weights = weightsText(j.WeightsByPool(), j.Config())
		if from != "" {
			r.Weights += " (" + from + ")"
		}
		if j.MinUtility != nil {
			r.SLO = fmt.Sprintf("minimum utility %.3g", *j.MinUtility)
			switch {
			case j.SLO == "met":
				r.SLO += ": met, charged"
			case j.SLO == "missed":
				r.SLO += ": not met, budget released"
			case j.Auctions > 0:
				r.SLO += fmt.Sprintf(": %.3g so far over %s", j.UtilityAt(j.MeanShares()), countOf(int64(j.Auctions), "auction"))
			}
		}
	}
	return r
}

// weightsText names the weights a job bids with over its pools ("weights
// us-east/cpu 1.8, us-east/ram 0.4"), 1 for each when there are none.
func weightsText(w map[string]float64, config map[string]int64) string {
	if len(w) == 0 {
		return "weights 1 each"
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(config)) {
		x, ok := w[p]
		if !ok {
			x = 1
		}
		parts = append(parts, fmt.Sprintf("%s %.3g", p, x))
	}
	return "weights " + strings.Join(parts, ", ")
}

// idleAccounts is a team's idle-capacity accounts per pool, for its pages.
func (s *Server) idleAccounts(ctx context.Context, team string) ([]templates.IdleAccountRow, error) {
	if s.svc.BestEffort == nil {
		return nil, nil
	}
	tps, err := s.svc.BestEffort.TeamPools(ctx, team)
	if err != nil {
		return nil, err
	}
	if len(tps) == 0 {
		return nil, nil
	}
	unit, err := s.poolUnits(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]templates.IdleAccountRow, len(tps))
	explained := map[string]bool{}
	for i, t := range tps {
		out[i] = idleAccountRow(t, unit[t.Pool])
		if explained[t.Policy] {
			out[i].PolicyWords = "" // said on the policy's first row
		}
		explained[t.Policy] = true
	}
	return out, nil
}

// idleHistoryWindow is how far back the team page's idle-capacity charts reach.
const idleHistoryWindow = 7 * 24 * time.Hour

// idleCharts draws a team's recorded idle-capacity history: per pool, its
// contribution and utility; then its priority in every pool.
func (s *Server) idleCharts(ctx context.Context, team string) ([]templates.LineChart, error) {
	if s.svc.BestEffort == nil {
		return nil, nil
	}
	now := s.now()
	hist, err := s.svc.BestEffort.TeamHistory(ctx, team, now.Add(-idleHistoryWindow))
	if err != nil || len(hist) == 0 {
		return nil, err
	}
	oldest := now
	for _, pts := range hist {
		oldest = minTime(oldest, pts[0].At)
	}
	unit, label, format := 1.0, "hours from now", func(x float64) string { return fmt.Sprintf("%gh", x) }
	if now.Sub(oldest) > 72*time.Hour {
		unit, label, format = 24, "days from now", func(x float64) string { return fmt.Sprintf("%gd", x) }
	}
	x := func(at time.Time) float64 { return at.Sub(now).Hours() / unit }
	poolUnit, err := s.poolUnits(ctx)
	if err != nil {
		return nil, err
	}
	var out []templates.LineChart
	prio := templates.LineChart{ID: "idle-priority", Title: "Priority per pool (higher runs first)", XLabel: label, FormatX: format,
		Height: 240, Legend: true}
	prioUnits := map[string]bool{}
	for _, pool := range slices.Sorted(maps.Keys(hist)) {
		if !slices.ContainsFunc(hist[pool], func(p besteffort.HistoryPoint) bool {
			return p.Contribution != 0 || p.Utility != 0 || p.Lent != 0 || p.Borrowed != 0
		}) {
			continue // the team never lent or borrowed there: nothing to draw
		}
		cu := []templates.Series{{Name: "contribution"}, {Name: "utility"}}
		lb := []templates.Series{{Name: "lent"}, {Name: "borrowed"}}
		p := templates.Series{Name: pool}
		for _, pt := range hist[pool] {
			cu[0].Points = append(cu[0].Points, templates.Point{X: x(pt.At), Y: pt.Contribution})
			cu[1].Points = append(cu[1].Points, templates.Point{X: x(pt.At), Y: pt.Utility})
			lb[0].Points = append(lb[0].Points, templates.Point{X: x(pt.At), Y: pt.Lent})
			lb[1].Points = append(lb[1].Points, templates.Point{X: x(pt.At), Y: pt.Borrowed})
			p.Points = append(p.Points, templates.Point{X: x(pt.At), Y: pt.Priority})
		}
		last := hist[pool][len(hist[pool])-1]
		amount, prioUnit := idleUnits(last.Policy)
		prioUnits[prioUnit] = true
		out = append(out, templates.LineChart{ID: "idle-history-" + pool, Title: pool + ": contribution and utility under " + last.Policy,
			XLabel: label, YLabel: amount, FormatX: format, Series: cu, YFromZero: true, Height: 240, Legend: true},
			templates.LineChart{ID: "idle-units-" + pool, Title: pool + ": units lent and borrowed",
				XLabel: label, YLabel: poolUnit[pool], FormatX: format, Series: lb, YFromZero: true, Height: 200, Legend: true})
		if i := slices.IndexFunc(prio.Series, func(q templates.Series) bool { return slices.Equal(q.Points, p.Points) }); i >= 0 {
			prio.Series[i].Name += ", " + pool // one policy over a cluster's pools gives them one priority: one line
			continue
		}
		prio.Series = append(prio.Series, p)
	}
	if len(out) == 0 {
		return nil, nil
	}
	if len(prioUnits) == 1 {
		for u := range prioUnits {
			prio.YLabel = u // one unit for every pool drawn (none for round robin and abacus)
		}
	}
	return append(out, prio), nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// fitStatus says in users' words what a fit's outcome means for the next jobs.
var fitStatus = map[string]string{
	"ok":              "used by budget-only jobs",
	"too-few-samples": "not yet: needs twice as many measured jobs as resources",
	"ill-conditioned": "not used: the jobs' shares do not tell the resources apart",
	"non-positive":    "not used: a weight came out zero or negative",
}

// fitRows is a team's learned utility weights, for its pages.
func (s *Server) fitRows(ctx context.Context, team string) ([]templates.FitRow, error) {
	if s.svc.BestEffort == nil {
		return nil, nil
	}
	fits, err := s.svc.BestEffort.Fits(ctx, team)
	if err != nil {
		return nil, err
	}
	out := make([]templates.FitRow, len(fits))
	for i, f := range fits {
		out[i] = templates.FitRow{Kind: strings.ReplaceAll(f.Kind, ",", ", "), Utility: f.Utility, Samples: f.Samples, Status: fitStatus[f.Outcome], Used: f.Outcome == "ok"}
		if w := f.WeightsByPool(); len(w) > 0 {
			var parts []string
			for _, p := range f.Pools() {
				parts = append(parts, fmt.Sprintf("%s %.3g", p, w[p]))
			}
			out[i].Weights = strings.Join(parts, ", ")
			if f.Outcome == "ok" {
				out[i].Status += fmt.Sprintf(" (typical error %.2g)", f.RMSE) // the root mean square error, in words
			}
		}
	}
	return out, nil
}

// workloadLines says what a job's tasks run, one line per kind of cluster.
func workloadLines(w *besteffort.Workload) []string {
	if w == nil {
		return nil
	}
	var out []string
	if k := w.Kubernetes; k != nil {
		line := "kubernetes: " + k.Image
		if words := append(slices.Clone(k.Command), k.Args...); len(words) > 0 {
			line += " " + strings.Join(quoteWords(words), " ")
		}
		if len(k.Env) > 0 {
			line += fmt.Sprintf(" (%d environment variables)", len(k.Env))
		}
		out = append(out, line)
	}
	if s := w.Slurm; s != nil {
		if s.Script != "" {
			out = append(out, fmt.Sprintf("slurm: script %q", firstLine(s.Script))+", "+countOf(int64(strings.Count(strings.TrimRight(s.Script, "\n"), "\n")+1), "line"))
		} else {
			out = append(out, "slurm: "+s.Command)
		}
	}
	return out
}

func quoteWords(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w
		if w == "" || strings.ContainsAny(w, " \t\n'\"") {
			out[i] = strconv.Quote(w)
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// jobWait says, in a job owner's words, where a job with waiting tasks stands: its
// place ("next", "240 tasks ahead"), when it should start (a UTC time and how far
// off it is, or why nobody can say), and why it waits. All empty when no task
// waits.
func jobWait(j besteffort.JobView, now time.Time) (position, start, why string) {
	if j.Position <= 0 {
		return "", "", ""
	}
	ahead := j.Position - 1
	if ahead == 0 {
		position = "next"
	} else {
		position = countOf(ahead, "task") + " ahead"
	}
	switch {
	case j.EstimatedStart == nil:
		start = "not known yet"
		why = fmt.Sprintf("%s of other jobs wait ahead of it in %s, and no best-effort task runs there now to go by: it starts once owners leave units idle and the tasks ahead have run.", countOf(ahead, "task"), j.ClusterID)
	case !j.EstimatedStart.After(now):
		start = "as soon as units free up"
		why = fmt.Sprintf("It is next in %s: its tasks start as soon as owners leave enough units idle.", j.ClusterID)
	default:
		start = fmtTime(*j.EstimatedStart) + " (in about " + roughDuration(j.EstimatedStart.Sub(now)) + ")"
		why = fmt.Sprintf("%s of other jobs wait ahead of it in %s; at the pace tasks finish there now, it starts in about %s.", countOf(ahead, "task"), j.ClusterID, roughDuration(j.EstimatedStart.Sub(now)))
	}
	return position, start, why
}

// roughDuration is how far off a time is, as people say it: "5 min", "2 h",
// "3 days".
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "1 min"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute).Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Round(time.Hour).Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Round(24*time.Hour).Hours()/24))
}
