package web

import (
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

func (s *Server) financeView(c *gin.Context, grant templates.GrantForm) (templates.FinanceView, error) {
	ctx := c.Request.Context()
	teams, err := s.svc.Market.Teams(ctx)
	if err != nil {
		return templates.FinanceView{}, err
	}
	l := s.svc.Market.Ledger()
	v := templates.FinanceView{Grant: grant, JournalCSV: "/finance/journal.csv", TeamNames: map[string]string{}}
	v.Grant.Token = newFormToken() // every rendering is a new grant
	for _, t := range teams {
		b, err := l.Balance(ctx, ledger.TeamAccount(t.ID))
		if err != nil {
			return v, err
		}
		v.Budgets = append(v.Budgets, templates.BudgetRow{Team: t.ID, Name: t.Name, Posted: mon(b.Posted), Held: mon(b.Held), Available: mon(b.Available)})
		for _, sum := range []struct {
			to *templates.Money
			m  ledger.Money
		}{{&v.BudgetTotal.Posted, b.Posted}, {&v.BudgetTotal.Held, b.Held}, {&v.BudgetTotal.Available, b.Available}} {
			total, err := ledger.Money(*sum.to).Add(sum.m)
			if err != nil {
				return v, err
			}
			*sum.to = mon(total)
		}
		v.Grant.Teams = append(v.Grant.Teams, t.ID)
		v.TeamNames[t.ID] = t.Name
	}
	tb, err := l.TrialBalance(ctx)
	if err != nil {
		return v, err
	}
	var total ledger.Money
	for _, a := range tb {
		v.Trial = append(v.Trial, templates.TrialRow{Account: string(a.Account), Balance: mon(a.Posted)})
		total += a.Posted
	}
	v.TrialTotal = mon(total)
	as, err := s.svc.Market.Auctions(ctx, 50)
	if err != nil {
		return v, err
	}
	for _, a := range as {
		if a.Status == exchange.AuctionSettled || a.Status == exchange.AuctionFailed {
			v.Auctions = append(v.Auctions, templates.AuctionLink{ID: a.ID, Status: string(a.Status), Window: auctionWindow(a)})
		}
	}
	return v, nil
}

func (s *Server) financePage(c *gin.Context) {
	v, err := s.financeView(c, templates.GrantForm{})
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusOK, templates.FinancePage(s.page(c, "Finance", "finance"), v))
}

// newFormToken is a fresh random token for one rendering of a form.
func newFormToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// validFormToken reports whether t is a token newFormToken could have made.
func validFormToken(t string) bool {
	if len(t) != 32 {
		return false
	}
	_, err := hex.DecodeString(t)
	return err == nil
}

// entryAmountText is what a grant or take-back entry moved for team, "$500.00 to
// search" or "$20.00 from search".
func entryAmountText(e ledger.Entry, team string) string {
	for _, p := range e.Postings {
		if p.Account == ledger.TeamAccount(team) {
			if p.Amount < 0 {
				return moneyfmt.Cents(int64(-p.Amount)) + " from " + team
			}
			return moneyfmt.Cents(int64(p.Amount)) + " to " + team
		}
	}
	return "for another team"
}

