package web

import (
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

func (s *Server) searchResults(c *gin.Context, bc bidContext, need map[string]int64, v *templates.SearchView) error {
	ctx := c.Request.Context()
	holdings, err := s.svc.Market.Holdings(ctx, "")
	if err != nil {
		return err
	}
	held := map[string]int64{}
	for _, h := range holdings {
		held[h.PoolID] += h.Quantity
	}
	interest := map[string]exchange.Interest{}
	onOffer := map[string]exchange.OnOffer{}
	if a, ok, err := s.svc.Market.CurrentAuction(ctx); err != nil {
		return err
	} else if ok {
		if interest, err = s.svc.Market.OpenInterest(ctx, a.ID); err != nil {
			return err
		}
		if onOffer, err = s.svc.Market.OnOfferIn(ctx, a.ID); err != nil {
			return err
		}
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
	units := map[string]string{}
	for _, r := range bc.resources {
		units[r.Name] = r.Unit
	}
	parts := make([]string, len(resources))
	for i, r := range resources {
		parts[i] = amountOf(need[r], units[r], r)
	}
	v.Need = strings.Join(parts, ", ")
	count := int64(0)
	if v.Form.ShapeSummary != "" {
		fmt.Sscan(v.Form.Count, &count)
	}
	type scored struct {
		r    templates.SearchResult
		cost float64
	}
	var found, missing []scored
	var enough []string
	for _, cl := range bc.clusters {
		res := templates.SearchResult{Cluster: cl.ID, Name: cl.Name}
		var lack []string
		for _, r := range resources {
			if _, ok := bc.pools[cl.ID+"/"+r]; !ok {
				lack = append(lack, r)
			}
		}
		if len(lack) > 0 {
			res.Missing = strings.Join(lack, ", ")
			missing = append(missing, scored{r: res})
			continue
		}
		b := exchange.Bundle{}
		var cost float64
		fits := math.MaxFloat64 // how many times the requirement fits in unsold capacity
		var worstUse, worstPrice float64
		var bids, offers int
		var offered []string
		for _, r := range resources {
			p := bc.pools[cl.ID+"/"+r]
			b[p.ID] = need[r]
			cost += float64(need[r]) * prices[p.ID]
			// What the auction can sell: capacity no team holds, and quota teams offer.
			on := onOffer[p.ID]
			unsold := max(p.Capacity-held[p.ID], 0) + on.Units
			fits = min(fits, float64(unsold)/float64(need[r]))
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
			bids += interest[p.ID].Bids
			offers += interest[p.ID].Offers
		}
		res.Items, res.Cost = bundleText(b, bc.units()), centsOf(cost)
		if len(offered) > 0 {
			res.OnOffer = "Including what teams offer now: " + strings.Join(offered, ", ") + "."
		}
		res.Enough = fits >= 1
		if count > 0 {
			res.PerUnit = fmt.Sprintf("%s per %s", centsOf(cost/float64(count)), shapeName(bc, v.Form.Shape))
			if res.Enough {
				res.Available = "enough for " + countOf(int64(fits*float64(count)), "unit")
			} else {
				res.Available = fmt.Sprintf("only %s of %s", moneyfmt.Count(int64(fits*float64(count))), countOf(int64(count), "unit"))
			}
		} else if res.Enough {
			res.Available = fmt.Sprintf("enough, %.0f× over", fits)
		} else {
			res.Available = fmt.Sprintf("only %.0f%% of it", fits*100)
		}
		res.Congestion = "low"
		if worstUse > busyAbove || worstPrice > 0.2 {
			res.Congestion = "medium"
		}
		if worstUse > congestedAbove || worstPrice > 1 {
			res.Congestion = "high"
		}
		why := []string{fmt.Sprintf("busiest pool %.0f%% used", worstUse*100)}
		if worstPrice > 0 {
			why = append(why, fmt.Sprintf("price %.0f%% over reserve", worstPrice*100))
		}
		why = append(why, fmt.Sprintf("%s and %s open in these pools", plural(bids, "bid"), plural(offers, "offer")))
		res.CongestionWhy = strings.Join(why, "; ")
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
		q := url.Values{"step": {"2"}}
		if v.Form.Shape != "" {
			q.Set("shape", v.Form.Shape)
			q.Set("count", v.Form.Count)
		}
		for _, r := range v.Form.Resources {
			if r.Value != "" && r.Value != "0" {
				q.Set("q."+r.Name, r.Value)
			}
		}
		q["cluster"] = enough
		v.BidURL = "/orders/new?" + q.Encode()
	}
	return nil
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
