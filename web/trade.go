package web

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// freeQuota is, per pool, the quota the team holds that it may still offer: its
// holdings less what open offers set aside and what accepted reservations need.
func (s *Server) freeQuota(c *gin.Context) (free, needed map[string]int64, err error) {
	u := userOf(c)
	ctx := c.Request.Context()
	hs, err := s.svc.Market.Holdings(ctx, u.TeamID)
	if err != nil {
		return nil, nil, err
	}
	offered, err := s.svc.Market.OfferedQuota(ctx, u.TeamID)
	if err != nil {
		return nil, nil, err
	}
	if needed, err = s.svc.Reservations.QuotaNeeded(ctx, u.TeamID); err != nil {
		return nil, nil, err
	}
	free = map[string]int64{}
	for _, h := range hs {
		free[h.PoolID] = max(h.Quantity-offered[h.PoolID]-needed[h.PoolID], 0)
	}
	return free, needed, nil
}

// offerChoices lists the pools the team holds quota in that it has not offered.
func (s *Server) offerChoices(c *gin.Context) ([]templates.PoolChoice, error) {
	free, needed, err := s.freeQuota(c)
	if err != nil {
		return nil, err
	}
	pools, err := s.svc.Market.Pools(c.Request.Context())
	if err != nil {
		return nil, err
	}
	var out []templates.PoolChoice
	for _, p := range pools {
		f, held := free[p.ID]
		if !held || (f == 0 && needed[p.ID] == 0) {
			continue
		}
		pc := templates.PoolChoice{ID: p.ID, Unit: p.Unit, Free: f, Label: p.Resource + " in " + p.ClusterID}
		if needed[p.ID] > 0 {
			pc.Label += fmt.Sprintf("; %d more are needed by your accepted reservations", needed[p.ID])
		}
		out = append(out, pc)
	}
	return out, nil
}