// grant funds a team's budget; the form's token makes a double submission a no-op.
func (s *Server) grant(c *gin.Context) {
	f := templates.GrantForm{Team: c.PostForm("team"), Action: c.DefaultPostForm("action", "grant"), Amount: c.PostForm("amount"),
		Memo: c.PostForm("memo"), Errors: templates.FieldErrors{}}
	amount := parseMoneyField(c, "amount", f.Errors)
	if len(f.Memo) > 200 {
		f.Errors["memo"] = "At most 200 characters."
	}
	move, done := s.svc.Market.Grant, "Granted %s to %s."
	switch f.Action {
	case "grant":
	case "take-back":
		move, done = s.svc.Market.TakeBack, "Took %s back from %s."
	default:
		f.Errors["action"] = "Choose grant or take back."
	}
	token := c.PostForm("form_token")
	if len(f.Errors) == 0 && !validFormToken(token) {
		s.redirectWithFlash(c, "/finance", "error", "That grant form was out of date (opened before an update): nothing was granted. Enter the grant again.")
		return
	}
	if len(f.Errors) == 0 {
		// A duplicate is the same rendering of the form submitted again (a double
		// click, a reload, the back button): its token is the ledger entry's key, so
		// it is granted once, and the second submission says so instead of "Granted".
		// Another grant, even of the same amount to the same team, is a new form.
		key := fmt.Sprintf("%s/%d/%s", f.Action, userOf(c).ID, token)
		ctx := c.Request.Context()
		if prior, err := s.svc.Market.Ledger().EntryByKey(ctx, key); err == nil {
			s.redirectWithFlash(c, "/finance", "info", fmt.Sprintf("This form was already submitted: entry #%d at %s (%s). Nothing more was granted; use the fresh form for another grant.",
				prior.ID, fmtTime(prior.At), entryAmountText(prior, f.Team)))
			return
		} else if clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			s.fail(c, err)
			return
		}
		_, err := move(ctx, key, f.Team, amount, f.Memo)
		if err == nil {
			s.redirectWithFlash(c, "/finance", "ok", fmt.Sprintf(done, moneyfmt.Cents(int64(amount)), f.Team))
			return
		}
		if clearhouse.ErrorCode(err) == clearhouse.EINTERNAL {
			s.fail(c, err)
			return
		}
		f.Errors = formErrors(err, "amount")
		for field, m := range f.Errors { // every message beside a field the form shows
			switch field {
			case "team", "action", "amount", "memo":
			case "account":
				delete(f.Errors, field)
				f.Errors["team"] = m
			default:
				delete(f.Errors, field)
				f.Errors["amount"] = m
			}
		}
	}
	v, err := s.financeView(c, f)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusUnprocessableEntity, templates.FinancePage(s.page(c, "Finance", "finance"), v))
}

func (s *Server) financeTeamPage(c *gin.Context) {
	team := c.Param("team")
	v, ok := s.teamView(c, team, "/finance/teams/"+team+"/statement.csv")
	if !ok {
		return
	}
	s.render(c, http.StatusOK, templates.TeamPage(s.page(c, "Team "+v.Name, "finance"), v))
}

func (s *Server) financeTeamCSV(c *gin.Context) { s.statementCSV(c, c.Param("team")) }

