package web

import (
	"net/http"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/gin-gonic/gin"
)

// requireAgent lets through a cluster agent's token bound to the cluster in the
// path, and, when readers allow it, signed-in users with those roles. An agent
// token for another cluster is EFORBIDDEN.
func (s *Server) requireAgent(readers ...exchange.Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		if v, ok := c.Get(ctxToken); ok {
			if t, _ := v.(exchange.APIToken); t.Scope == exchange.ScopeAgent {
				if t.ClusterID == nil || *t.ClusterID != c.Param("cluster") {
					s.fail(c, clearhouse.Errorf(clearhouse.EFORBIDDEN, "This agent token is for another cluster."))
					return
				}
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
}

func toAPIAssignments(as []fleet.Assignment) []apiAssignment {
	out := []apiAssignment{}
	for _, a := range as {
		out = append(out, apiAssignment{Reservation: a.Reservation, Request: a.Request, Team: a.Team, Configuration: a.Configuration,
			Count: a.Count, Units: a.Units, Start: a.Start, End: a.End, Arrival: a.Arrival, Deadline: a.Deadline, MayStartNow: a.MayStartNow})
	}
	return out
}

func (s *Server) apiAllocation(c *gin.Context) {
	a, err := s.svc.Reservations.Allocation(c.Request.Context(), c.Param("cluster"))
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, APIAllocation{Cluster: a.Cluster, Now: a.Now, SlotEnds: a.SlotEnds,
		Running: toAPIAssignments(a.Running), Waiting: toAPIAssignments(a.Waiting)})
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
	res, err := s.svc.Reservations.Report(c.Request.Context(), c.Param("cluster"), rep)
	if err != nil {
		s.fail(c, err)
		return
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
		"started": jobs(res.Started), "refused_starts": jobs(res.Refused)})
}
