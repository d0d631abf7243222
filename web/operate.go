package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// operateView builds the operator's overview; forms carry what was typed.
func (s *Server) operateView(c *gin.Context, v templates.OperateView) (templates.OperateView, error) {
	ctx := c.Request.Context()
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		return v, err
	}
	hs, err := s.svc.Market.Holdings(ctx, "")
	if err != nil {
		return v, err
	}
	held := map[string]int64{}
	for _, h := range hs {
		held[h.PoolID] += h.Quantity
	}
	reserve, err := s.svc.Market.ReservePrices(ctx)
	if err != nil {
		return v, err
	}
	curves, err := s.svc.Market.Curves(ctx)
	if err != nil {
		return v, err
	}
	v.Curves = nil
	for _, cv := range curves {
		v.Curves = append(v.Curves, templates.CurveRow{ID: cv.ID, Name: cv.Name, Summary: curveSummary(cv)})
	}
	psi, source, err := s.psiOf(ctx, pools)
	if err != nil {
		return v, err
	}
	caps, err := s.svc.Market.Capacities(ctx)
	if err != nil {
		return v, err
	}
	v.Oversold = oversoldRows(caps)
	capacity := capacityByPool(caps)
	v.Pools = nil
	for _, p := range pools {
		row := templates.PoolAdminRow{ID: p.ID, Unit: p.Unit, Curve: p.CurveID, UnitCost: unitCost(p),
			Utilization: fmt.Sprintf("%.1f%%", psi[p.ID]*100), PsiSource: source[p.ID], Capacity: capacity[p.ID].Effective,
			CapacitySource: capacity[p.ID].Source, Held: held[p.ID]}
		if r, ok := reserve[p.ID]; ok {
			row.Reserve = &templates.Price{Dollars: r, Unit: p.Unit}
		}
		v.Pools = append(v.Pools, row)
	}
	clusters, err := s.svc.Market.Clusters(ctx)
	if err != nil {
		return v, err
	}
	if v.Agents, err = s.agentRows(ctx, clusters); err != nil {
		return v, err
	}
	if v.OverLimit, err = s.overLimitView(ctx, pools, v.OverLimit.Policy); err != nil {
		return v, err
	}
	v.NewPool.Clusters = nil
	for _, cl := range clusters {
		v.NewPool.Clusters = append(v.NewPool.Clusters, cl.ID)
	}
	v.NewPool.Curves = v.Curves
	if v.NewPool.Curve == "" {
		v.NewPool.Curve = defaultCurve(pools, curves)
	}
	as, err := s.svc.Market.Auctions(ctx, 30)
	if err != nil {
		return v, err
	}
	counts, err := s.svc.Market.OrderCounts(ctx)
	if err != nil {
		return v, err
	}
	v.Auctions = nil
	for _, a := range as {
		v.Auctions = append(v.Auctions, templates.AuctionAdminRow{ID: a.ID, Status: string(a.Status), Opens: fmtTime(a.OpensAt), Closes: closesText(a),
			Failure: a.Failure, Orders: counts[a.ID].TakingPart, Waiting: counts[a.ID].Waiting, Left: counts[a.ID].Left, CanPreview: a.Status == exchange.AuctionOpen, CanClose: a.Status == exchange.AuctionOpen || a.Status == exchange.AuctionClosing,
			CanCancel: a.Status == exchange.AuctionScheduled || a.Halted(), Halted: a.Halted()})
	}
	if v.Limits.OpenOrders == "" {
		l, err := s.svc.Market.Limits(ctx)
		if err != nil {
			return v, err
		}
		v.Limits.OpenOrders, v.Limits.Bundles, v.Limits.Pools = strconv.Itoa(l.OpenOrdersPerTeam), strconv.Itoa(l.BundlesPerOrder), strconv.Itoa(l.PoolsPerBundle)
	}
	if v.NewAuction.Opens == "" {
		next := s.now().Truncate(time.Hour).Add(time.Hour)
		v.NewAuction.Opens, v.NewAuction.Closes = next.Format(formTime), next.Add(time.Hour).Format(formTime)
		v.NewAuction.Final = strconv.FormatFloat(auction.DefaultFinalSeconds, 'g', -1, 64)
	}
	return v, nil
}

func (s *Server) renderOperate(c *gin.Context, status int, v templates.OperateView) {
	v, err := s.operateView(c, v)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, status, templates.OperatePage(s.page(c, "Operate", "operate"), v))
}

func (s *Server) operatePage(c *gin.Context) {
	s.renderOperate(c, http.StatusOK, templates.OperateView{})
}
