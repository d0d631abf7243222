package web

import (
	"net/http"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// maxChargeJobs is how many jobs the best-effort charges page lists.
const maxChargeJobs = 500

// financeBestEffortPage shows finance the abacus budgets charged, released and held,
// per team (with totals) and per job.
func (s *Server) financeBestEffortPage(c *gin.Context) {
	ctx := c.Request.Context()
	var ch besteffort.Charges
	if s.svc.BestEffort != nil {
		var err error
		if ch, err = s.svc.BestEffort.Charges(ctx, maxChargeJobs); err != nil {
			s.fail(c, err)
			return
		}
	}
	teams, err := s.svc.Market.Teams(ctx)
	if err != nil {
		s.fail(c, err)
		return
	}
	names := map[string]string{}
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	row := func(t besteffort.TeamCharges) templates.ChargeRow {
		return templates.ChargeRow{Team: t.Team, Name: teamName(names, t.Team), Jobs: t.Jobs, Budget: mon(t.Budget), Charged: mon(t.Charged),
			Released: mon(t.Released), Held: mon(t.Held)}
	}
	v := templates.BestEffortChargesView{Total: row(ch.Total), More: ch.More, CSV: "/finance/journal.csv"}
	for _, t := range ch.Teams {
		v.Teams = append(v.Teams, row(t))
	}
	for _, j := range ch.Jobs {
		r := templates.ChargeJobRow{ID: j.ID, Team: j.TeamID, Name: teamName(names, j.TeamID), Cluster: j.ClusterID, Status: string(j.Status),
			Budget: mon(j.Budget), Charged: mon(j.Captured), Released: mon(j.Released), Held: mon(j.Budget - j.Captured - j.Released)}
		if j.EndedAt != nil {
			r.Ended = fmtTime(*j.EndedAt)
		}
		v.Jobs = append(v.Jobs, r)
	}
	s.render(c, http.StatusOK, templates.BestEffortChargesPage(s.page(c, "Best-effort charges", "finance"), v))
}
