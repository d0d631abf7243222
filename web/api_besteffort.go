package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// jobSpecOf is a best-effort job's body as the domain takes it; key is the request's
// Idempotency-Key.
func jobSpecOf(b apiv1.NewBestEffortJob, key string) (besteffort.JobSpec, error) {
	spec := besteffort.JobSpec{Team: b.Team, Configuration: b.Configuration, Tasks: b.Tasks, Utility: b.Utility, Weights: b.Weights, MinUtility: b.MinUtility, Key: key}
	w, err := besteffort.ParseWorkload(b.Workload)
	if err != nil {
		return spec, err
	}
	spec.Workload = w
	if b.MaxTaskDuration != "" {
		d, err := time.ParseDuration(b.MaxTaskDuration)
		if err != nil {
			return spec, clearhouse.Errorf(clearhouse.EINVALID, "max_task_duration: %q is not a duration such as \"30m\" or \"2h\"", b.MaxTaskDuration)
		}
		spec.MaxTaskDuration = d
	}
	if len(b.Budget) > 0 {
		raw := string(bytes.TrimSpace(b.Budget))
		var str string
		if json.Unmarshal(b.Budget, &str) == nil {
			raw = str
		}
		m, err := ledger.ParseMoney(raw) // its sign is the service's to judge (JobSpec.Validate)
		if err != nil {
			return spec, clearhouse.Errorf(clearhouse.EINVALID, "budget: must be an amount of dollars, e.g. \"12.50\"")
		}
		spec.Budget = m
	}
	return spec, nil
}

func toAPIJob(v besteffort.JobView) apiv1.BestEffortJob {
	a := apiv1.BestEffortJob{ID: v.ID, Team: v.TeamID, Cluster: v.ClusterID, Status: string(v.Status), Configuration: v.Config(), Tasks: v.Tasks,
		Queued: v.Queued, Running: v.Running, Done: v.Done, Failed: v.Failed, Cancelled: v.Cancelled, Preempted: v.Preempted,
		EstimatedStart: v.EstimatedStart, Policy: v.Policy, PoolPolicies: v.PoolPolicies, Utility: v.Utility, Weights: v.WeightsByPool(), Shares: v.SharesByPool(),
		MeanShares: v.MeanShares(), Auctions: v.Auctions, MinUtility: v.MinUtility, SLO: v.SLO, WeightsFrom: v.WeightsFrom,
		MeasuredUtility: v.MeasuredUtility, Workload: apiWorkload(v.WorkloadSpec()), Enqueued: v.EnqueuedAt, Ended: v.EndedAt}
	if v.Position > 0 {
		p := v.Position
		a.Position = &p
	}
	if v.MaxTaskDuration > 0 {
		a.MaxTaskDuration = (time.Duration(v.MaxTaskDuration) * time.Second).String()
	}
	if v.Budget > 0 {
		a.Budget, a.Charged, a.Released = v.Budget.String(), v.Captured.String(), v.Released.String()
	}
	return a
}

func (s *Server) apiSubmitBestEffort(c *gin.Context) {
	var body apiv1.NewBestEffortJob
	if err := decodeJSON(c, &body); err != nil {
		s.fail(c, err)
		return
	}
	spec, err := jobSpecOf(body, c.GetHeader("Idempotency-Key"))
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.svc.BestEffort.Submit(c.Request.Context(), userOf(c), spec)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, toAPIJob(v))
}

func (s *Server) apiBestEffortJobs(c *gin.Context) {
	team, err := visibleTeam(userOf(c), c.Query("team"))
	if err != nil {
		s.fail(c, err)
		return
	}
	pg, err := parsePage(c, 100, 1000)
	if err != nil {
		s.fail(c, err)
		return
	}
	f := besteffort.JobFilter{Team: team, Cluster: c.Query("cluster"), Limit: pg.Limit, Before: pg.Before}
	vs, err := s.svc.BestEffort.Jobs(c.Request.Context(), f)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]apiv1.BestEffortJob, len(vs))
	for i, v := range vs {
		out[i] = toAPIJob(v)
	}
	c.JSON(http.StatusOK, apiv1.BestEffortJobList{Jobs: out})
}

func jobID(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such best-effort job.")
	}
	return id, nil
}

func (s *Server) apiBestEffortJob(c *gin.Context) {
	id, err := jobID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.svc.BestEffort.Job(c.Request.Context(), id)
	if err == nil {
		if _, err = visibleTeam(userOf(c), v.TeamID); err != nil {
			err = clearhouse.Errorf(clearhouse.ENOTFOUND, "No such best-effort job.")
		}
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAPIJob(v))
}

func (s *Server) apiCancelBestEffort(c *gin.Context) {
	id, err := jobID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	v, err := s.svc.BestEffort.Cancel(c.Request.Context(), userOf(c), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAPIJob(v))
}

func toAPIBestEffortTasks(ts []besteffort.AgentTask) []apiv1.Task {
	out := make([]apiv1.Task, len(ts))
	for i, t := range ts {
		out[i] = apiv1.Task{ID: t.Task, Job: t.Job, Team: t.Team, Configuration: t.Configuration, Started: t.Started, Reason: t.Reason,
			JobWaiting: t.JobWaiting, Abacus: t.Abacus, Workload: apiWorkload(t.Workload)}
		if t.MaxTaskDuration > 0 {
			out[i].MaxTaskDuration = t.MaxTaskDuration.String()
		}
	}
	return out
}

// apiWorkload is a best-effort job's workload as the API shows it (nil: none).
func apiWorkload(w *besteffort.Workload) *apiv1.Workload {
	if w == nil {
		return nil
	}
	out := &apiv1.Workload{}
	if k := w.Kubernetes; k != nil {
		out.Kubernetes = &apiv1.KubernetesWorkload{Image: k.Image, Command: k.Command, Args: k.Args, Env: k.Env}
	}
	if s := w.Slurm; s != nil {
		out.Slurm = &apiv1.SlurmWorkload{Script: s.Script, Command: s.Command}
	}
	return out
}

// isAgent reports whether the request carries a cluster agent's token.
func isAgent(c *gin.Context) bool {
	v, ok := c.Get(ctxToken)
	if !ok {
		return false
	}
	t, _ := v.(identity.APIToken)
	return t.Scope == identity.ScopeAgent
}
