package web

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
)

// bidContext is what the bid form needs: resource types, clusters and prices.
type bidContext struct {
	resources []templates.ResourceInput
	clusters  []exchange.Cluster
	pools     map[string]exchange.Pool
	reserve   map[string]float64
	current   map[string]float64
	shapes    []exchange.Shape
	free      map[string]int64 // units of each pool's effective capacity no team holds
	capacity  map[string]int64 // each pool's effective capacity
	supply    map[string]int64 // units the operator offers in the open auction, by pool; nil when none is open
}

// units maps each pool to its unit ("core").
func (bc bidContext) units() map[string]string {
	out := make(map[string]string, len(bc.pools))
	for id, p := range bc.pools {
		out[id] = p.Unit
	}
	return out
}

func (s *Server) loadBidContext(c *gin.Context) (bidContext, error) {
	ctx := c.Request.Context()
	bc := bidContext{pools: map[string]exchange.Pool{}, current: map[string]float64{}}
	var err error
	if bc.clusters, err = s.svc.Market.Clusters(ctx); err != nil {
		return bc, err
	}
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		return bc, err
	}
	units := map[string]string{}
	for _, p := range pools {
		bc.pools[p.ID] = p
		if _, ok := units[p.Resource]; !ok {
			units[p.Resource] = p.Unit
		}
	}
	names := make([]string, 0, len(units))
	for r := range units {
		names = append(names, r)
	}
	sort.Strings(names)
	for _, r := range names {
		bc.resources = append(bc.resources, templates.ResourceInput{Name: r, Unit: units[r]})
	}
	if bc.reserve, err = s.svc.Market.ReservePrices(ctx); err != nil {
		return bc, err
	}
	caps, err := s.svc.Market.Capacities(ctx)
	if err != nil {
		return bc, err
	}
	bc.free, bc.capacity = map[string]int64{}, map[string]int64{}
	for _, pc := range caps {
		bc.free[pc.Pool], bc.capacity[pc.Pool] = pc.Effective-pc.Held, pc.Effective
	}
	if bc.shapes, err = s.svc.Market.Shapes(ctx); err != nil {
		return bc, err
	}
	if a, ok, err := s.svc.Market.CurrentAuction(ctx); err != nil {
		return bc, err
	} else if ok {
		if _, prices, ok, err := s.svc.Market.LatestRun(ctx, a.ID); err != nil {
			return bc, err
		} else if ok {
			for _, p := range prices {
				bc.current[p.PoolID] = p.Price
			}
		}
		if aps, err := s.svc.Market.AuctionPools(ctx, a.ID); err == nil {
			bc.supply = map[string]int64{}
			for _, ap := range aps {
				bc.reserve[ap.PoolID] = ap.ReservePrice
				bc.supply[ap.PoolID] = min(ap.Supply, max(bc.free[ap.PoolID], 0)) // as the next run will sell it
			}
		}
	}
	return bc, nil
}

// readBidForm reads the requirement and clusters from query or form values and
// builds the covering bundle per chosen cluster.
func readBidForm(bc bidContext, get func(string) string, clusters []string) (templates.BidForm, map[string]exchange.Bundle) {
	f := templates.BidForm{Errors: templates.FieldErrors{}, LimitMode: "one"}
	need := readShapeNeed(bc, get, &f)
	for _, r := range bc.resources {
		r.Value = strings.TrimSpace(get("q." + r.Name))
		if r.Value != "" && r.Value != "0" {
			n, err := parseWhole(r.Value, 0, exchange.MaxQuantity)
			if err != nil {
				f.Errors["q."+r.Name] = r.Name + ": " + err.Error()
			} else if n > 0 {
				need[r.Name] += n
			}
		}
		f.Resources = append(f.Resources, r)
	}
	chosen := map[string]bool{}
	for _, c := range clusters {
		chosen[c] = true
	}
	bundles := map[string]exchange.Bundle{}
	for _, cl := range bc.clusters {
		choice := templates.ClusterChoice{ID: cl.ID, Name: cl.Name, Checked: chosen[cl.ID]}
		var missing []string
		for r := range need {
			if _, ok := bc.pools[cl.ID+"/"+r]; !ok {
				missing = append(missing, r)
			}
		}
		sort.Strings(missing)
		choice.Missing = strings.Join(missing, ", ")
		if choice.Missing != "" {
			choice.Checked = false
		}
		if choice.Checked && len(need) > 0 {
			b := exchange.Bundle{}
			for r, q := range need {
				b[cl.ID+"/"+r] = q
			}
			bundles[cl.ID] = b
		}
		f.Clusters = append(f.Clusters, choice)
	}
	if len(need) == 0 && len(f.Errors) == 0 {
		f.Errors["q."+firstResource(bc)] = "Give the quantity of at least one resource, or a number of service units."
	}
	if len(bundles) == 0 && len(need) > 0 {
		f.Errors["cluster"] = "Choose at least one cluster that has every resource you need."
	}
	checkSupply(bc, need, bundles, f.Errors)
	return f, bundles
}

