package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// newUtilFixture is newFixture with measured utilization wired in, as serve has it.
func newUtilFixture(t *testing.T) (*fixture, *fleet.Utilization) {
	t.Helper()
	db := storetest.New(t)
	clock := storetest.NewClock(storetest.Epoch)
	l := ledger.New(db, clock.Now)
	f := &fixture{t: t, db: db, clock: clock, market: exchange.NewMarket(db, l, clock.Now), id: identity.NewIdentity(db, clock.Now, bcrypt.MinCost),
		plan: fleet.NewReservations(db, l, clock.Now, fleet.DefaultPlanConfig)}
	u := fleet.NewUtilization(db, clock.Now, fleet.DefaultUtilizationConfig)
	f.market.UseQuotaCommitments(f.plan)
	f.market.UseMeasuredUtilization(u)
	s := web.NewServer(web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"},
		web.Services{Identity: f.id, Market: f.market, Reservations: f.plan, Utilization: u}, slog.New(slog.NewTextHandler(io.Discard, nil)), clock.Now)
	f.h = s.Handler()
	f.srv = httptest.NewServer(f.h)
	t.Cleanup(f.srv.Close)
	return f, u
}

func text(doc *goquery.Document, sel string) string {
	return strings.Join(strings.Fields(doc.Find(sel).Text()), " ")
}

