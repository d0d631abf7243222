package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
)

// requireAgent lets through a cluster agent's token bound to the cluster in the
// path, and, when readers allow it, signed-in users with those roles. An agent
// token for another cluster is EFORBIDDEN.
func (s *Server) requireAgent(readers ...identity.Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		if v, ok := c.Get(ctxToken); ok {
			if t, _ := v.(identity.APIToken); t.Scope == identity.ScopeAgent {
				if t.ClusterID == nil || *t.ClusterID != c.Param("cluster") {
					s.fail(c, clearhouse.Errorf(clearhouse.EFORBIDDEN, "This agent token is for another cluster."))
					return
				}
				c.Set(ctxAgentCluster, *t.ClusterID)
				c.Next()
				return
			}
		}
		if u, ok := userFrom(c); ok {
			for _, r := range readers {
				if u.Role == r {
					c.Next()
					return
				}
			}
			s.fail(c, clearhouse.Errorf(clearhouse.EFORBIDDEN, "This needs a cluster agent's token for %s.", c.Param("cluster")))
			return
		}
		s.fail(c, clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "Authenticate with a cluster agent's token (clearhouse agent token --cluster %s).", c.Param("cluster")))
	}
}

func toAPIAssignments(as []fleet.Assignment) []apiv1.Job {
	out := []apiv1.Job{}
	for _, a := range as {
		out = append(out, apiv1.Job{Reservation: a.Reservation, Request: a.Request, Team: a.Team, Configuration: a.Configuration,
			Count: a.Count, Units: a.Units, Start: a.Start, End: a.End, Arrival: a.Arrival, Deadline: a.Deadline, MayStartNow: a.MayStartNow})
	}
	return out
}

