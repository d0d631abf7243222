package exchange

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/notify"
)

// Notification kinds.
const (
	NoticeAuctionSettled = "auction_settled" // ref "auction:N": the team's outcome
	NoticeAuctionFailed  = "auction_failed"  // ref "auction:N": nothing moved
	NoticeApprovalNeeded = "approval_needed" // ref "order:N": an owner's decision is needed
	NoticeOrderApproved  = "order_approved"  // ref "order:N": to whoever placed it
	NoticeOrderRejected  = "order_rejected"  // ref "order:N": to whoever placed it
)

// teamUsers returns the members and owners of teams, by team.
func teamUsers(tx *gorm.DB, teams []string, roles ...identity.Role) (map[string][]identity.User, error) {
	out := map[string][]identity.User{}
	for part := range slices.Chunk(teams, chunkSize) {
		var us []identity.User
		q := tx.Where("team_id IN ?", part)
		if len(roles) > 0 {
			q = q.Where("role IN ?", roles)
		}
		if err := q.Order("id").Find(&us).Error; err != nil {
			return nil, err
		}
		for _, u := range us {
			out[u.TeamID] = append(out[u.TeamID], u)
		}
	}
	return out, nil
}

// lossFacts is what a settled run knows to explain its lost orders; empty when
// none lost or the run did not clear.
func lossFacts(tx *gorm.DB, a Auction, converged bool, prices map[string]float64, views []OrderView, lines []SettlementLine) (LossFacts, error) {
	f := LossFacts{Prices: prices, Final: true}
	if !converged || !slices.ContainsFunc(lines, func(l SettlementLine) bool { return l.BundleIndex < 0 }) {
		return f, nil
	}
	var err error
	if f.ForSale, err = forSaleIn(tx, a.ID); err != nil {
		return f, err
	}
	specs := make(map[int64]OrderSpec, len(views))
	for _, v := range views {
		specs[v.ID] = v.Spec
	}
	f.Taken = map[string][]Taker{}
	for _, l := range lines {
		if l.BundleIndex < 0 || l.BundleIndex >= len(specs[l.OrderID].Bundles) {
			continue
		}
		b := specs[l.OrderID].Bundles[l.BundleIndex]
		for _, p := range slices.Sorted(maps.Keys(b)) {
			if b[p] > 0 {
				f.Taken[p] = append(f.Taken[p], Taker{OrderID: l.OrderID, Team: l.TeamID, Units: b[p]})
			}
		}
	}
	f.Units, err = poolUnits(tx)
	return f, err
}

// maxOrderLines bounds the orders one settlement message lists; the rest are
// counted.
const maxOrderLines = 20

// SettlementRule says, in one paragraph for the teams, which payment rule settled
// an auction whose binding run's final round is f (nil: the clock alone), what it
// means, and the bidding advice that holds under it (docs/final-round.md). Where f
// says which parts paid which rule (Parts set), it says so too, and names the
// parts that paid the least-revenue core point instead of the one nearest VCG
// (LeastRevenueParts).
func SettlementRule(f *auction.FinalRound) string {
	switch {
	case f == nil:
		return "Settled by the clock alone: every winner paid the same price per unit in each pool (the final prices), never more than its limit."
	case f.Payments == auction.PaymentsCore:
		return "Settled by the clock and a final round with core payments: each winner paid at least its VCG payment (what its bundle cost the other orders) and never more than its limit, and no group of other orders offered more for the same quota." +
			leastRevenueNote(f) + " Bid your true value: bidding less can save at most what you paid above your VCG payment, and risks losing the bundle."
	case f.Payments == auction.PaymentsMixed:
		where := ""
		if f.Parts > 0 {
			where = fmt.Sprintf(" (in %d of the market's %d independent parts)", f.CoreParts, f.Parts)
		}
		return "Settled by the clock and a final round: where the round proved its choice the best" + where + ", winners paid core payments (at least their VCG payment, never more than their limit); elsewhere their bundle at the clock's prices, capped at their limit." +
			leastRevenueNote(f)
	default:
		return "Settled by the clock and a final round that did not prove its choice the best, so each winner paid its bundle at the clock's prices, capped at its limit: a winner the clock had priced out paid its whole limit."
	}
}

// PaymentRuleWords says in a few words, for one winner's line, the rule its
// payment followed (PaidCore, ...), in SettlementRule's words; "" for "" (lost,
// or not recorded) and for an unknown rule.
func PaymentRuleWords(rule string) string {
	switch rule {
	case PaidClockPrices:
		return "the bundle at the clock's prices, the same price per unit for everyone"
	case PaidCore:
		return "a core payment, the one nearest the VCG payments"
	case PaidCoreLeastRevenue:
		return "a core payment of least total that the solver found, not necessarily the nearest to the VCG payments, because the step that finds that point failed on the numbers"
	case PaidCappedPrices:
		return "the bundle at the clock's prices, capped at the limit, because the final round did not prove its choice the best here"
	}
	return ""
}

