package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
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

type apiAssignment struct {
	Reservation   int64            `json:"reservation"`
	Request       int              `json:"request"`
	Team          string           `json:"team"`
	Configuration map[string]int64 `json:"configuration"`
	Count         int64            `json:"count"`
	Units         int64            `json:"units"`
	Start         time.Time        `json:"start"`
	End           time.Time        `json:"end"`
	Arrival       time.Time        `json:"arrival"`
	Deadline      time.Time        `json:"deadline"`
	MayStartNow   bool             `json:"may_start_now,omitempty"`
}

// APIAllocation is the body of GET /api/v1/clusters/{cluster}/allocation: the jobs
// that should run now with their units, and the jobs inside their window with none
// planned now (the cluster may start them early when it has room).
type APIAllocation struct {
	Cluster  string          `json:"cluster"`
	Now      time.Time       `json:"now"`
	SlotEnds time.Time       `json:"slot_ends"`
	Running  []apiAssignment `json:"running"`
	Waiting  []apiAssignment `json:"waiting"`
	// BestEffort lists the best-effort tasks to run now; Preempt those to stop now.
	BestEffort []apiBestEffortTask `json:"best_effort"`
	Preempt    []apiBestEffortTask `json:"preempt"`
	// Quotas is each team's quota of each pool: owner_usage reports against it.
	Quotas []apiQuota `json:"quotas"`
	// Pools is each pool of the cluster with its idle-sharing settings, for backends
	// that map them onto the cluster's own sharing (e.g. Kueue's lending limits).
	Pools []apiPoolSharing `json:"pools"`
	// Upcoming lists the booked jobs planned to start later, within the plan's
	// horizon (units 0), so that a cluster reserving ahead (Slurm) reserves at booking.
	Upcoming []apiAssignment `json:"upcoming,omitempty"`
	// Limits is each team's limit of each pool by the one rule (fleet.Limits): units
	// = held (what is on offer included, until a sale settles) + reserved (running
	// reservations beyond the team's own quota); best_effort, granted to the team's
	// best-effort tasks now, is enforced apart. Always sent (empty: no limits).
	Limits []apiLimit `json:"limits"`
	// OverLimit is the operators' policy for work beyond a team's limit.
	OverLimit apiOverLimitPolicy `json:"over_limit"`
	// Reclaim lists the excess to take back now: each team over its limit for longer
	// than the grace, when the policy evicts.
	Reclaim []apiReclaim `json:"reclaim"`
}

type apiLimit struct {
	Team       string `json:"team"`
	Pool       string `json:"pool"`
	Units      int64  `json:"units"`
	Held       int64  `json:"held"`
	Offered    int64  `json:"offered"`
	Reserved   int64  `json:"reserved"`
	BestEffort int64  `json:"best_effort"`
}

type apiOverLimitPolicy struct {
	Action       string `json:"action"`
	GraceSeconds int64  `json:"grace_seconds"`
}

type apiReclaim struct {
	Team  string    `json:"team"`
	Pool  string    `json:"pool"`
	Units int64     `json:"units"`
	Since time.Time `json:"since"`
}

type apiPoolSharing struct {
	Pool              string  `json:"pool"`
	Policy            string  `json:"policy"`
	Alpha             float64 `json:"alpha"`
	MinRuntimeSeconds int64   `json:"min_runtime_seconds"`
	Exposure          float64 `json:"exposure"`
}

type apiQuota struct {
	Team  string `json:"team"`
	Pool  string `json:"pool"`
	Units int64  `json:"units"`
}