// checkSupply refuses a quantity no chosen cluster's pool could ever supply: more
// than the pool's whole capacity.
func checkSupply(bc bidContext, need map[string]int64, bundles map[string]exchange.Bundle, errs templates.FieldErrors) {
	for r, q := range need {
		var most int64
		unit := ""
		for cl := range bundles {
			if p, ok := bc.pools[cl+"/"+r]; ok && p.Capacity > most {
				most, unit = p.Capacity, p.Unit
			}
		}
		if len(bundles) > 0 && q > most {
			field := "q." + r
			if _, typed := errs[field]; !typed {
				errs[field] = fmt.Sprintf("%s: %s is more than any cluster you chose could ever supply (the largest has %s in all).", r, countOf(q, unit), countOf(most, unit))
			}
		}
	}
}

func firstResource(bc bidContext) string {
	if len(bc.resources) == 0 {
		return "resource"
	}
	return bc.resources[0].Name
}

// availability says, for each pool a bundle buys from, how many units the auction
// offers and how many no team holds ("us-east/cpu: 40 core offered, 40 of 100
// free"); short is true when some pool offers fewer units than the bundle needs,
// so the bundle can win only if other teams sell.
func availability(bc bidContext, b exchange.Bundle) (text string, short bool) {
	var parts []string
	for _, pool := range slices.Sorted(maps.Keys(b)) {
		q := b[pool]
		if q <= 0 {
			continue
		}
		p := bc.pools[pool]
		part := fmt.Sprintf("%s: %s of %s free", pool, groupDigits(max(bc.free[pool], 0)), countOf(bc.capacity[pool], p.Unit))
		if bc.supply != nil {
			offered := bc.supply[pool]
			part = fmt.Sprintf("%s: %s offered, %s of %s free", pool, countOf(offered, p.Unit), groupDigits(max(bc.free[pool], 0)), groupDigits(bc.capacity[pool]))
			if offered < q {
				short = true
			}
		} else if bc.free[pool] < q {
			short = true
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; "), short
}

// bundleChoices prices the covering bundles for step 2.
func bundleChoices(bc bidContext, f *templates.BidForm, bundles map[string]exchange.Bundle, limits map[string]string) {
	for _, cl := range bc.clusters {
		b, ok := bundles[cl.ID]
		if !ok {
			continue
		}
		var atReserve, atCurrent float64
		current := len(bc.current) > 0
		for pool, q := range b {
			atReserve += float64(q) * bc.reserve[pool]
			atCurrent += float64(q) * bc.current[pool]
		}
		bcho := templates.BundleChoice{Cluster: cl.ID, Items: bundleText(b, bc.units()), AtReserve: monOf(atReserve), Limit: limits[cl.ID]}
		bcho.Availability, bcho.Short = availability(bc, b)
		if current {
			m := monOf(atCurrent)
			bcho.AtCurrent = &m
		}
		f.Bundles = append(f.Bundles, bcho)
	}
}

// newBidPage is the two-step bid entry (GET: no state changes).
func (s *Server) newBidPage(c *gin.Context) {
	bc, err := s.loadBidContext(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, bundles := readBidForm(bc, c.Query, c.QueryArray("cluster"))
	f.Step = 1
	if open, notice, err := s.biddingState(c); err != nil {
		s.fail(c, err)
		return
	} else if !open {
		f.Notice = notice
	}
	if c.Query("step") == "2" && len(f.Errors) == 0 {
		f.Step = 2
		if c.Query("limit_mode") == "each" {
			f.LimitMode = "each"
		}
		// A draft being edited fills in its limits.
		f.Limit = c.Query("limit")
		typed := map[string]string{}
		for _, cl := range bc.clusters {
			typed[cl.ID] = c.Query("limit." + cl.ID)
		}
		f.DraftID, _ = strconv.ParseInt(c.Query("draft"), 10, 64)
		bundleChoices(bc, &f, bundles, typed)
		f.Note = s.approvalNote(c)
	} else if c.Query("step") != "2" {
		f.Errors = templates.FieldErrors{} // a fresh form shows no errors
	}
	s.render(c, http.StatusOK, templates.BidPage(s.page(c, "New bid", "orders"), f))
}

func (s *Server) approvalNote(c *gin.Context) string {
	t, err := s.svc.Market.Team(c.Request.Context(), userOf(c).TeamID)
	if err != nil || t.ApprovalThreshold == 0 || userOf(c).Role == identity.RoleOwner {
		return ""
	}
	return "A bid that could pay more than " + moneyfmt.Cents(t.ApprovalThreshold) + " waits for a team owner's approval."
}

// bidWords are the bid form's words for the domain's refusals (exchange.OrderSpec),
// by the field it names: one limit, or a limit per bundle ("limits[1]").
var bidWords = map[string]formWording{
	"limit":  {field: "limit", text: "A bid's limit is the most you will pay: it must be more than zero."},
	"limits": {field: "limit", text: "A bid's limit is the most you will pay: it must be more than zero."},
}

// placeBid places the bid from step 2, or shows the form again with its errors.
func (s *Server) placeBid(c *gin.Context) {
	u := userOf(c)
	bc, err := s.loadBidContext(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	f, bundles := readBidForm(bc, c.PostForm, c.PostFormArray("cluster"))
	f.Step = 2
	f.LimitMode = "one"
	if c.PostForm("limit_mode") == "each" {
		f.LimitMode = "each"
	}
	spec := exchange.OrderSpec{Team: u.TeamID}
	typed := map[string]string{}
	var limitFields []string // in "each" mode, the input of each bundle's limit
	for _, cl := range bc.clusters {
		b, ok := bundles[cl.ID]
		if !ok {
			continue
		}
		spec.Bundles = append(spec.Bundles, b)
		if f.LimitMode == "each" {
			name := "limit." + cl.ID
			limitFields = append(limitFields, name)
			typed[cl.ID] = c.PostForm(name)
			spec.Limits = append(spec.Limits, parseMoneyField(c, name, f.Errors))
		}
	}
	if f.LimitMode == "one" {
		f.Limit = c.PostForm("limit")
		l := parseMoneyField(c, "limit", f.Errors)
		spec.Limit = &l
	}
	if len(f.Errors) == 0 {
		// The domain checks the bid (its limits must be positive) before the warnings
		// below are worked out; its error is shown beside the limit, in the form's words.
		if err := spec.Validate(); err != nil {
			f.Errors = inFormWords(formErrors(err, "limit"), bidWords)
			if msg, ok := f.Errors["limit"]; ok && len(limitFields) > 0 {
				// Each cluster's limit has its own input; the domain names it by its
				// bundle's index ("limits[1]"), the order the loop above added them in.
				delete(f.Errors, "limit")
				field, _ := fieldOf(err)
				k := 0
				if _, err := fmt.Sscanf(field, "limits[%d]", &k); err != nil || k < 0 || k >= len(limitFields) {
					k = 0
				}
				f.Errors[limitFields[k]] = msg
			}
		}
	}
	if len(f.Errors) == 0 {
		f.Warnings = limitBelowReserve(bc, spec)
		f.ConfirmBelowReserve = c.PostForm("below_reserve") == "accept"
	}
	f.DraftID = draftOf(c)
	if len(f.Errors) == 0 && (c.PostForm("action") == "draft" || len(f.Warnings) == 0 || f.ConfirmBelowReserve) {
		id, awaiting, saved, err := s.saveOrPlace(c, spec)
		if err == nil {
			msg := fmt.Sprintf("Bid #%d placed.", id)
			switch {
			case saved:
				msg = savedMessage(id)
			case awaiting:
				msg = fmt.Sprintf("Bid #%d placed; it waits for a team owner's approval.", id)
			}
			s.redirectWithFlash(c, "/orders", "ok", msg)
			return
		}
		if code := clearhouse.ErrorCode(err); code == clearhouse.EINTERNAL || code == clearhouse.EFORBIDDEN {
			s.fail(c, err)
			return
		}
		f.Errors = formErrors(s.withAvailable(c.Request.Context(), u.TeamID, err), "limit")
		if _, ok := f.Errors["bundles"]; ok {
			f.Errors["limit"] = f.Errors["bundles"]
		}
	}
	bundleChoices(bc, &f, bundles, typed)
	f.Note = s.approvalNote(c)
	s.render(c, http.StatusUnprocessableEntity, templates.BidPage(s.page(c, "New bid", "orders"), f))
}

// limitBelowReserve warns of each limit below what its bundle (or, for one
// limit, the cheapest bundle) costs at reserve prices: auction prices only rise
// from reserve, so such a bid cannot win in this auction. The member may place it
// anyway; nothing refuses it.
func limitBelowReserve(bc bidContext, spec exchange.OrderSpec) []string {
	var warnings []string
	cheapest, limit := -1.0, ledger.Money(0)
	for k, b := range spec.Bundles {
		cost := reserveCost(bc, b)
		l := spec.LimitOf(k)
		if spec.Limits != nil {
			if l.Dollars() < cost {
				cl, _, _ := strings.Cut(firstPool(b), "/")
				warnings = append(warnings, "Your limit for "+cl+" ("+moneyfmt.Cents(int64(l))+") is below what that bundle costs even at reserve prices ("+
					moneyfmt.Cents(int64(monOf(cost)))+"). Prices start at reserve and only rise, so this bundle cannot win in this auction.")
			}
			continue
		}
		if cheapest < 0 || cost < cheapest {
			cheapest, limit = cost, l
		}
	}
	if cheapest >= 0 && limit.Dollars() < cheapest {
		warnings = append(warnings, "Your limit ("+moneyfmt.Cents(int64(limit))+") is below what even the cheapest bundle costs at reserve prices ("+
			moneyfmt.Cents(int64(monOf(cheapest)))+"). Prices start at reserve and only rise, so this bid cannot win in this auction.")
	}
	return warnings
}

// reserveCost is what bundle b costs at reserve prices, in dollars.
func reserveCost(bc bidContext, b exchange.Bundle) float64 {
	var cost float64
	for pool, q := range b {
		cost += float64(q) * bc.reserve[pool]
	}
	return cost
}

func firstPool(b exchange.Bundle) string {
	for p := range b {
		return p
	}
	return ""
}
