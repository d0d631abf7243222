package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/web"
)

// openMarket adds a curve, a cluster with a cpu pool, team search and an open auction.
func (f *fixture) openMarket() {
	f.t.Helper()
	ctx := context.Background()
	f.cpuPool()
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		f.t.Fatal(err)
	}
}

// cpuPool adds a curve, cluster us-east with a pool of 100 cores, and team search
// with $1,000.
func (f *fixture) cpuPool() {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.market.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "us-east"}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100, UnitCost: ledger.Dollar, Utilization: 0.8, CurveID: "standard"}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 1000 * ledger.Dollar}); err != nil {
		f.t.Fatal(err)
	}
}

// TestEveryPageRefusesOtherRoles signs in as each role and checks every page:
// allowed roles get 200, the others 403.
func TestEveryPageRefusesOtherRoles(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	users := map[identity.Role]*browser{}
	for _, r := range identity.Roles {
		team := ""
		if r.OnTeam() {
			team = "search"
		}
		f.user(string(r)+"@x.io", r, team)
		b := f.browser()
		b.login(string(r) + "@x.io")
		users[r] = b
	}
	pages := map[string][]identity.Role{
		"/":                                   identity.Roles,
		"/auctions":                           identity.Roles,
		"/auctions/1":                         identity.Roles,
		"/search":                             identity.Roles,
		"/help":                               identity.Roles,
		"/notifications":                      identity.Roles,
		"/orders":                             {identity.RoleMember, identity.RoleOwner},
		"/orders/new":                         {identity.RoleMember, identity.RoleOwner},
		"/orders/offer":                       {identity.RoleMember, identity.RoleOwner},
		"/team":                               {identity.RoleMember, identity.RoleOwner},
		"/team/statement.csv":                 {identity.RoleMember, identity.RoleOwner},
		"/approvals":                          {identity.RoleOwner},
		"/finance":                            {identity.RoleFinance},
		"/finance/teams/search":               {identity.RoleFinance},
		"/finance/journal.csv":                {identity.RoleFinance},
		"/finance/best-effort":                {identity.RoleFinance},
		"/finance/auctions/1":                 {identity.RoleFinance},
		"/operate":                            {identity.RoleOperator},
		"/operate/trades":                     {identity.RoleOperator},
		"/operate/curves/standard":            {identity.RoleOperator},
		"/operate/pools/us-east/cpu":          {identity.RoleOperator},
		"/api/v1/market":                      identity.Roles,
		"/api/v1/budget":                      {identity.RoleMember, identity.RoleOwner},
		"/api/v1/teams/search/budget":         {identity.RoleFinance},
		"/finance/auctions/1/settlement.csv":  {identity.RoleFinance},
		"/api/v1/ledger/trial-balance":        {identity.RoleFinance},
		"/api/v1/auctions/1/settlement":       {identity.RoleFinance, identity.RoleOperator},
		"/reservations":                       {identity.RoleMember, identity.RoleOwner},
		"/operate/schedule":                   {identity.RoleOperator},
		"/operate/schedule/lost-value.csv":    {identity.RoleOperator},
		"/operate/access":                     {identity.RoleOperator},
		"/operate/shapes":                     {identity.RoleOperator},
		"/orders/move":                        {identity.RoleMember, identity.RoleOwner},
		"/api/v1/reservations":                identity.Roles,
		"/api/v1/clusters/us-east/allocation": {identity.RoleOperator},
		"/api/v1/best-effort":                 identity.Roles,
		"/best-effort":                        {identity.RoleMember, identity.RoleOwner},
		"/operate/idle":                       {identity.RoleOperator},
		"/audit":                              {identity.RoleFinance, identity.RoleOperator},
		"/audit.csv":                          {identity.RoleFinance, identity.RoleOperator},
		"/audit.jsonl":                        {identity.RoleFinance, identity.RoleOperator},
	}
	for page, allowed := range pages {
		for _, r := range identity.Roles {
			want := http.StatusForbidden
			for _, a := range allowed {
				if a == r {
					want = http.StatusOK
				}
			}
			res, _ := users[r].get(page)
			if res.StatusCode != want {
				t.Errorf("%s as %s: %d, want %d", page, r, res.StatusCode, want)
			}
		}
	}
	// Forms refuse the wrong role too, even with a valid CSRF token.
	tok := users[identity.RoleMember].csrf("/orders")
	for _, path := range []string{"/finance/grants", "/operate/clusters", "/approvals/1", "/team/threshold", "/operate/schedule/us-east/cpu",
		"/operate/access/tokens/1/revoke", "/operate/access/users/1/sessions/end", "/operate/access/users/1/disable", "/operate/access/users/1/enable",
		"/operate/shapes", "/operate/shapes/x/delete"} {
		res, _ := users[identity.RoleMember].post(path, url.Values{"csrf_token": {tok}})
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s as member: %d, want 403", path, res.StatusCode)
		}
	}
}

