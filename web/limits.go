package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/templates"
)

// maxReclaimedShown is how many objects taken back a page lists (the newest).
const maxReclaimedShown = 20

// clusterLimits is every team's limit in cluster now by the one rule (fleet.Limits),
// from the plan's allocation and the best-effort tasks running now: what the agent's
// allocation sends, read without running the best-effort decision.
func (s *Server) clusterLimits(ctx context.Context, cluster string) ([]fleet.Limit, error) {
	a, err := s.svc.Reservations.Allocation(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var grants []fleet.Grant
	if s.svc.BestEffort != nil {
		be, err := s.svc.BestEffort.Allocation(ctx, cluster)
		if err != nil {
			return nil, err
		}
		grants = grantsOf(be.Run)
	}
	return a.Limits(grants), nil
}

// teamLimitRows is team's limit in each pool of every cluster, with its parts.
func (s *Server) teamLimitRows(ctx context.Context, team string, unit map[string]string) ([]templates.LimitRow, error) {
	clusters, err := s.svc.Market.Clusters(ctx)
	if err != nil {
		return nil, err
	}
	var rows []templates.LimitRow
	for _, cl := range clusters {
		ls, err := s.clusterLimits(ctx, cl.ID)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if l.Team == team {
				rows = append(rows, templates.LimitRow{Cluster: cl.ID, Pool: l.Pool, Unit: unit[l.Pool], Units: l.Units(), Held: l.Held,
					Offered: l.Offered, Reserved: l.Reserved, BestEffort: l.BestEffort})
			}
		}
	}
	return rows, nil
}

// overLimitFate says what the policy does to an excess, at now: the one wording of
// the team page and /operate.
func overLimitFate(p fleet.OverLimitPolicy, since, now time.Time) (string, bool) {
	at, ok := p.ActsAt(since)
	switch {
	case !ok:
		return "Reported only: the operators' policy stops nothing.", false
	case at.After(now):
		return fmt.Sprintf("The newest work above the limit will be stopped (pods evicted, jobs requeued) from %s unless usage is back under by then.", fmtTime(at)), false
	}
	return fmt.Sprintf("Being taken back since %s: the newest work above the limit is stopped (pods evicted, jobs requeued).", fmtTime(at)), true
}

// overLimitRows is what over the policy and the time make of teams above their limits.
func (s *Server) overLimitRows(ctx context.Context, team string, unit map[string]string) ([]templates.OverLimitRow, []templates.ReclaimedRow, error) {
	over, err := s.svc.Reservations.OverLimits(ctx, team)
	if err != nil {
		return nil, nil, err
	}
	policy, err := s.svc.Reservations.OverLimitPolicy(ctx)
	if err != nil {
		return nil, nil, err
	}
	now := s.now()
	rows := make([]templates.OverLimitRow, 0, len(over))
	for _, o := range over {
		fate, evicting := overLimitFate(policy, o.Since, now)
		rows = append(rows, templates.OverLimitRow{Cluster: o.Cluster, Team: o.Team, Pool: o.Pool, Unit: unit[o.Pool], Used: o.Used, Limit: o.Limit,
			Excess: o.Excess(), Since: fmtTime(o.Since), For: fmtDuration(now.Sub(o.Since)), Fate: fate, Evicting: evicting})
	}
	rec, err := s.svc.Reservations.RecentlyReclaimed(ctx, team, maxReclaimedShown)
	if err != nil {
		return nil, nil, err
	}
	var done []templates.ReclaimedRow
	for _, r := range rec {
		done = append(done, templates.ReclaimedRow{At: fmtTime(r.At), Cluster: r.Cluster, Team: r.Team, Pool: r.Pool, Object: r.Object, Unit: unit[r.Pool], Units: r.Units})
	}
	return rows, done, nil
}

// poolUnits is each pool's unit, by pool id.
func poolUnits(pools []exchange.Pool) map[string]string {
	unit := map[string]string{}
	for _, p := range pools {
		unit[p.ID] = p.Unit
	}
	return unit
}

// overLimitView is the operators' view of teams above their limits; form, when it
// comes back with errors, keeps what was typed.
func (s *Server) overLimitView(ctx context.Context, pools []exchange.Pool, form templates.OverLimitForm) (templates.OverLimitView, error) {
	v := templates.OverLimitView{Policy: form}
	var err error
	if v.Teams, v.Reclaimed, err = s.overLimitRows(ctx, "", poolUnits(pools)); err != nil {
		return v, err
	}
	if v.Policy.Errors == nil { // not a form sent back with what was typed
		p, err := s.svc.Reservations.OverLimitPolicy(ctx)
		if err != nil {
			return v, err
		}
		v.Policy.Action, v.Policy.Grace = p.Action, strconv.FormatInt(int64(p.Grace/time.Second), 10)
	}
	return v, nil
}

// overLimitWords is the over-limit form's wording of the domain's refusal of its action.
var overLimitWords = map[string]formWording{"action": {field: "action", text: "Choose report only or take back."}}

// saveOverLimitPolicy sets what happens to work beyond a team's limit. Bad input is
// shown on the form and changes nothing.
func (s *Server) saveOverLimitPolicy(c *gin.Context) {
	f := templates.OverLimitForm{Action: strings.TrimSpace(c.PostForm("action")), Grace: c.PostForm("grace"), Errors: templates.FieldErrors{}}
	grace, err := parseWhole(f.Grace, 0, int64(fleet.MaxOverLimitGrace/time.Second))
	if err != nil {
		f.Errors["grace"] = err.Error() + "."
	}
	p := fleet.OverLimitPolicy{Action: f.Action, Grace: time.Duration(grace) * time.Second}
	// The domain says which actions there are (fleet.OverLimitPolicy.Validate); the
	// form says it in its words, beside a grace it could not read.
	if err := p.Validate(); err != nil {
		for field, msg := range inFormWords(formErrors(err, "grace"), overLimitWords) {
			if f.Errors[field] == "" {
				f.Errors[field] = msg
			}
		}
	}
	if len(f.Errors) == 0 {
		err := s.svc.Reservations.SetOverLimitPolicy(c.Request.Context(), p)
		if err == nil {
			msg := "Work above a team's limit is reported only."
			if p.Action == fleet.OverLimitEvict {
				msg = fmt.Sprintf("Work above a team's limit is taken back after %s.", fmtDuration(p.Grace))
			}
			s.redirectWithFlash(c, "/operate", "ok", msg)
			return
		}
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			s.fail(c, err)
			return
		}
		f.Errors = inFormWords(formErrors(err, "grace"), overLimitWords)
	}
	s.renderOperate(c, http.StatusUnprocessableEntity, templates.OperateView{OverLimit: templates.OverLimitView{Policy: f}})
}
