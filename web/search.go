package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// Congestion levels of a cluster for a bundle: the busiest of its pools decides.
const (
	congestedAbove = 0.85 // utilization, or price over reserve, above which a pool is "high"
	busyAbove      = 0.60
)

// searchPage answers where a requirement can be had now (Stokely et al., Fig. 3):
// per cluster, the covering bundle, its cost at current prices, whether unsold
// capacity covers it, and how congested the cluster's pools are.
func (s *Server) searchPage(c *gin.Context) {
	bc, err := s.loadBidContext(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	every := make([]string, len(bc.clusters))
	for i, cl := range bc.clusters {
		every[i] = cl.ID
	}
	f, _ := readBidForm(bc, c.Query, every)
	delete(f.Errors, "cluster")
	v := templates.SearchView{Form: f}
	need := requirement(bc, f)
	for key, vals := range c.Request.URL.Query() {
		if (key == "shape" || key == "count" || strings.HasPrefix(key, "q.")) && strings.Join(vals, "") != "" {
			v.Asked = true
		}
	}
	if !v.Asked {
		v.Form.Errors = templates.FieldErrors{}
	}
	if v.Asked && len(v.Form.Errors) == 0 {
		if err := s.searchResults(c, bc, need, &v); err != nil {
			s.fail(c, err)
			return
		}
	}
	s.render(c, http.StatusOK, templates.SearchPage(s.page(c, "Find resources", "search"), v))
}

// requirement is what the form asks for in total, per resource type.
func requirement(bc bidContext, f templates.BidForm) map[string]int64 {
	need := map[string]int64{}
	for _, sh := range bc.shapes {
		if sh.ID == f.Shape {
			var n int64
			if _, err := fmt.Sscan(f.Count, &n); err == nil && n > 0 {
				need = sh.Need(n)
			}
		}
	}
	for _, r := range f.Resources {
		var n int64
		if _, err := fmt.Sscan(r.Value, &n); err == nil && n > 0 {
			need[r.Name] += n
		}
	}
	return need
}

// searchResults fills v with the clusters that can supply need, cheapest first at
// current prices, then those lacking a pool; and, when some have enough and the
// user is on a team, the link that starts a bid there.
func (s *Server) searchResults(c *gin.Context, bc bidContext, need map[string]int64, v *templates.SearchView) error {
	m, err := s.marketNow(c.Request.Context())
	if err != nil {
		return err
	}
	prices, label := bc.current, "current prices of the open auction"
	if len(prices) == 0 {
		prices, label = bc.reserve, "reserve prices (no preliminary run yet)"
	}
	v.Prices = label
	resources := make([]string, 0, len(need))
	for r := range need {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	v.Need = needText(bc, need, resources)
	ask := searchAsk{need: need, resources: resources, prices: prices}
	if v.Form.ShapeSummary != "" {
		fmt.Sscan(v.Form.Count, &ask.count)
		ask.shape = shapeName(bc, v.Form.Shape)
	}
	type scored struct {
		r    templates.SearchResult
		cost float64
	}
	var found, missing []scored
	var enough []string
	for _, cl := range bc.clusters {
		res, cost, ok := clusterResult(bc, m, cl, ask)
		if !ok {
			missing = append(missing, scored{r: res})
			continue
		}
		if res.Enough {
			enough = append(enough, cl.ID)
		}
		found = append(found, scored{r: res, cost: cost})
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].cost < found[j].cost })
	for _, sc := range append(found, missing...) {
		v.Results = append(v.Results, sc.r)
	}
	if len(enough) > 0 && userOf(c).Role.OnTeam() {
		v.BidURL = bidURL(v.Form, enough)
	}
	return nil
}

// searchMarket is what the market holds now that a search weighs: units held per
// pool, and the open auction's interest and quota on offer per pool.
type searchMarket struct {
	held     map[string]int64
	capacity map[string]int64 // each pool's effective capacity
	interest map[string]exchange.Interest
	onOffer  map[string]exchange.OnOffer
}

func (s *Server) marketNow(ctx context.Context) (searchMarket, error) {
	m := searchMarket{held: map[string]int64{}, capacity: map[string]int64{}, interest: map[string]exchange.Interest{}, onOffer: map[string]exchange.OnOffer{}}
	caps, err := s.svc.Market.Capacities(ctx)
	if err != nil {
		return m, err
	}
	for _, pc := range caps {
		m.held[pc.Pool], m.capacity[pc.Pool] = pc.Held, pc.Effective
	}
	if a, ok, err := s.svc.Market.CurrentAuction(ctx); err != nil {
		return m, err
	} else if ok {
		if m.interest, err = s.svc.Market.OpenInterest(ctx, a.ID); err != nil {
			return m, err
		}
		if m.onOffer, err = s.svc.Market.OnOfferIn(ctx, a.ID); err != nil {
			return m, err
		}
	}
	return m, nil
}

// searchAsk is the requirement a search prices in each cluster.
type searchAsk struct {
	need      map[string]int64 // units per resource type
	resources []string         // need's resource types, sorted
	prices    map[string]float64
	count     int64  // units of the shape asked for; 0 when none was
	shape     string // the shape's name
}