// apiAllocation answers the cluster's allocation. An agent's poll first runs the
// best-effort decision (what starts and stops now); an operator's read changes
// nothing.
func (s *Server) apiAllocation(c *gin.Context) {
	ctx, cluster := c.Request.Context(), c.Param("cluster")
	a, err := s.svc.Reservations.Allocation(ctx, cluster)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := apiv1.Allocation{Cluster: a.Cluster, Now: a.Now, SlotEnds: a.SlotEnds,
		Running: toAPIAssignments(a.Running), Waiting: toAPIAssignments(a.Waiting), BestEffort: []apiv1.Task{}, Preempt: []apiv1.Task{}, Quotas: []apiv1.Quota{}, Pools: []apiv1.PoolSharing{},
		Limits: []apiv1.Limit{}, Reclaim: []apiv1.Reclaim{}}
	var grants []fleet.Grant
	if len(a.Upcoming) > 0 {
		out.Upcoming = toAPIAssignments(a.Upcoming)
	}
	if s.svc.BestEffort != nil {
		if isAgent(c) {
			if _, err := s.svc.BestEffort.Step(ctx, cluster); err != nil {
				s.fail(c, err)
				return
			}
		}
		be, err := s.svc.BestEffort.Allocation(ctx, cluster)
		if err != nil {
			s.fail(c, err)
			return
		}
		out.BestEffort, out.Preempt = toAPIBestEffortTasks(be.Run), toAPIBestEffortTasks(be.Stop)
		grants = grantsOf(be.Run)
		for _, q := range be.Quotas {
			out.Quotas = append(out.Quotas, apiv1.Quota{Team: q.Team, Pool: q.Pool, Units: q.Units})
		}
		settings, err := s.svc.BestEffort.Settings(ctx)
		if err != nil {
			s.fail(c, err)
			return
		}
		for _, st := range settings {
			if strings.HasPrefix(st.Pool, cluster+"/") { // pool ids are cluster/resource
				out.Pools = append(out.Pools, apiv1.PoolSharing{Pool: st.Pool, Policy: st.Policy, Alpha: st.Alpha,
					MinRuntimeSeconds: int64(st.MinRuntime / time.Second), Exposure: st.Exposure})
			}
		}
	}
	for _, l := range a.Limits(grants) {
		out.Limits = append(out.Limits, apiv1.Limit{Team: l.Team, Pool: l.Pool, Units: l.Units(), Held: l.Held, Offered: l.Offered, Reserved: l.Reserved, BestEffort: l.BestEffort})
	}
	policy, reclaim, err := s.svc.Reservations.Reclaims(ctx, cluster)
	if err != nil {
		s.fail(c, err)
		return
	}
	out.OverLimit = apiv1.OverLimitPolicy{Action: policy.Action, GraceSeconds: int64(policy.Grace / time.Second)}
	for _, r := range reclaim {
		out.Reclaim = append(out.Reclaim, apiv1.Reclaim{Team: r.Team, Pool: r.Pool, Units: r.Excess(), Since: r.Since})
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) apiClusterUpdates(c *gin.Context) {
	var body apiv1.Updates
	if err := decodeJSON(c, &body); err != nil {
		s.fail(c, err)
		return
	}
	var rep fleet.AgentReport
	for _, x := range body.Capacity {
		rep.Capacity = append(rep.Capacity, fleet.CapacityReport{Pool: x.Pool, From: x.From, To: x.To, Units: x.Units})
	}
	for _, x := range body.Ends {
		rep.Ends = append(rep.Ends, fleet.EndReport{Reservation: x.Reservation, Request: x.Request, At: x.At, Failed: x.Failed})
	}
	for _, x := range body.Starts {
		rep.Starts = append(rep.Starts, fleet.StartReport{Reservation: x.Reservation, Request: x.Request, At: x.At})
	}
	for _, x := range body.Usage {
		rep.Usage = append(rep.Usage, fleet.UsageReport{Reservation: x.Reservation, Request: x.Request, Pool: x.Pool, Units: x.Units})
	}
	for _, x := range body.Waiting {
		rep.Waiting = append(rep.Waiting, fleet.WaitingReport{Reservation: x.Reservation, Request: x.Request, Tasks: x.Tasks})
	}
	for _, x := range body.Pools {
		rep.Pools = append(rep.Pools, fleet.PoolUsageReport{Pool: x.Pool, Used: x.Used, Capacity: x.Capacity})
	}
	for _, x := range body.Unplaceable {
		rep.Unplaceable = append(rep.Unplaceable, fleet.UnplaceableReport{Reservation: x.Reservation, Request: x.Request, Reason: x.Reason})
	}
	var be besteffort.Report
	for _, x := range body.BestEffort {
		be.Tasks = append(be.Tasks, besteffort.TaskEvent{Task: x.Task, Event: x.Event, At: x.At})
	}
	for _, x := range body.OwnerUsage {
		be.Usage = append(be.Usage, besteffort.OwnerUsage{Team: x.Team, Pool: x.Pool, Units: x.Units})
	}
	for i, x := range body.BestEffortJobs {
		if x.Utility == nil {
			s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "best_effort_jobs[%d]: utility: required", i))
			return
		}
		be.Measured = append(be.Measured, besteffort.JobMeasurement{Job: x.Job, Utility: *x.Utility, Shares: x.Shares})
	}
	var over []fleet.OverLimitUsage
	for _, x := range body.OverLimit {
		over = append(over, fleet.OverLimitUsage{Team: x.Team, Pool: x.Pool, Used: x.Used, Limit: x.Limit})
	}
	var reclaimed []fleet.ReclaimedReport
	for _, x := range body.Reclaimed {
		reclaimed = append(reclaimed, fleet.ReclaimedReport{Team: x.Team, Pool: x.Pool, Object: x.Object, Units: x.Units})
	}
	status, err := agentStatusOf(body.Agent)
	if err != nil { // refuse the whole report before any part applies
		s.fail(c, err)
		return
	}
	ctx, cluster := c.Request.Context(), c.Param("cluster")
	if err := s.svc.Reservations.ValidateOverLimit(ctx, cluster, over, reclaimed); err != nil {
		s.fail(c, err)
		return
	}
	if !be.Empty() {
		if s.svc.BestEffort == nil {
			s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "best_effort: this server runs no best-effort service"))
			return
		}
		if err := s.svc.BestEffort.ValidateReport(ctx, cluster, be); err != nil { // refuse the whole report before any part applies
			s.fail(c, err)
			return
		}
	}
	// One report, one transaction: its best-effort part applies inside the
	// reservations' transaction, so a part refused there (a measurement that
	// contradicts an earlier one) keeps nothing of the rest (capacity, ends, usage).
	// Work beyond limits is kept in the same transaction too.
	overStep := s.svc.Reservations.RecordOverLimitWithin(cluster, over, reclaimed)
	var res fleet.AgentResult
	if be.Empty() {
		res, err = s.svc.Reservations.ReportWith(ctx, cluster, rep, overStep)
	} else {
		res, err = s.svc.Reservations.ReportWith(ctx, cluster, rep, s.svc.BestEffort.ReportWithin(ctx, cluster, be), overStep)
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	// The report applied: an agent status that cannot be kept is logged, not answered
	// as a failure that would make the agent send the report again.
	if err := s.svc.Reservations.RecordAgentStatus(ctx, cluster, status); err != nil {
		s.log.ErrorContext(ctx, "agent status not kept", "cluster", cluster, "err", err)
	}
	nonNil := func(xs []int64) []int64 {
		if xs == nil {
			return []int64{}
		}
		return xs
	}
	jobs := func(xs []fleet.JobRef) []apiv1.JobKey {
		out := []apiv1.JobKey{}
		for _, x := range xs {
			out = append(out, apiv1.JobKey{Reservation: x.Reservation, Request: x.Request})
		}
		return out
	}
	c.JSON(http.StatusOK, apiv1.Answer{Moved: nonNil(res.Moved), AtRisk: nonNil(res.AtRisk), Ended: nonNil(res.Ended),
		Started: jobs(res.Started), RefusedStarts: jobs(res.Refused),
		AlreadyEnded: endNotes(res.AlreadyEnded), RefusedEnds: endNotes(res.RefusedEnds)})
}

func endNotes(xs []fleet.EndNote) []apiv1.EndNote {
	out := []apiv1.EndNote{}
	for _, x := range xs {
		out = append(out, apiv1.EndNote{Reservation: x.Reservation, Request: x.Request, At: x.At, Reason: x.Reason})
	}
	return out
}

// agentStatusOf is a report's agent status as the domain takes it, validated (nil
// when the agent sent none).
func agentStatusOf(a *apiv1.AgentStatus) (*fleet.AgentStatus, error) {
	if a == nil {
		return nil, nil
	}
	st := &fleet.AgentStatus{Backend: a.Backend, Version: a.Version, Errors: a.Errors}
	for _, x := range a.Corrections {
		st.Corrections = append(st.Corrections, fleet.Correction{Team: x.Team, Pool: x.Pool, Object: x.Object, Was: x.Was, Now: x.Now})
	}
	return st, st.Validate()
}

// grantsOf is the best-effort tasks running now as the limit rule takes them.
func grantsOf(run []besteffort.AgentTask) []fleet.Grant {
	out := make([]fleet.Grant, 0, len(run))
	for _, t := range run {
		out = append(out, fleet.Grant{Team: t.Team, Configuration: t.Configuration})
	}
	return out
}
