package web

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/templates"
)

// agentLate is how long without a report makes an agent late on /operate: longer
// than an agent's longest backoff (5 minutes) after failed polls.
const agentLate = 5 * time.Minute

// agentRows is each cluster's agent as /operate shows it, one row per cluster (a
// cluster whose agent never reported says so).
func (s *Server) agentRows(ctx context.Context, clusters []exchange.Cluster) ([]templates.AgentRow, error) {
	views, err := s.svc.Reservations.AgentViews(ctx)
	if err != nil {
		return nil, err
	}
	byCluster := map[string]fleet.AgentView{}
	for _, v := range views {
		byCluster[v.Cluster] = v
	}
	now := s.now()
	rows := make([]templates.AgentRow, 0, len(clusters))
	for _, cl := range clusters {
		v, ok := byCluster[cl.ID]
		row := templates.AgentRow{Cluster: cl.ID, Reported: ok}
		if ok {
			row.Backend, row.Version, row.Reports, row.Corrections = v.Backend, v.Version, v.Reports, v.Corrections
			row.LastReport, row.Ago, row.Late = fmtTime(v.ReportedAt), fmtDuration(now.Sub(v.ReportedAt)), now.Sub(v.ReportedAt) > agentLate
			for _, c := range v.Recent {
				row.Latest = append(row.Latest, templates.AgentCorrectionRow{At: fmtTime(c.At), Team: c.Team, Pool: c.Pool, Object: c.Object, Was: c.Was, Now: c.Now})
			}
			row.Errors = v.Errors
			if v.ErrorsAt != nil {
				row.ErrorsAt = fmtTime(*v.ErrorsAt)
				// The server keeps the last errors through clean reports: a report
				// after them carried none, so the agent has recovered.
				row.Recovered = v.ReportedAt.After(*v.ErrorsAt)
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}