// needText says the requirement in words: "400 cores of cpu, 1,600 GiB of ram".
func needText(bc bidContext, need map[string]int64, resources []string) string {
	units := map[string]string{}
	for _, r := range bc.resources {
		units[r.Name] = r.Unit
	}
	parts := make([]string, len(resources))
	for i, r := range resources {
		parts[i] = amountOf(need[r], units[r], r)
	}
	return strings.Join(parts, ", ")
}

// clusterResult prices the requirement in one cluster and says whether unsold
// capacity covers it and how congested its pools are; ok is false (and the result
// names what is missing) when the cluster lacks a pool of a resource asked for.
func clusterResult(bc bidContext, m searchMarket, cl exchange.Cluster, ask searchAsk) (res templates.SearchResult, cost float64, ok bool) {
	res = templates.SearchResult{Cluster: cl.ID, Name: cl.Name}
	var lack []string
	for _, r := range ask.resources {
		if _, ok := bc.pools[cl.ID+"/"+r]; !ok {
			lack = append(lack, r)
		}
	}
	if len(lack) > 0 {
		res.Missing = strings.Join(lack, ", ")
		return res, 0, false
	}
	b := exchange.Bundle{}
	fits := math.MaxFloat64 // how many times the requirement fits in unsold capacity
	var worstUse, worstPrice float64
	var bids, offers int
	var offered []string
	for _, r := range ask.resources {
		p := bc.pools[cl.ID+"/"+r]
		b[p.ID] = ask.need[r]
		cost += float64(ask.need[r]) * ask.prices[p.ID]
		// What the auction can sell: capacity no team holds, and quota teams offer.
		on := m.onOffer[p.ID]
		unsold := max(m.capacity[p.ID]-m.held[p.ID], 0) + on.Units
		fits = min(fits, float64(unsold)/float64(ask.need[r]))
		if on.Units > 0 {
			o := amountOf(on.Units, p.Unit, r)
			if on.HasAsk {
				o += " from " + moneyfmt.UnitPrice(on.LowestAsk, p.Unit)
			}
			offered = append(offered, o)
		}
		worstUse = max(worstUse, p.Utilization)
		if rp := bc.reserve[p.ID]; rp > 0 && bc.current[p.ID] > 0 {
			worstPrice = max(worstPrice, bc.current[p.ID]/rp-1)
		}
		bids += m.interest[p.ID].Bids
		offers += m.interest[p.ID].Offers
	}
	res.Items, res.Cost = bundleText(b, bc.units()), centsOf(cost)
	if len(offered) > 0 {
		res.OnOffer = "Including what teams offer now: " + strings.Join(offered, ", ") + "."
	}
	res.Enough = fits >= 1
	if ask.count > 0 {
		res.PerUnit = fmt.Sprintf("%s per %s", centsOf(cost/float64(ask.count)), ask.shape)
	}
	res.Available = coverText(fits, ask.count)
	res.Congestion, res.CongestionWhy = congestion(worstUse, worstPrice, bids, offers)
	return res, cost, true
}

// coverText says how far unsold capacity covers the requirement, which fits
// times in it: in units of the shape when count of them were asked for.
func coverText(fits float64, count int64) string {
	switch {
	case count > 0 && fits >= 1:
		return "enough for " + countOf(int64(fits*float64(count)), "unit")
	case count > 0:
		return fmt.Sprintf("only %s of %s", moneyfmt.Count(int64(fits*float64(count))), countOf(int64(count), "unit"))
	case fits >= 1:
		return fmt.Sprintf("enough, %.0f× over", fits)
	}
	return fmt.Sprintf("only %.0f%% of it", fits*100)
}

// congestion rates a cluster's pools for a bundle by the busiest of them (its
// utilization, or its price over reserve) and says why.
func congestion(worstUse, worstPrice float64, bids, offers int) (level, why string) {
	level = "low"
	if worstUse > busyAbove || worstPrice > 0.2 {
		level = "medium"
	}
	if worstUse > congestedAbove || worstPrice > 1 {
		level = "high"
	}
	reasons := []string{fmt.Sprintf("busiest pool %.0f%% used", worstUse*100)}
	if worstPrice > 0 {
		reasons = append(reasons, fmt.Sprintf("price %.0f%% over reserve", worstPrice*100))
	}
	reasons = append(reasons, fmt.Sprintf("%s and %s open in these pools", plural(bids, "bid"), plural(offers, "offer")))
	return level, strings.Join(reasons, "; ")
}

// bidURL starts a bid for the searched requirement in the clusters that have enough.
func bidURL(f templates.BidForm, clusters []string) string {
	q := url.Values{"step": {"2"}}
	if f.Shape != "" {
		q.Set("shape", f.Shape)
		q.Set("count", f.Count)
	}
	for _, r := range f.Resources {
		if r.Value != "" && r.Value != "0" {
			q.Set("q."+r.Name, r.Value)
		}
	}
	q["cluster"] = clusters
	return "/orders/new?" + q.Encode()
}

func shapeName(bc bidContext, id string) string {
	for _, sh := range bc.shapes {
		if sh.ID == id {
			return sh.Name
		}
	}
	return id
}

// helpPage explains the auction and how to bid, with worked examples.
func (s *Server) helpPage(c *gin.Context) {
	s.render(c, http.StatusOK, templates.HelpPage(s.page(c, "Help: how the market works", "help")))
}

// plural says "1 bid", "2 bids".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