func TestAPIWithATokenPlacesAndWithdrawsAnOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	u := f.user("ana@x.io", identity.RoleMember, "search")
	token, _, err := f.id.IssueToken(context.Background(), u.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return res.StatusCode, m
	}
	code, m := call("POST", "/api/v1/orders", `{"bundles":[{"us-east/cpu":10}],"limit":"120.50"}`)
	if code != http.StatusCreated || m["status"] != "open" || m["limit"] != "120.50" {
		t.Fatalf("place: %d %v", code, m)
	}
	id := int(m["id"].(float64))
	code, m = call("GET", "/api/v1/budget", "")
	if code != 200 || m["held"] != "120.50" || m["available"] != "879.50" {
		t.Fatalf("budget: %d %v", code, m)
	}
	for body, want := range map[string]string{
		`{"bundles":[{"us-east/cpu":10}],"limit":"lots"}`:           "limit",
		`{"bundles":[{"us-east/cpu":10}]}`:                          "limit",
		`{"bundles":[{"mars/cpu":1}],"limit":"1"}`:                  "mars/cpu",
		`{"bundles":[{"us-east/cpu":10}],"limit":"1","extra":true}`: "extra",
		`{"bundles":[{"us-east/cpu":10}],"limit":"5000"}`:           "insufficient",
	} {
		code, m := call("POST", "/api/v1/orders", body)
		e, _ := m["error"].(map[string]any)
		if code < 400 || code >= 500 || e == nil || !strings.Contains(e["message"].(string), want) {
			t.Errorf("%s: %d %v", body, code, m)
		}
	}
	// A replay with the same Idempotency-Key returns the first order.
	keyed := func(key, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", f.srv.URL+"/api/v1/orders", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	c1, m1 := keyed("k-1", `{"bundles":[{"us-east/cpu":1}],"limit":"5"}`)
	c2, m2 := keyed("k-1", `{"bundles":[{"us-east/cpu":1}],"limit":"5"}`)
	c3, _ := keyed("k-1", `{"bundles":[{"us-east/cpu":2}],"limit":"5"}`)
	if c1 != 201 || c2 != 201 || m1["id"] != m2["id"] || c3 != http.StatusConflict {
		t.Fatalf("idempotent placement: %d %v / %d %v / %d", c1, m1["id"], c2, m2["id"], c3)
	}
	code, m = call("DELETE", "/api/v1/orders/"+itoa(int(m1["id"].(float64))), "")
	if code != 200 || m["status"] != "withdrawn" {
		t.Fatalf("DELETE: %d %v", code, m)
	}
	code, m = call("POST", "/api/v1/orders/"+itoa(id)+"/withdraw", "")
	if code != 200 || m["status"] != "withdrawn" {
		t.Fatalf("withdraw: %d %v", code, m)
	}
	code, m = call("GET", "/api/v1/budget", "")
	if code != 200 || m["held"] != "0.00" {
		t.Fatalf("budget after withdrawing: %d %v", code, m)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/market", nil)
	req.Header.Set("Authorization", "Bearer chu_not-a-token")
	res, _ := http.DefaultClient.Do(req)
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token: %d", res.StatusCode)
	}
	res, _ = http.Get(f.srv.URL + "/api/v1/orders")
	if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("no token: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	res, _ = http.Get(f.srv.URL + "/api/v1/openapi.json")
	var doc map[string]any
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json: %v %v", err, doc["openapi"])
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestBidFormKeepsWhatWasTypedAndSavesNothingWhenRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	tok := b.csrf("/orders/new")
	res, doc := b.post("/orders", url.Values{"csrf_token": {tok}, "q.cpu": {"10"}, "cluster": {"us-east"}, "limit_mode": {"one"}, "limit": {"2,000"}})
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("over-budget bid: %d", res.StatusCode)
	}
	if msg := doc.Find("[data-testid=error-limit]").Text(); !strings.Contains(msg, "insufficient funds") || !strings.Contains(msg, "Available now: $1,000.00") {
		t.Fatalf("limit error %q: want how much is available", msg)
	}
	if v, _ := doc.Find(`input[name=limit]`).Attr("value"); v != "2,000" {
		t.Fatalf("the form lost the limit: %q", v)
	}
	vs, _ := f.market.Orders(context.Background(), exchange.OrderFilter{Team: "search"})
	if len(vs) != 0 {
		t.Fatalf("a refused bid was saved: %+v", vs)
	}
	res, _ = b.post("/orders", url.Values{"csrf_token": {tok}, "q.cpu": {"10"}, "cluster": {"us-east"}, "limit_mode": {"one"}, "limit": {"20"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("good bid: %d", res.StatusCode)
	}
}

func TestAPICloseSettlementAndTrialBalance(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	tokens := map[identity.Role]string{}
	for _, r := range []identity.Role{identity.RoleOwner, identity.RoleOperator, identity.RoleFinance} {
		team := ""
		if r.OnTeam() {
			team = "search"
		}
		u := f.user(string(r)+"@x.io", r, team)
		tok, _, err := f.id.IssueToken(ctx, u.ID, "t")
		if err != nil {
			t.Fatal(err)
		}
		tokens[r] = tok
	}
	call := func(r identity.Role, method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokens[r])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	if code, m := call(identity.RoleOwner, "POST", "/api/v1/orders", `{"bundles":[{"us-east/cpu":10}],"limit":"50"}`); code != 201 {
		t.Fatalf("order: %d %v", code, m)
	}
	if code, _ := call(identity.RoleFinance, "POST", "/api/v1/auctions/1/close", ""); code != http.StatusForbidden {
		t.Fatalf("finance closed an auction: %d", code)
	}
	code, m := call(identity.RoleOperator, "POST", "/api/v1/auctions/1/close", "")
	if code != 200 || m["status"] != "settled" {
		t.Fatalf("close: %d %v", code, m)
	}
	code, m = call(identity.RoleFinance, "GET", "/api/v1/auctions/1/settlement", "")
	totals, _ := m["totals"].(map[string]any)
	lines, _ := m["lines"].([]any)
	if code != 200 || len(lines) != 1 || totals["buyers_paid"] == "0.00" || totals["treasury_net"] != totals["buyers_paid"] {
		t.Fatalf("settlement: %d %v", code, m)
	}
	code, m = call(identity.RoleFinance, "GET", "/api/v1/ledger/trial-balance", "")
	if code != 200 || m["total"] != "0.00" {
		t.Fatalf("trial balance: %d %v", code, m)
	}
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/auctions/1/settlement?format=csv", nil)
	req.Header.Set("Authorization", "Bearer "+tokens[identity.RoleOperator])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.HasPrefix(string(raw), "auction_id,order_id,team,") || strings.Count(string(raw), "\n") != 2 {
		t.Fatalf("settlement CSV:\n%s", raw)
	}
}

func TestNamesAreEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: "evil", Name: `<script>alert("x")</script>`}); err != nil {
		t.Fatal(err)
	}
	f.user("eve@x.io", identity.RoleOwner, "evil")
	b := f.browser()
	b.login("eve@x.io")
	res, err := b.c.Get(f.srv.URL + "/team")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || strings.Contains(string(raw), `<script>alert`) || !strings.Contains(string(raw), "&lt;script&gt;") {
		t.Fatalf("the team name is not escaped as text (status %d)", res.StatusCode)
	}
}