func (s *Server) offerPage(c *gin.Context) {
	pools, err := s.offerChoices(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	_, notice, err := s.biddingState(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	// A draft being edited fills in its units and minimum.
	for i, pc := range pools {
		pools[i].Quantity = c.Query("sell." + pc.ID)
	}
	draft, _ := strconv.ParseInt(c.Query("draft"), 10, 64)
	s.render(c, http.StatusOK, templates.OfferPage(s.page(c, "Offer quota", "orders"), templates.OfferForm{Pools: pools, Notice: notice, Minimum: c.Query("minimum"), DraftID: draft}))
}

// placeOffer offers the units typed for each pool as one order: one bundle that
// sells all of them, for at least the minimum in total. The older one-pool form
// (pool and quantity) is still understood.
func (s *Server) placeOffer(c *gin.Context) {
	u := userOf(c)
	pools, err := s.offerChoices(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f := templates.OfferForm{Pools: pools, Minimum: c.PostForm("minimum"), Errors: templates.FieldErrors{}, DraftID: draftOf(c)}
	if _, f.Notice, err = s.biddingState(c); err != nil {
		s.fail(c, err)
		return
	}
	typed := func(pool string) string { return strings.TrimSpace(c.PostForm("sell." + pool)) }
	if p := strings.TrimSpace(c.PostForm("pool")); p != "" {
		typed = func(pool string) string {
			if pool == p {
				return strings.TrimSpace(c.PostForm("quantity"))
			}
			return strings.TrimSpace(c.PostForm("sell." + pool))
		}
	}
	bundle := exchange.Bundle{}
	for i, pc := range f.Pools {
		raw := typed(pc.ID)
		f.Pools[i].Quantity = raw
		if raw == "" || raw == "0" {
			continue
		}
		q, err := parseWhole(raw, 0, exchange.MaxQuantity)
		switch {
		case err != nil:
			f.Errors["sell."+pc.ID] = "Units to sell in " + pc.ID + ": " + err.Error() + "."
		case q > pc.Free:
			f.Errors["sell."+pc.ID] = fmt.Sprintf("Your team has only %s free to offer in %s.", countOf(pc.Free, pc.Unit), pc.ID)
		case q > 0:
			bundle[pc.ID] = -q
		}
	}
	if len(bundle) == 0 && len(f.Errors) == 0 {
		f.Errors["pools"] = "Give the units to sell in at least one pool."
	}
	minimum := parseMoneyField(c, "minimum", f.Errors)
	if minimum < 0 {
		f.Errors["minimum"] = "The least you will accept cannot be negative."
	}
	if len(f.Errors) == 0 {
		limit := -minimum
		id, _, saved, err := s.saveOrPlace(c, exchange.OrderSpec{Team: u.TeamID, Limit: &limit, Bundles: []exchange.Bundle{bundle}})
		if err == nil {
			msg := fmt.Sprintf("Offer #%d placed: %s.", id, sellWords(bundle))
			if saved {
				msg = savedMessage(id)
			}
			s.redirectWithFlash(c, "/orders", "ok", msg)
			return
		}
		if code := clearhouse.ErrorCode(err); code == clearhouse.EINTERNAL || code == clearhouse.EFORBIDDEN {
			s.fail(c, err)
			return
		}
		f.Errors = formErrors(s.withAvailable(c.Request.Context(), userOf(c).TeamID, err), "pools")
		if m, ok := f.Errors["bundles"]; ok {
			delete(f.Errors, "bundles")
			f.Errors["pools"] = m
		}
	}
	s.render(c, http.StatusUnprocessableEntity, templates.OfferPage(s.page(c, "Offer quota", "orders"), f))
}

// sellWords says what a bundle sells: "40 of us-east/cpu and 100 of us-east/ram".
func sellWords(b exchange.Bundle) string {
	pools := make([]string, 0, len(b))
	for p := range b {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	parts := make([]string, len(pools))
	for i, p := range pools {
		parts[i] = fmt.Sprintf("%d of %s", -b[p], p)
	}
	return "sells " + strings.Join(parts, " and ")
}

// moveContext is what the move form needs: clusters, resource types, pools, the
// team's free quota and prices.
type moveContext struct {
	bidContext
	free map[string]int64
}

func (s *Server) loadMoveContext(c *gin.Context) (moveContext, error) {
	bc, err := s.loadBidContext(c)
	if err != nil {
		return moveContext{}, err
	}
	free, _, err := s.freeQuota(c)
	return moveContext{bidContext: bc, free: free}, err
}

// moveForm reads the move form from get (query or post values).
func (mc moveContext) moveForm(get func(string) string) (templates.MoveForm, exchange.Bundle) {
	f := templates.MoveForm{From: strings.TrimSpace(get("from")), To: strings.TrimSpace(get("to")), Net: get("net"),
		Amount: get("amount"), Errors: templates.FieldErrors{}}
	known := map[string]bool{}
	for _, cl := range mc.clusters {
		f.Clusters = append(f.Clusters, templates.ClusterOption{ID: cl.ID, Name: cl.Name})
		known[cl.ID] = true
	}
	switch {
	case f.From == "":
		f.Errors["from"] = "Choose the cluster to move out of."
	case !known[f.From]:
		f.Errors["from"] = fmt.Sprintf("There is no cluster %q.", f.From)
	}
	switch {
	case f.To == "":
		f.Errors["to"] = "Choose the cluster to move to."
	case !known[f.To]:
		f.Errors["to"] = fmt.Sprintf("There is no cluster %q.", f.To)
	case f.To == f.From:
		f.Errors["to"] = "Choose a cluster other than the one you move out of."
	}
	bundle := exchange.Bundle{}
	for _, r := range mc.resources {
		mr := templates.MoveResource{Name: r.Name, Unit: r.Unit, Quantity: strings.TrimSpace(get("q." + r.Name)), Buy: strings.TrimSpace(get("buy." + r.Name))}
		var held []string
		for _, cl := range mc.clusters {
			if n, ok := mc.free[cl.ID+"/"+r.Name]; ok {
				held = append(held, fmt.Sprintf("%s: %d free", cl.ID, n))
			}
		}
		if len(held) > 0 {
			mr.HeldFree = "You hold " + strings.Join(held, ", ") + "."
		} else {
			mr.HeldFree = "Your team holds none."
		}
		f.Resources = append(f.Resources, mr)
		sell, buy, ok := mc.moveQuantities(&f, r, mr)
		if !ok || f.Errors["from"] != "" || f.Errors["to"] != "" {
			continue
		}
		from, to := f.From+"/"+r.Name, f.To+"/"+r.Name
		switch {
		case sell > 0 && mc.pools[from].ID == "":
			f.Errors["q."+r.Name] = fmt.Sprintf("%s has no %s to sell.", f.From, r.Name)
		case buy > 0 && mc.pools[to].ID == "":
			f.Errors["buy."+r.Name] = fmt.Sprintf("%s has no %s to buy.", f.To, r.Name)
		case sell > mc.free[from]:
			f.Errors["q."+r.Name] = fmt.Sprintf("Your team has only %s of %s free to sell in %s.", countOf(mc.free[from], r.Unit), r.Name, f.From)
		default:
			if sell > 0 {
				bundle[from] = -sell
			}
			if buy > 0 {
				bundle[to] = buy
			}
		}
	}
	sells := false
	for _, q := range bundle {
		sells = sells || q < 0
	}
	switch {
	case len(bundle) == 0 && len(f.Errors) == 0:
		f.Errors["quantity"] = "Give how much of at least one resource to move."
	case !sells && len(f.Errors) == 0:
		f.Errors["quantity"] = "A move sells something in " + f.From + ": give how much of at least one resource to sell. To only buy, place a bid."
	}
	return f, bundle
}

// moveQuantities reads how much of resource r the move sells (q.r) and buys
// (buy.r, the same as sold when left empty), putting errors in f; ok is false when
// a quantity is not a whole number.
func (mc moveContext) moveQuantities(f *templates.MoveForm, r templates.ResourceInput, mr templates.MoveResource) (sell, buy int64, ok bool) {
	if mr.Quantity != "" {
		q, err := parseWhole(mr.Quantity, 0, exchange.MaxQuantity)
		if err != nil {
			f.Errors["q."+r.Name] = r.Name + ": " + err.Error() + "."
			return 0, 0, false
		}
		sell = q
	}
	buy = sell
	if mr.Buy != "" {
		q, err := parseWhole(mr.Buy, 0, exchange.MaxQuantity)
		if err != nil {
			f.Errors["buy."+r.Name] = r.Name + " to buy: " + err.Error() + "."
			return 0, 0, false
		}
		buy = q
	}
	return sell, buy, true
}

// estimate prices a move at the current prices, or at reserve prices before the
// first preliminary run.
func (mc moveContext) estimate(b exchange.Bundle) *templates.MoveEstimate {
	prices, label := mc.current, "current prices"
	if len(prices) == 0 {
		prices, label = mc.reserve, "reserve prices (no preliminary run yet)"
	}
	e := &templates.MoveEstimate{Prices: label}
	pools := make([]string, 0, len(b))
	for p := range b {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	var net float64
	for _, p := range pools {
		q, unit := b[p], mc.pools[p].Unit
		v := float64(q) * prices[p]
		net += v
		if q < 0 {
			e.Sell = append(e.Sell, fmt.Sprintf("%s: sell %s at %s, receive %s", p, countOf(-q, unit), moneyfmt.UnitPrice(prices[p], unit), exactOf(-v)))
		} else {
			e.Buy = append(e.Buy, fmt.Sprintf("%s: buy %s at %s, pay %s", p, countOf(q, unit), moneyfmt.UnitPrice(prices[p], unit), exactOf(v)))
		}
	}
	if net >= 0 {
		e.Net = "In all you would pay " + exactOf(net) + "."
	} else {
		e.Net = "In all you would receive " + exactOf(-net) + "."
	}
	return e
}

func (s *Server) movePage(c *gin.Context) {
	mc, err := s.loadMoveContext(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, _ := mc.moveForm(c.Query)
	f.Errors = templates.FieldErrors{} // a fresh form shows no errors
	f.DraftID, _ = strconv.ParseInt(c.Query("draft"), 10, 64)
	if _, f.Notice, err = s.biddingState(c); err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusOK, templates.MovePage(s.page(c, "Move quota between clusters", "orders"), f))
}

// placeMove places the trade, or prices it (action=price) without placing it, or
// shows the form again with its errors. Nothing is saved unless every field is
// good.
func (s *Server) placeMove(c *gin.Context) {
	u := userOf(c)
	mc, err := s.loadMoveContext(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, bundle := mc.moveForm(c.PostForm)
	f.DraftID = draftOf(c)
	if _, f.Notice, err = s.biddingState(c); err != nil {
		s.fail(c, err)
		return
	}
	if len(bundle) > 0 {
		f.Estimate = mc.estimate(bundle)
	}
	if c.PostForm("action") == "price" {
		status := http.StatusOK
		if len(f.Errors) > 0 {
			status = http.StatusUnprocessableEntity
		}
		s.render(c, status, templates.MovePage(s.page(c, "Move quota between clusters", "orders"), f))
		return
	}
	var limit ledger.Money
	if f.Net != "pay" && f.Net != "receive" {
		f.Errors["net"] = "Say whether you pay at most or must receive at least the amount."
	} else if limit = parseMoneyField(c, "amount", f.Errors); limit < 0 {
		f.Errors["amount"] = "Give the amount without a sign; choose above whether you pay or receive it."
	} else if f.Net == "receive" {
		limit = -limit
	}
	if len(f.Errors) == 0 {
		id, awaiting, saved, err := s.saveOrPlace(c, exchange.OrderSpec{Team: u.TeamID, Limit: &limit, Bundles: []exchange.Bundle{bundle}})
		if err == nil {
			msg := fmt.Sprintf("Trade #%d placed: moves quota from %s to %s.", id, f.From, f.To)
			switch {
			case saved:
				msg = savedMessage(id)
			case awaiting:
				msg = fmt.Sprintf("Trade #%d placed; it waits for a team owner's approval.", id)
			}
			s.redirectWithFlash(c, "/orders", "ok", msg)
			return
		}
		if code := clearhouse.ErrorCode(err); code == clearhouse.EINTERNAL || code == clearhouse.EFORBIDDEN {
			s.fail(c, err)
			return
		}
		f.Errors = formErrors(err, "quantity")
		if m, ok := f.Errors["bundles"]; ok {
			delete(f.Errors, "bundles")
			f.Errors["quantity"] = m
		}
		if m, ok := f.Errors["limit"]; ok {
			delete(f.Errors, "limit")
			f.Errors["amount"] = m
		}
	}
	s.render(c, http.StatusUnprocessableEntity, templates.MovePage(s.page(c, "Move quota between clusters", "orders"), f))
}

// centsOf formats float dollars (an estimate at auction prices) the way pages show
// money: "$1,234.57".
// exactOf is an amount of dollars (quantity x a price, and their sum) with every
// digit to the micro-dollar, so the lines of an estimate add up as shown.
func exactOf(f float64) string {
	m, ok := moneyfmt.FromDollars(f)
	if !ok {
		return "—"
	}
	return moneyfmt.Exact(m)
}

func centsOf(f float64) string {
	m, ok := moneyfmt.FromDollars(f)
	if !ok {
		return "—"
	}
	return moneyfmt.Cents(m)
}