func toAPIAssignments(as []fleet.Assignment) []apiAssignment {
	out := []apiAssignment{}
	for _, a := range as {
		out = append(out, apiAssignment{Reservation: a.Reservation, Request: a.Request, Team: a.Team, Configuration: a.Configuration,
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
	out := APIAllocation{Cluster: a.Cluster, Now: a.Now, SlotEnds: a.SlotEnds,
		Running: toAPIAssignments(a.Running), Waiting: toAPIAssignments(a.Waiting), BestEffort: []apiBestEffortTask{}, Preempt: []apiBestEffortTask{}, Quotas: []apiQuota{}, Pools: []apiPoolSharing{},
		Limits: []apiLimit{}, Reclaim: []apiReclaim{}}
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
			out.Quotas = append(out.Quotas, apiQuota{Team: q.Team, Pool: q.Pool, Units: q.Units})
		}
		settings, err := s.svc.BestEffort.Settings(ctx)
		if err != nil {
			s.fail(c, err)
			return
		}
		for _, st := range settings {
			if strings.HasPrefix(st.Pool, cluster+"/") { // pool ids are cluster/resource
				out.Pools = append(out.Pools, apiPoolSharing{Pool: st.Pool, Policy: st.Policy, Alpha: st.Alpha,
					MinRuntimeSeconds: int64(st.MinRuntime / time.Second), Exposure: st.Exposure})
			}
		}
	}
	for _, l := range a.Limits(grants) {
		out.Limits = append(out.Limits, apiLimit{Team: l.Team, Pool: l.Pool, Units: l.Units(), Held: l.Held, Offered: l.Offered, Reserved: l.Reserved, BestEffort: l.BestEffort})
	}
	policy, reclaim, err := s.svc.Reservations.Reclaims(ctx, cluster)
	if err != nil {
		s.fail(c, err)
		return
	}
	out.OverLimit = apiOverLimitPolicy{Action: policy.Action, GraceSeconds: int64(policy.Grace / time.Second)}
	for _, r := range reclaim {
		out.Reclaim = append(out.Reclaim, apiReclaim{Team: r.Team, Pool: r.Pool, Units: r.Excess(), Since: r.Since})
	}
	c.JSON(http.StatusOK, out)
}

// APIUpdates is the body of POST /api/v1/clusters/{cluster}/updates.
type APIUpdates struct {
	Capacity []struct {
		Pool  string    `json:"pool"`
		From  time.Time `json:"from"`
		To    time.Time `json:"to"`
		Units int64     `json:"units"`
	} `json:"capacity,omitempty"`
	Ends []struct {
		Reservation int64     `json:"reservation"`
		Request     int       `json:"request"`
		At          time.Time `json:"at"`
		Failed      bool      `json:"failed,omitempty"`
	} `json:"ends,omitempty"`
	Starts []struct {
		Reservation int64     `json:"reservation"`
		Request     int       `json:"request"`
		At          time.Time `json:"at"`
	} `json:"starts,omitempty"`
	Usage []struct {
		Reservation int64  `json:"reservation"`
		Request     int    `json:"request"`
		Pool        string `json:"pool"`
		Units       int64  `json:"units"`
	} `json:"usage,omitempty"`
	Waiting []struct {
		Reservation int64 `json:"reservation"`
		Request     int   `json:"request"`
		Tasks       int64 `json:"tasks"`
	} `json:"waiting,omitempty"`
	// Pools is what all the work in each pool uses now: the measured utilization.
	Pools []struct {
		Pool string `json:"pool"`
		Used int64  `json:"used"`
		// Capacity is the pool's capacity as the agent measured it (optional), at most
		// fleet.MaxCapacityFactor times the configured one; the latest becomes the
		// pool's effective capacity unless an operator overrides it. An absurd value
		// refuses the whole report.
		Capacity *int64 `json:"capacity,omitempty"`
	} `json:"pools,omitempty"`
	// BestEffort reports best-effort tasks: started, done, failed, or stopped.
	BestEffort []struct {
		Task  int64     `json:"task"`
		Event string    `json:"event"`
		At    time.Time `json:"at"`
	} `json:"best_effort,omitempty"`
	// OwnerUsage is what teams' own work uses of each pool now.
	OwnerUsage []struct {
		Team  string `json:"team"`
		Pool  string `json:"pool"`
		Units int64  `json:"units"`
	} `json:"owner_usage,omitempty"`
	// BestEffortJobs is what the agent measured of finished abacus jobs.
	BestEffortJobs []struct {
		Job     int64              `json:"job"`
		Utility *float64           `json:"utility"`
		Shares  map[string]float64 `json:"shares,omitempty"`
	} `json:"best_effort_jobs,omitempty"`
	// Unplaceable lists booked jobs the cluster refused to reserve: each one's
	// reservation ends, its team refunded and told.
	Unplaceable []struct {
		Reservation int64  `json:"reservation"`
		Request     int    `json:"request"`
		Reason      string `json:"reason"`
	} `json:"unplaceable,omitempty"`
	// OverLimit lists the teams whose own usage exceeds their limit now; a team and
	// pool of the cluster a report does not list is back under its limit.
	OverLimit []struct {
		Team  string `json:"team"`
		Pool  string `json:"pool"`
		Used  int64  `json:"used"`
		Limit int64  `json:"limit"`
	} `json:"over_limit,omitempty"`
	// Reclaimed lists what the backend stopped to take back excess.
	Reclaimed []struct {
		Team   string `json:"team"`
		Pool   string `json:"pool"`
		Object string `json:"object"`
		Units  int64  `json:"units"`
	} `json:"reclaimed,omitempty"`
	// Agent is the agent's status (optional): its backend and version, the drift it
	// corrected and the errors it met since its last report.
	Agent *APIAgentStatus `json:"agent,omitempty"`
}

// APIAgentStatus is what an agent says of itself in a report.
type APIAgentStatus struct {
	Backend     string `json:"backend"`
	Version     string `json:"version,omitempty"`
	Corrections []struct {
		Team   string `json:"team"`
		Pool   string `json:"pool"`
		Object string `json:"object"`
		Was    string `json:"was"`
		Now    string `json:"now"`
	} `json:"corrections,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

func (s *Server) apiClusterUpdates(c *gin.Context) {
	var body APIUpdates
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
	type job struct {
		Reservation int64 `json:"reservation"`
		Request     int   `json:"request"`
	}
	jobs := func(xs []fleet.JobRef) []job {
		out := []job{}
		for _, x := range xs {
			out = append(out, job{x.Reservation, x.Request})
		}
		return out
	}
	c.JSON(http.StatusOK, gin.H{"moved": nonNil(res.Moved), "at_risk": nonNil(res.AtRisk), "ended": nonNil(res.Ended),
		"started": jobs(res.Started), "refused_starts": jobs(res.Refused),
		"already_ended": endNotes(res.AlreadyEnded), "refused_ends": endNotes(res.RefusedEnds)})
}

// apiEndNote is the answer about one reported end the server did not apply.
type apiEndNote struct {
	Reservation int64     `json:"reservation"`
	Request     int       `json:"request"`
	At          time.Time `json:"at"`
	Reason      string    `json:"reason"`
}

func endNotes(xs []fleet.EndNote) []apiEndNote {
	out := []apiEndNote{}
	for _, x := range xs {
		out = append(out, apiEndNote{x.Reservation, x.Request, x.At, x.Reason})
	}
	return out
}

// agentStatusOf is a report's agent status as the domain takes it, validated (nil
// when the agent sent none).
func agentStatusOf(a *APIAgentStatus) (*fleet.AgentStatus, error) {
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