// An authenticating proxy's identity header is trusted only from the proxy's
// addresses, and only for users with an account.
func TestProxyHeaderSignsInFromTrustedAddressesOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.user("ana@x.io", identity.RoleFinance, "")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	serve := func(cidr string) *httptest.Server {
		_, n, _ := net.ParseCIDR(cidr)
		s := web.NewServer(web.Config{LoginRate: 5, ProxyHeader: "X-Forwarded-Email", TrustedProxies: []*net.IPNet{n}},
			web.Services{Identity: f.id, Market: f.market, Reservations: f.plan, BestEffort: f.be}, log, f.clock.Now)
		srv := httptest.NewServer(s.Handler())
		t.Cleanup(srv.Close)
		return srv
	}
	get := func(srv *httptest.Server, email string) int {
		req, _ := http.NewRequest("GET", srv.URL+"/finance", nil)
		req.Header.Set("X-Forwarded-Email", email)
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	trusted, untrusted := serve("127.0.0.0/8"), serve("10.0.0.0/8")
	if code := get(trusted, "ana@x.io"); code != http.StatusOK {
		t.Fatalf("trusted proxy: %d", code)
	}
	if code := get(trusted, "nobody@x.io"); code != http.StatusForbidden {
		t.Fatalf("unknown user through the proxy: %d", code)
	}
	if code := get(untrusted, "ana@x.io"); code != http.StatusSeeOther {
		t.Fatalf("header from an untrusted address: %d, want a redirect to sign in", code)
	}
}