func (s *Server) journalCSV(c *gin.Context) {
	from, to, err := s.period(c, statementDays)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="journal-%s.csv"`, from.Format("20060102")))
	if err := s.svc.Market.Ledger().WriteJournalCSVWords(c.Request.Context(), c.Writer, from, to, memoWords); err != nil {
		s.log.Error("writing journal", "request_id", requestID(c), "err", clip(err.Error(), maxLoggedError))
	}
}

func auctionID(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such auction.")
	}
	return id, nil
}

func (s *Server) settlementPage(c *gin.Context) {
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	var after int64
	if a := c.Query("after"); a != "" {
		if after, err = strconv.ParseInt(a, 10, 64); err != nil || after < 0 {
			s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "after: must be an order number"))
			return
		}
	}
	rep, next, err := s.svc.Market.SettlementPage(c.Request.Context(), id, after, 200)
	if err != nil {
		s.fail(c, err)
		return
	}
	v := templates.SettlementView{AuctionID: id, Status: string(rep.Auction.Status),
		Window:     auctionWindow(rep.Auction),
		BuyersPaid: mon(rep.BuyersPaid), SellersReceived: mon(rep.SellersReceived), TreasuryNet: mon(rep.TreasuryNet),
		Rounding: monOf(rep.Rounding), Balanced: rep.BuyersPaid == rep.SellersReceived+rep.TreasuryNet,
		CSV: fmt.Sprintf("/finance/auctions/%d/settlement.csv", id)}
	teams, err := s.svc.Market.Teams(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	names := map[string]string{}
	for _, t := range teams {
		names[t.ID] = t.Name
	}
	units, err := s.poolUnits(c.Request.Context())
	if err != nil {
		s.fail(c, err)
		return
	}
	if v.Final, err = s.finalRoundView(c.Request.Context(), rep.Run, units); err != nil {
		s.fail(c, err)
		return
	}
	prices, err := s.bindingPrices(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	v.Prices = priceRows(prices, units)
	byPool := map[string]float64{}
	for _, p := range prices {
		byPool[p.PoolID] = p.Price
	}
	for _, l := range rep.Lines {
		row := templates.SettlementRow{Order: l.OrderID, Team: teamName(names, l.TeamID), Payment: mon(ledger.Money(l.Payment)), Exact: monOf(l.Exact)}
		if l.Bundle != nil {
			row.Bundle = bundleText(l.Bundle, units)
			// A final-round payment that differs from the bundle at the prices is also
			// listed with both amounts in the final round's section.
			row.Won, row.Uniform, row.AtPrices, row.Total = true, l.Uniform(), monOf(l.AtPrices), row.Payment
			if !row.Uniform {
				row.Total = row.AtPrices
			}
			row.Derivation = derivation(l.Bundle, byPool, units)
			if rep.Run.FinalRound {
				row.Rule = exchange.PaymentRuleWords(l.PaymentRule)
			}
			if l.VCGPayment != nil && l.Payment >= 0 {
				m := monOf(*l.VCGPayment)
				row.VCG = &m
			}
		}
		v.Lines = append(v.Lines, row)
	}
	v.Pager = templates.Pager{Shown: countOf(int64(len(rep.Lines)), "order"), NextLabel: "Next →"}
	if next != 0 {
		v.Pager.Next = fmt.Sprintf("%s?after=%d", c.Request.URL.Path, next)
	}
	if after != 0 {
		v.Pager.First = c.Request.URL.Path
	}
	s.render(c, http.StatusOK, templates.SettlementPage(s.page(c, fmt.Sprintf("Settlement of auction #%d", id), "finance"), v))
}

// SettlementCSVHeader is the stable header of settlement report downloads. Money
// columns have six decimals on every row; bundles are numbered from 1, as on pages;
// the text cells (team, bundle) go through clearhouse.CSVText.
// unit_prices are the binding prices per unit of the bundle's pools, to the
// micro-dollar: the bundle's quantities times them give at_prices, the bundle's
// cost at the published prices, which is the payment unless the final round set
// another (then settled_payment differs from at_prices). supporting_unit_prices
// are, in the same form, the final round's supporting prices of the bundle's
// pools, when the final round changed the clock's allocation (empty otherwise):
// the linear prices that explain the allocation as well as any can, which no one
// pays. payment_rule is the rule the winner's payment followed (clock_prices,
// core, core_least_revenue or capped_prices; exchange.PaidCore and its kin),
// empty for an order that lost and for auctions settled before it was recorded.
// vcg_payment is, for a core payment (core, core_least_revenue), the winner's VCG
// payment to the micro-dollar: what its bundle cost the other orders, the least a
// core payment could be (settled_payment is at least this, up to rounding, and at
// most the limit); empty otherwise, and for auctions settled before it was recorded.
var SettlementCSVHeader = []string{"auction_id", "order_id", "team", "bundle_number", "bundle", "clock_payment", "settled_payment", "entry_id", "unit_prices", "at_prices", "supporting_unit_prices", "payment_rule", "vcg_payment"}

func (s *Server) settlementCSV(c *gin.Context) {
	id, err := auctionID(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	rep, err := s.svc.Market.SettlementReport(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	prices, err := s.bindingPrices(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	byPool := map[string]float64{}
	var supporting map[string]float64 // nil: the run has no supporting prices
	for _, p := range prices {
		byPool[p.PoolID] = p.Price
		if p.SupportingPrice != nil {
			if supporting == nil {
				supporting = map[string]float64{}
			}
			supporting[p.PoolID] = float64(*p.SupportingPrice) / float64(ledger.Dollar)
		}
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="settlement-%d.csv"`, id))
	w := csv.NewWriter(c.Writer)
	_ = w.Write(SettlementCSVHeader)
	for _, l := range rep.Lines {
		entry := ""
		if l.EntryID != nil {
			entry = strconv.FormatInt(*l.EntryID, 10)
		}
		bundle, unitPrices, atPrices, supportingPrices := "", "", "", ""
		if l.Bundle != nil {
			bundle = strings.ReplaceAll(l.Bundle.String(), ", ", ";")
			unitPrices = csvUnitPrices(l.Bundle, byPool)
			atPrices = ledger.Money(monOf(l.AtPrices)).CSV()
			if supporting != nil {
				supportingPrices = csvUnitPrices(l.Bundle, supporting)
			}
		}
		number := "" // counted from 1, as pages count bundles
		if l.BundleIndex >= 0 {
			number = strconv.Itoa(l.BundleIndex + 1)
		}
		vcg := ""
		if l.VCGPayment != nil {
			vcg = ledger.Money(monOf(*l.VCGPayment)).CSV()
		}
		_ = w.Write([]string{strconv.FormatInt(id, 10), strconv.FormatInt(l.OrderID, 10), clearhouse.CSVText(l.TeamID), number, clearhouse.CSVText(bundle),
			ledger.Money(monOf(l.Exact)).CSV(), ledger.Money(l.Payment).CSV(), entry, unitPrices, atPrices, supportingPrices, l.PaymentRule, vcg})
	}
	w.Flush()
}