// leastRevenueNote says, after SettlementRule's words on core payments, which
// parts paid the least-revenue core point because the step to the point nearest
// VCG failed (f.LeastRevenueParts); "" when none did or it is not known.
func leastRevenueNote(f *auction.FinalRound) string {
	n := f.LeastRevenueParts
	if n <= 0 {
		return ""
	}
	where := "Wherever winners paid core payments"
	if n < f.CoreParts {
		where = fmt.Sprintf("In %d of the %d independent parts of the market that paid core payments", n, f.CoreParts)
	}
	return " " + where + ", the step that finds the core payments nearest the VCG payments failed on the numbers, so the winners there paid the core payments of least total that the solver found instead: still at least their VCG payment, never more than their limit, and no group of other orders offered more, but not necessarily the nearest to the VCG payments."
}

// notifySettled tells every member and owner of each team with an order in the
// run what its orders got: won, lost or rejected, paid and received. It runs in
// the settlement's transaction, so the messages exist exactly when the settlement
// does, once. won is the run's winners by order: where they paid under more than
// one rule (some parts core payments, others capped prices), each won order's
// line says which rule its payment followed (PaymentRuleOf), since
// SettlementRule's paragraph can only say that both happened; and a buyer that
// paid a core payment is told its VCG payment, the least a core payment could be,
// so that what a lower bid could at most have saved is a figure, not a claim.
func (m *Market) notifySettled(tx *gorm.DB, a Auction, converged bool, final *auction.FinalRound, prices map[string]float64, views []OrderView, lines []SettlementLine, rejected []int64, won map[int64]auction.Winner) error {
	type outcome struct {
		won, lost, rejected int
		paid, received      int64
		orders              []string        // the first maxOrderLines orders' lines
		more                int             // orders beyond those
		pools               map[string]bool // pools any of the team's orders' bundles use
	}
	byTeam := map[string]*outcome{}
	get := func(team string) *outcome {
		if byTeam[team] == nil {
			byTeam[team] = &outcome{}
		}
		return byTeam[team]
	}
	specs := make(map[int64]OrderSpec, len(views))
	for _, v := range views {
		specs[v.ID] = v.Spec
	}
	say := func(o *outcome, format string, args ...any) {
		if len(o.orders) >= maxOrderLines {
			o.more++
			return
		}
		o.orders = append(o.orders, fmt.Sprintf(format, args...))
	}
	first, mixed := "", false
	for _, w := range won {
		r := PaymentRuleOf(w, final != nil)
		if first == "" {
			first = r
		}
		mixed = mixed || r != first
	}
	// ruleOf is ": <rule>" for a won order's line when the rules are mixed.
	ruleOf := func(order int64) string {
		if w := PaymentRuleWords(PaymentRuleOf(won[order], final != nil)); mixed && w != "" {
			return ": " + w
		}
		return ""
	}
	// vcgOf is " (its VCG payment $X)" for a buyer's core payment.
	vcgOf := func(order int64) string {
		if w, ok := won[order]; ok && final != nil && w.Core && w.Payment >= 0 {
			if v, ok := moneyfmt.FromDollars(w.VCG); ok {
				return " (its VCG payment " + moneyfmt.Exact(v) + ")"
			}
		}
		return ""
	}
	facts, err := lossFacts(tx, a, converged, prices, views, lines)
	if err != nil {
		return err
	}
	for _, l := range lines {
		o := get(l.TeamID)
		if o.pools == nil {
			o.pools = map[string]bool{}
		}
		for _, b := range specs[l.OrderID].Bundles {
			for pool := range b {
				o.pools[pool] = true
			}
		}
		switch {
		case l.BundleIndex < 0:
			o.lost++
			if why := LossReason(specs[l.OrderID], facts); converged && why != "" {
				say(o, "Order #%d got nothing: %s. Its holds were released.", l.OrderID, why)
			} else {
				say(o, "Order #%d got nothing; its holds were released.", l.OrderID)
			}
		case l.Payment >= 0:
			o.won++
			o.paid += l.Payment
			say(o, "Order #%d won %s and paid %s%s%s.", l.OrderID, specs[l.OrderID].Bundles[l.BundleIndex], moneyfmt.Exact(l.Payment), vcgOf(l.OrderID), ruleOf(l.OrderID))
		default:
			o.won++
			o.received -= l.Payment
			say(o, "Order #%d sold %s and received %s%s.", l.OrderID, specs[l.OrderID].Bundles[l.BundleIndex], moneyfmt.Exact(-l.Payment), ruleOf(l.OrderID))
		}
	}
	if len(rejected) > 0 {
		var os []Order
		if err := tx.Where("id IN ?", rejected).Find(&os).Error; err != nil {
			return err
		}
		for _, o := range os {
			get(o.TeamID).rejected++
			say(get(o.TeamID), "Order #%d was still waiting for approval and was rejected; its holds were released.", o.ID)
		}
	}
	teams := make([]string, 0, len(byTeam))
	for t := range byTeam {
		teams = append(teams, t)
	}
	sort.Strings(teams)
	users, err := teamUsers(tx, teams)
	if err != nil {
		return err
	}
	var all []identity.User
	for _, t := range teams {
		all = append(all, users[t]...)
	}
	ref := fmt.Sprintf("auction:%d", a.ID)
	return m.notices.Send(tx, all, func(u identity.User) notify.Message {
		o := byTeam[u.TeamID]
		var b strings.Builder
		if !converged {
			fmt.Fprintf(&b, "Auction #%d did not clear, so nothing was bought or sold; every hold of your team's orders was released.\n\n", a.ID)
			return notify.Message{Kind: NoticeAuctionFailed, Ref: ref, Subject: fmt.Sprintf("Auction #%d did not clear", a.ID), Body: b.String() + orderList(o.orders, o.more), Link: fmt.Sprintf("/auctions/%d", a.ID)}
		}
		fmt.Fprintf(&b, "Auction #%d has settled. Team %s: %d of %d orders won", a.ID, u.TeamID, o.won, o.won+o.lost+o.rejected)
		if o.paid > 0 {
			fmt.Fprintf(&b, "; paid %s", moneyfmt.Exact(o.paid))
		}
		if o.received > 0 {
			fmt.Fprintf(&b, "; received %s", moneyfmt.Exact(o.received))
		}
		b.WriteString(".\n\n")
		b.WriteString(SettlementRule(final) + "\n\n")
		if sp := supportingPricesNote(final, prices, o.pools); sp != "" {
			b.WriteString(sp + "\n\n")
		}
		subject := fmt.Sprintf("Auction #%d settled: %d of %d orders won", a.ID, o.won, o.won+o.lost+o.rejected)
		return notify.Message{Kind: NoticeAuctionSettled, Ref: ref, Subject: subject, Body: b.String() + orderList(o.orders, o.more), Link: "/orders"}
	})
}

