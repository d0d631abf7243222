package besteffort

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/sharing"
	"gorm.io/gorm/clause"
)

// The fairness report (issue 13): for each pool with best-effort work over the last
// day or week, CloudShare's coalition game replayed on that work.
//
// Organizations are the teams holding quota in the pool (their quota is their
// processors), the operator (the capacity no team holds) and the teams that
// submitted jobs. Each job is its tasks times its units in the pool one-unit tasks,
// released when it was queued, each taking its job's mean measured run time (its
// maximum task duration, or an hour, when none ended). When a pool's work is more
// than maxFairnessTasks such tasks, each simulated task stands for Scale units and
// each organization has its units / Scale processors, rounded down, so the replay
// covers all of it; waits are scaled back to unit-hours.
//
// Each team's own demand of its quota over the span (ownerLoad: what its own work
// used, as the usage history recorded it, or what its reservations held, whichever
// was larger, never above its quota) runs as its background load
// (sharing.BackgroundJobs): on its own processors, before any best-effort task
// there, as the decisions lent only what owners left idle.
//
// sharing.Evaluate simulates every coalition under every policy (exactly up to 12
// organizations, sampled beyond) up to now, a task not started by then counting its
// wait so far, and gives each team's Shapley value of the wait. The report sets
// beside it the wait measured in the product (units times hours between a job's
// queueing and each task's start, or now for its tasks waiting now) and each
// policy's simulated wait, with their unfairness (distance to the Shapley values).
// A pool's replay knows only that pool: a job that needs several pools and waited
// for another one's units shows that wait as measured but not as simulated here.
// It is computed by the scheduled job and `clearhouse share fairness`, never in a
// request, and stored per cluster and span.

// FairnessReport is one cluster's report over one span.
type FairnessReport struct {
	Cluster    string
	Span       string // day or week
	From, To   time.Time
	ComputedAt time.Time
	Pools      []PoolFairness
}

// PoolFairness is the report of one pool.
type PoolFairness struct {
	Pool               string
	Exact              bool
	CoalitionValue     float64
	Teams              []TeamFairness
	Unfairness         map[string]float64 // policy -> distance of its simulated waits to the Shapley values
	MeasuredUnfairness float64
	Scale              int64   // units one simulated task stands for (1 unless the work exceeds maxFairnessTasks)
	OwnerLoad          float64 // unit-hours of owners' own demand the replay ran as background load
}

// TeamFairness is one organization's line: its Shapley value, its measured wait
// and its simulated wait under each policy, in unit-hours.
type TeamFairness struct {
	Team      string
	Shapley   float64
	Measured  float64
	Simulated map[string]float64
}

// Spans of the fairness report.
var fairnessSpans = map[string]time.Duration{"day": 24 * time.Hour, "week": 7 * 24 * time.Hour}

// maxFairnessTasks bounds the tasks one pool's replay simulates (see Scale).
const maxFairnessTasks = 20_000