func TestGrantsFromTheFinanceForm(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("fin@x.io", identity.RoleFinance, "")
	b := f.browser()
	b.login("fin@x.io")
	tok := b.csrf("/finance")
	formToken := func() string {
		t.Helper()
		_, doc := b.get("/finance")
		v, ok := doc.Find(`[data-testid=grant-form] input[name=form_token]`).Attr("value")
		if !ok || v == "" {
			t.Fatal("the grant form has no form token")
		}
		return v
	}
	form := formToken()
	var flashes []string
	for range 2 { // a double submission of one form grants once, and says so the second time
		res, _ := b.post("/finance/grants", url.Values{"csrf_token": {tok}, "form_token": {form}, "team": {"search"}, "amount": {"2,500"}, "memo": {"Q3"}})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("grant: %d", res.StatusCode)
		}
		_, doc := b.get("/finance")
		flashes = append(flashes, doc.Find("[data-testid=flash]").Text())
	}
	if !strings.HasPrefix(flashes[0], "Granted $2,500.00") || strings.Contains(flashes[1], "Granted") || !strings.Contains(flashes[1], "already submitted") {
		t.Errorf("flashes after submitting one form twice: %q", flashes)
	}
	bal, _ := f.market.Ledger().Balance(context.Background(), ledger.TeamAccount("search"))
	if bal.Posted != 3500*ledger.Dollar {
		t.Fatalf("search has %s after granting 2,500 twice in a row, want 3,500.00", bal.Posted)
	}
	// The same amount to the same team from a fresh form, with another memo, in the
	// same minute, is another grant.
	res, _ := b.post("/finance/grants", url.Values{"csrf_token": {tok}, "form_token": {formToken()}, "team": {"search"}, "amount": {"2,500"}, "memo": {"Q4"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a second grant from a fresh form: %d", res.StatusCode)
	}
	if bal, _ = f.market.Ledger().Balance(context.Background(), ledger.TeamAccount("search")); bal.Posted != 6000*ledger.Dollar {
		t.Fatalf("search has %s after a second grant of 2,500, want 6,000.00", bal.Posted)
	}
	res, doc := b.post("/finance/grants", url.Values{"csrf_token": {tok}, "form_token": {formToken()}, "team": {"search"}, "amount": {"-100"}})
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-amount]").Length() != 1 {
		t.Fatalf("a negative grant: %d", res.StatusCode)
	}
	res, doc = b.post("/finance/grants", url.Values{"csrf_token": {tok}, "team": {"search"}, "form_token": {formToken()}, "action": {"take-back"}, "amount": {"99,999"}})
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-amount]").Length() != 1 {
		t.Fatalf("a take-back beyond the budget: %d", res.StatusCode)
	}
	res, _ = b.post("/finance/grants", url.Values{"csrf_token": {tok}, "team": {"search"}, "form_token": {formToken()}, "action": {"take-back"}, "amount": {"500"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("take-back: %d", res.StatusCode)
	}
	bal, _ = f.market.Ledger().Balance(context.Background(), ledger.TeamAccount("search"))
	if bal.Posted != 5500*ledger.Dollar {
		t.Fatalf("search has %s after taking back 500, want 5,500.00", bal.Posted)
	}
}