// supportingPricesNote tells a team the final round's supporting prices of the
// pools its orders bid in (pools), a line per pool beside the clock's price, when
// the final round changed the clock's allocation (final.Prices set); "" otherwise,
// or when none of those pools has one. At most maxOrderLines pools are listed.
func supportingPricesNote(final *auction.FinalRound, clock map[string]float64, pools map[string]bool) string {
	if final == nil || final.Prices == nil {
		return ""
	}
	var lines []string
	more := 0
	for _, pool := range slices.Sorted(maps.Keys(pools)) {
		p, ok := final.Prices[pool]
		if !ok {
			continue
		}
		if len(lines) == maxOrderLines {
			more++
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %s per unit (the clock's price %s).", pool, moneyfmt.Price(p), moneyfmt.Price(clock[pool])))
	}
	if len(lines) == 0 {
		return ""
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more pools; see the auction's page.", more))
	}
	return "The final round changed the clock's allocation. Supporting prices, the linear prices that explain it as well as any can (no one pays them):\n" + strings.Join(lines, "\n")
}

func orderList(lines []string, more int) string {
	if more > 0 {
		lines = append(lines[:len(lines):len(lines)], fmt.Sprintf("… and %d more; see your orders.", more))
	}
	return strings.Join(lines, "\n")
}

// notifyApproval tells the team's owners that order o waits for one of them.
func (m *Market) notifyApproval(tx *gorm.DB, o Order, by identity.User, spec OrderSpec) error {
	owners, err := teamUsers(tx, []string{o.TeamID}, identity.RoleOwner)
	if err != nil {
		return err
	}
	who := by.Name
	if who == "" {
		who = by.Email
	}
	return m.notices.Send(tx, owners[o.TeamID], func(identity.User) notify.Message {
		body := fmt.Sprintf("%s placed order #%d for team %s. It could pay up to %s, above the team's approval threshold, so it takes part in the auction only once an owner approves it. Orders still waiting when the auction closes are rejected.\n\n%s",
			who, o.ID, o.TeamID, moneyfmt.Exact(int64(spec.MaxPayment())), bundlesText(spec))
		return notify.Message{Kind: NoticeApprovalNeeded, Ref: fmt.Sprintf("order:%d", o.ID), Subject: fmt.Sprintf("Order #%d waits for your approval", o.ID), Body: body, Link: "/approvals"}
	})
}

func bundlesText(spec OrderSpec) string {
	parts := make([]string, len(spec.Bundles))
	for i, b := range spec.Bundles {
		parts[i] = fmt.Sprintf("Bundle %d: %s", i+1, b)
	}
	return strings.Join(parts, "\n")
}