// The agent reports us-east/cpu (100 cores) using 5, 10, ..., 100 cores over 20
// slots: p95 is the 19th value, 95%; p50 the 10th, 50%. The pages show it, the
// operator overrides it (a bad override is refused and saves nothing), changes the
// percentile, and the stats page shows the settled bid's pool utilization.
func TestUtilizationPages(t *testing.T) {
	t.Parallel()
	f, u := newUtilFixture(t)
	f.openMarket()
	ctx := context.Background()
	for i := 1; i <= 20; i++ {
		if _, err := f.plan.Report(ctx, "us-east", fleet.AgentReport{Pools: []fleet.PoolUsageReport{{Pool: "us-east/cpu", Used: int64(5 * i)}}}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(5 * time.Minute)
	}
	f.clock.Advance(time.Hour)
	if _, err := u.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("op@x.io")

	_, doc := b.get("/")
	if got := text(doc, `[data-testid="pool-us-east/cpu"] [data-testid=psi]`); got != "95%" {
		t.Errorf("market summary utilization %q, want 95%%", got)
	}
	if doc.Find(`[data-testid="pool-us-east/cpu"] [data-testid=sparkline] polyline`).Length() != 1 {
		t.Error("market summary has no sparkline for us-east/cpu")
	}
	// Each figure says which it is: the psi in effect, and the sparkline's latest mean.
	if got := text(doc, `[data-testid="pool-us-east/cpu"] [data-testid=psi-basis]`); got != "p95 of 7 days" {
		t.Errorf("utilization basis %q, want p95 of 7 days", got)
	}
	if got := text(doc, `[data-testid="pool-us-east/cpu"] [data-testid=trend-now]`); !strings.HasPrefix(got, "hourly mean now ") {
		t.Errorf("sparkline's latest value %q", got)
	}

	page := "/operate/pools/us-east/cpu"
	_, doc = b.get(page)
	curve, _ := auction.DefaultCurve.Build()
	measured := text(doc, "[data-testid=psi-measured]")
	if !strings.Contains(measured, "95.0%") || !strings.Contains(measured, fmt.Sprintf("%.4f", curve.Phi(0.95))) ||
		!strings.Contains(measured, fmt.Sprintf("$%.4f", curve.Phi(0.95))) || !strings.Contains(measured, "in effect") {
		t.Errorf("measured row: %q", measured)
	}
	if held := text(doc, "[data-testid=psi-held]"); !strings.Contains(held, "0.0%") || strings.Contains(held, "in effect") {
		t.Errorf("held row: %q", held)
	}
	if doc.Find("[data-testid=usage-series] path.series").Length() != 2 {
		t.Error("the usage series and the percentile line are not drawn")
	}

	tok := b.csrf(page)
	expires := f.clock.Now().Add(2 * time.Hour).Format("2006-01-02T15:04")
	res, doc := b.post(page+"/override", url.Values{"csrf_token": {tok}, "psi": {"150"}, "reason": {"drain"}, "expires": {expires}})
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-psi]").Length() != 1 {
		t.Fatalf("override of 150%%: %d", res.StatusCode)
	}
	res, doc = b.post(page+"/override", url.Values{"csrf_token": {tok}, "psi": {"30"}, "reason": {""}, "expires": {expires}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(text(doc, "[data-testid=error-reason]"), "say why") {
		t.Fatalf("override without a reason: %d %q", res.StatusCode, text(doc, "[data-testid=form-errors]"))
	}
	if p, _ := u.Pool(ctx, "us-east/cpu"); p.Source != fleet.PsiMeasured {
		t.Fatalf("a refused override was saved: %+v", p)
	}
	if res, _ = b.post(page+"/override", url.Values{"csrf_token": {tok}, "psi": {"30"}, "reason": {"drain for migration"}, "expires": {expires}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("override: %d", res.StatusCode)
	}
	_, doc = b.get(page)
	if o := text(doc, "[data-testid=psi-override]"); !strings.Contains(o, "30.0%") || !strings.Contains(o, "in effect") || !strings.Contains(o, "drain for migration") {
		t.Errorf("override row: %q", o)
	}
	if m := text(doc, "[data-testid=psi-measured]"); !strings.Contains(m, "95.0%") || strings.Contains(m, "in effect") {
		t.Errorf("measured row beside the override: %q", m)
	}
	_, doc = b.get("/")
	if got := text(doc, `[data-testid="pool-us-east/cpu"] [data-testid=utilization] .badge`); got != "override" {
		t.Errorf("market summary with the override: %q", got)
	}
	if res, _ = b.post(page+"/override/clear", url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("clear: %d", res.StatusCode)
	}
	if res, _ = b.post(page+"/utilization", url.Values{"csrf_token": {tok}, "percentile": {"50"}, "window": {"7"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("percentile: %d", res.StatusCode)
	}
	_, doc = b.get(page)
	if m := text(doc, "[data-testid=psi-measured]"); !strings.Contains(m, "50.0%") || !strings.Contains(m, "p50") {
		t.Errorf("measured row at p50: %q", m)
	}
	if res, _ = b.post(page+"/utilization", url.Values{"csrf_token": {tok}, "percentile": {"50"}, "window": {"30"}}); res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("window of 30 days: %d", res.StatusCode)
	}

	// A bid that settles records its pool's utilization at settlement (p50 now).
	a, _, _ := f.market.CurrentAuction(ctx) // the first auction's window is over
	if _, err := f.market.Close(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	member := f.user("member@search.io", identity.RoleMember, "search")
	if _, err := f.market.PlaceOrder(ctx, member, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": 10}}, Limit: money(100)}); err != nil {
		t.Fatal(err)
	}
	a, _, _ = f.market.CurrentAuction(ctx)
	if _, err := f.market.Close(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	_, doc = b.get("/operate/stats")
	var cells []string
	doc.Find(`[data-testid=trade-utilization-cpu-bids] td`).Each(func(_ int, s *goquery.Selection) { cells = append(cells, s.Text()) })
	if row := strings.Join(cells, " "); row != "cpu bids 1 50% 50% 50% 50% 50%" {
		t.Errorf("stats row %q", row)
	}
	if doc.Find(`[data-testid=box-bids]`).Length() != 1 || doc.Find(`[data-testid=box-offers]`).Length() != 0 {
		t.Error("box plot: want one box of bids and none of offers")
	}
}

func money(d float64) *ledger.Money {
	m, _ := ledger.FromDollars(d)
	return &m
}