// ComputeFairness computes and stores every cluster's fairness reports (day and
// week). It is the scheduled job's work; the command line runs it too.
func (s *Service) ComputeFairness(ctx context.Context) ([]FairnessReport, error) {
	db := s.db.Read.WithContext(ctx)
	var clusters []string
	if err := db.Model(&IdleCluster{}).Order("cluster_id").Pluck("cluster_id", &clusters).Error; err != nil {
		return nil, err
	}
	now := s.now()
	var out []FairnessReport
	for _, cluster := range clusters {
		for _, span := range []string{"day", "week"} {
			r, err := s.fairness(ctx, cluster, span, now)
			if err != nil {
				return out, fmt.Errorf("cluster %s, %s: %w", cluster, span, err)
			}
			b, _ := json.Marshal(r)
			row := IdleFairness{ClusterID: cluster, Span: span, ComputedAt: now, Report: string(b)}
			if err := s.db.Write.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// FairnessStale reports whether some cluster with best-effort state has no stored
// fairness report, or one computed more than maxAge ago: what a server that starts
// checks, so reports are not an hour or more out of date until the hourly job runs.
func (s *Service) FairnessStale(ctx context.Context, maxAge time.Duration) (bool, error) {
	db := s.db.Read.WithContext(ctx)
	var clusters, fresh int64
	if err := db.Model(&IdleCluster{}).Count(&clusters).Error; err != nil {
		return false, err
	}
	if err := db.Model(&IdleFairness{}).Where("computed_at >= ?", s.now().Add(-maxAge)).
		Distinct("cluster_id").Count(&fresh).Error; err != nil {
		return false, err
	}
	return fresh < clusters, nil
}

// FairnessReports returns the stored reports, by cluster then span.
func (s *Service) FairnessReports(ctx context.Context) ([]FairnessReport, error) {
	var rows []IdleFairness
	if err := s.db.Read.WithContext(ctx).Order("cluster_id, span").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]FairnessReport, 0, len(rows))
	for _, r := range rows {
		var f FairnessReport
		if err := json.Unmarshal([]byte(r.Report), &f); err == nil {
			out = append(out, f)
		}
	}
	return out, nil
}

func (s *Service) fairness(ctx context.Context, cluster, span string, now time.Time) (FairnessReport, error) {
	db := s.db.Read.WithContext(ctx)
	from := now.Add(-fairnessSpans[span])
	rep := FairnessReport{Cluster: cluster, Span: span, From: from, To: now, ComputedAt: now}
	var jobs []Job
	if err := db.Where("cluster_id = ? AND enqueued_at >= ? AND enqueued_at < ?", cluster, from, now).Order("id").Find(&jobs).Error; err != nil {
		return rep, err
	}
	if len(jobs) == 0 {
		return rep, nil
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	var runs []Task
	if err := db.Where("job_id IN ?", ids).Find(&runs).Error; err != nil {
		return rep, err
	}
	byJob := map[int64][]Task{}
	for _, t := range runs {
		byJob[t.JobID] = append(byJob[t.JobID], t)
	}
	var pools []exchange.Pool
	if err := db.Where("cluster_id = ?", cluster).Order("id").Find(&pools).Error; err != nil {
		return rep, err
	}
	qs, err := fleet.Quotas(db)
	if err != nil {
		return rep, err
	}
	settings, err := s.Settings(ctx)
	if err != nil {
		return rep, err
	}
	load, err := ownerLoad(db, cluster, from, now)
	if err != nil {
		return rep, err
	}
	for _, p := range pools {
		var st IdleSettings
		for _, x := range settings {
			if x.Pool == p.ID {
				st = x
			}
		}
		pf, ok, err := poolFairness(p, qs, jobs, byJob, load, st, from, now)
		if err != nil {
			return rep, err
		}
		if ok {
			rep.Pools = append(rep.Pools, pf)
		}
	}
	return rep, nil
}

// poolFairness replays one pool's best-effort work under every policy (see the
// fairness report above). It reports false, with no error, when no job used the
// pool.
func poolFairness(p exchange.Pool, qs []fleet.QuotaRow, jobs []Job, byJob map[int64][]Task, load map[[2]string][]loadStep, st IdleSettings, from, now time.Time) (PoolFairness, bool, error) {
	pf := PoolFairness{Pool: p.ID, Unfairness: map[string]float64{}}
	procs := quotaProcessors(p, qs)
	demand, rise := ownerDemand(p.ID, procs, load)
	scale := fairnessScale(p.ID, jobs, rise)
	pf.Scale = scale
	measured, simJobs := replayJobs(p.ID, jobs, byJob, procs, scale, from, now)
	if len(simJobs) == 0 {
		return pf, false, nil
	}
	background, ownerLoad := backgroundLoad(demand, procs, scale, from, now)
	simJobs = append(simJobs, background...)
	pf.OwnerLoad = ownerLoad
	names, orgs := fairnessOrgs(procs, scale)
	policies := fairnessPolicies()
	ev, err := sharing.Evaluate(sharing.Experiment{Orgs: orgs, Jobs: simJobs, Policies: policies, MinRuntime: st.MinRuntime.Hours(),
		Exposure: st.Exposure, Horizon: now.Sub(from).Hours(), Seed: 1, SharedValues: true})
	if err != nil {
		return pf, false, err
	}
	setFairnessResults(&pf, ev, names, policies, measured, scale)
	return pf, true, nil
}

// quotaProcessors returns each organization's processors in pool p: the quota each
// team holds there, and for the operator the capacity no team holds (never below
// zero).
func quotaProcessors(p exchange.Pool, qs []fleet.QuotaRow) map[string]int64 {
	procs := map[string]int64{}
	var held int64
	for _, q := range qs {
		if q.PoolID == p.ID && q.Quota > 0 {
			procs[q.TeamID] += q.Quota
			held += q.Quota
		}
	}
	procs[sharing.Operator] = max(p.Capacity-held, 0)
	return procs
}

// ownerDemand returns the quota-holding teams' demand of their quota in pool, and
// the unit tasks that demand takes (the sum of its rises).
func ownerDemand(pool string, procs map[string]int64, load map[[2]string][]loadStep) (map[string][]loadStep, float64) {
	// Owners' demand of their quota (never more than it), which the replay runs as
	// each team's background load.
	demand := map[string][]loadStep{}
	var rise float64 // unit tasks the background load takes
	for k, steps := range load {
		q, ok := procs[k[1]]
		if k[0] != pool || !ok || k[1] == sharing.Operator {
			continue
		}
		prev := 0.0
		for _, x := range steps {
			u := min(x.Units, float64(q))
			demand[k[1]] = append(demand[k[1]], loadStep{At: x.At, Units: u})
			rise += max(u-prev, 0)
			prev = u
		}
	}
	return demand, rise
}

// fairnessScale returns the units one simulated task stands for in pool: 1 unless
// the jobs' unit tasks there and the background load's rise exceed
// maxFairnessTasks.
func fairnessScale(pool string, jobs []Job, rise float64) int64 {
	// One simulated task stands for scale units (and each organization has its
	// units / scale processors), so a pool's replay never exceeds maxFairnessTasks.
	total := int64(math.Ceil(rise))
	for _, j := range jobs {
		total += int64(j.Tasks) * j.Config()[pool]
	}
	return max(1, (total+maxFairnessTasks-1)/maxFairnessTasks)
}

// replayJobs returns each team's wait measured in pool (unit-hours) and the
// simulated jobs of the jobs that used it, each task scale units taking its job's
// mean run time. A team that submitted there without quota joins procs with none.
func replayJobs(pool string, jobs []Job, byJob map[int64][]Task, procs map[string]int64, scale int64, from, now time.Time) (map[string]float64, []sharing.SimJob) {
	measured := map[string]float64{}
	var simJobs []sharing.SimJob
	for _, j := range jobs {
		units := j.Config()[pool]
		if units == 0 {
			continue
		}
		if _, ok := procs[j.TeamID]; !ok {
			procs[j.TeamID] = 0
		}
		if j.Status == JobQueued || j.Status == JobRunning { // tasks waiting now have waited so far
			measured[j.TeamID] += float64(units*j.Queued) * now.Sub(j.EnqueuedAt).Hours()
		}
		hours, n := 0.0, 0
		for _, t := range byJob[j.ID] {
			measured[j.TeamID] += float64(units) * t.StartedAt.Sub(j.EnqueuedAt).Hours()
			if t.Status == TaskDone && t.EndedAt != nil {
				hours += t.EndedAt.Sub(t.StartedAt).Hours()
				n++
			}
		}
		switch {
		case n > 0:
			hours /= float64(n)
		case j.MaxTaskDuration > 0:
			hours = float64(j.MaxTaskDuration) / 3600
		default:
			hours = 1
		}
		count := int((int64(j.Tasks)*units + scale - 1) / scale)
		simJobs = append(simJobs, sharing.SimJob{ID: fmt.Sprint(j.ID), Team: j.TeamID, Release: j.EnqueuedAt.Sub(from).Hours(), Tasks: count, TaskHours: max(hours, 1.0/60)})
	}
	return measured, simJobs
}

// backgroundLoad returns the owners' demand as simulated background jobs (in
// scaled units, never above a team's scaled processors), team by team in name
// order, and the unit-hours of that demand up to now.
func backgroundLoad(demand map[string][]loadStep, procs map[string]int64, scale int64, from, now time.Time) ([]sharing.SimJob, float64) {
	var simJobs []sharing.SimJob
	var ownerLoad float64
	span := now.Sub(from).Hours()
	for _, team := range sortedPools(demand) {
		steps := make([]sharing.LoadStep, len(demand[team]))
		for i, x := range demand[team] {
			steps[i] = sharing.LoadStep{At: x.At.Sub(from).Hours(), Units: min(int64(math.Round(x.Units/float64(scale))), procs[team]/scale)}
			next := now
			if i+1 < len(demand[team]) {
				next = demand[team][i+1].At
			}
			ownerLoad += x.Units * next.Sub(x.At).Hours()
		}
		simJobs = append(simJobs, sharing.BackgroundJobs(team, steps, span)...)
	}
	return simJobs, ownerLoad
}

// fairnessOrgs returns the organizations of the replay, by name (at most the first
// 64), each with its processors divided by scale, and their names in that order.
func fairnessOrgs(procs map[string]int64, scale int64) ([]string, []sharing.Org) {
	names := make([]string, 0, len(procs))
	for t := range procs {
		names = append(names, t)
	}
	slices.Sort(names)
	if len(names) > 64 {
		names = names[:64]
	}
	orgs := make([]sharing.Org, len(names))
	for i, t := range names {
		orgs[i] = sharing.Org{Name: t, Processors: procs[t] / scale}
	}
	return names, orgs
}

// fairnessPolicies returns every sharing policy, in sharing.Names order.
func fairnessPolicies() []sharing.Policy {
	var policies []sharing.Policy
	for _, name := range sharing.Names() {
		pol, _ := sharing.ByName(name)
		policies = append(policies, pol)
	}
	return policies
}

// setFairnessResults fills pf from the evaluation ev: the coalition value, each
// team's Shapley value, measured and simulated waits, and each policy's and the
// measured unfairness, all scaled back to unit-hours.
func setFairnessResults(pf *PoolFairness, ev sharing.Evaluation, names []string, policies []sharing.Policy, measured map[string]float64, scale int64) {
	f := float64(scale) // simulated task-hours to unit-hours
	pf.Exact, pf.CoalitionValue = ev.Exact, f*ev.CoalitionValue
	meas, shapley := make([]float64, len(names)), make([]float64, len(names))
	for i, t := range names {
		shapley[i] = f * ev.Shapley[i]
		tf := TeamFairness{Team: t, Shapley: shapley[i], Measured: measured[t], Simulated: map[string]float64{}}
		for k, pol := range policies {
			tf.Simulated[pol.Name()] = f * ev.Wait[k][i]
		}
		meas[i] = measured[t]
		pf.Teams = append(pf.Teams, tf)
	}
	for k, pol := range policies {
		pf.Unfairness[pol.Name()] = f * ev.Unfairness[k]
	}
	pf.MeasuredUnfairness = sharing.Unfairness(meas, shapley)
}
