package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/clearhouse/clearhouse/web"
)

// fixture is a running server on a fresh database with a fixed clock.
type fixture struct {
	t      testing.TB
	db     *store.DB
	clock  *storetest.Clock
	market *exchange.Market
	id     *identity.Identity
	plan   *fleet.Reservations
	be     *besteffort.Service
	srv    *httptest.Server
	h      http.Handler // the server's handler, for requests made in-process
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, storetest.New(t), web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
}

// newFixtureOn is newFixture on a given database (storetest.Each gives SQLite and
// PostgreSQL) with a given configuration.
func newFixtureOn(t testing.TB, db *store.DB, cfg web.Config) *fixture {
	t.Helper()
	clock := storetest.NewClock(storetest.Epoch)
	l := ledger.New(db, clock.Now)
	f := &fixture{t: t, db: db, clock: clock, market: exchange.NewMarket(db, l, clock.Now), id: identity.NewIdentity(db, clock.Now, bcrypt.MinCost),
		plan: fleet.NewReservations(db, l, clock.Now, fleet.DefaultPlanConfig), be: besteffort.New(db, l, clock.Now, besteffort.DefaultConfig)}
	f.market.UseQuotaCommitments(f.plan)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := web.NewServer(cfg, web.Services{Identity: f.id, Market: f.market, Reservations: f.plan, BestEffort: f.be}, log, clock.Now)
	f.h = s.Handler()
	f.srv = httptest.NewServer(f.h)
	t.Cleanup(f.srv.Close)
	return f
}

const testPassword = "correct horse battery"

// user adds a user (and its team, when it needs one).
func (f *fixture) user(email string, role identity.Role, team string) identity.User {
	f.t.Helper()
	ctx := context.Background()
	if team != "" {
		if _, err := f.market.Team(ctx, team); err != nil {
			if _, err := f.market.AddTeam(ctx, exchange.NewTeam{ID: team}); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	u, err := f.id.AddUser(ctx, identity.NewUser{Email: email, Role: role, TeamID: team, Password: testPassword})
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// browser is a client with a cookie jar that does not follow redirects.
type browser struct {
	f *fixture
	c *http.Client
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{f: f, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) get(path string) (*http.Response, *goquery.Document) {
	b.f.t.Helper()
	res, err := b.c.Get(b.f.srv.URL + path)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer res.Body.Close()
	return res, b.page(path, res.Body)
}

// page parses a response body, failing the test on templ source printed as text:
// every page a test fetches is checked.
func (b *browser) page(path string, body io.Reader) *goquery.Document {
	b.f.t.Helper()
	raw, err := io.ReadAll(body)
	if err != nil {
		b.f.t.Fatal(err)
	}
	if leaks := templates.LeakedTemplateSource(string(raw)); len(leaks) > 0 {
		b.f.t.Errorf("%s prints templ source as text: %q", path, leaks)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(raw))
	if err != nil {
		b.f.t.Fatal(err)
	}
	return doc
}

// csrf reads the CSRF token from the first form of the page at path.
func (b *browser) csrf(path string) string {
	b.f.t.Helper()
	_, doc := b.get(path)
	tok, ok := doc.Find(`input[name="csrf_token"]`).First().Attr("value")
	if !ok || tok == "" {
		b.f.t.Fatalf("%s has no CSRF token", path)
	}
	return tok
}

func (b *browser) post(path string, form url.Values) (*http.Response, *goquery.Document) {
	b.f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := b.c.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer res.Body.Close()
	return res, b.page(path, res.Body)
}

// login signs the browser in and fails the test if it cannot.
func (b *browser) login(email string) {
	b.f.t.Helper()
	res, doc := b.post("/login", url.Values{"email": {email}, "password": {testPassword}, "csrf_token": {b.csrf("/login")}})
	if res.StatusCode != http.StatusSeeOther {
		b.f.t.Fatalf("login %s: status %d: %s", email, res.StatusCode, doc.Find("[data-testid=login-error]").Text())
	}
}

func TestSignInFlow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()

	res, _ := b.get("/")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login?next=") {
		t.Fatalf("anonymous GET /: %d to %q, want a redirect to sign in", res.StatusCode, res.Header.Get("Location"))
	}

	tok := b.csrf("/login")
	res, doc := b.post("/login", url.Values{"email": {"ana@x.io"}, "password": {"wrong password"}, "csrf_token": {tok}})
	if res.StatusCode != http.StatusUnauthorized || doc.Find("[data-testid=login-error]").Length() != 1 {
		t.Fatalf("wrong password: status %d", res.StatusCode)
	}
	if v, _ := doc.Find(`input[name=email]`).Attr("value"); v != "ana@x.io" {
		t.Errorf("the form lost the email: %q", v)
	}

	res, _ = b.post("/login", url.Values{"email": {"ana@x.io"}, "password": {testPassword}})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("login without CSRF token: %d, want 403", res.StatusCode)
	}

	b.login("ana@x.io")
	for _, ck := range b.c.Jar.Cookies(mustURL(f.srv.URL)) {
		if ck.Name == "ch_session" && strings.Contains(ck.Value, "horse") {
			t.Error("session cookie leaks the password")
		}
	}
	res, doc = b.get("/")
	if res.StatusCode != http.StatusOK || strings.TrimSpace(doc.Find("[data-testid=viewer] span").First().Text()) != "ana@x.io" {
		t.Fatalf("signed-in GET /: %d", res.StatusCode)
	}

	res, _ = b.post("/logout", url.Values{})
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("logout without CSRF token: %d, want 403", res.StatusCode)
	}
	res, _ = b.post("/logout", url.Values{"csrf_token": {b.csrf("/")}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	if res, _ = b.get("/"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("after logout GET /: %d, want a redirect", res.StatusCode)
	}
}

func TestSignInIsRateLimited(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	tok := b.csrf("/login")
	var last int
	for range 7 {
		res, _ := b.post("/login", url.Values{"email": {"ana@x.io"}, "password": {"guess guess guess"}, "csrf_token": {tok}})
		last = res.StatusCode
	}
	if last != http.StatusTooManyRequests {
		t.Fatalf("7th failed sign-in: %d, want 429", last)
	}
}

func TestLoginRedirectStaysOnSite(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	res, _ := b.post("/login", url.Values{"email": {"ana@x.io"}, "password": {testPassword}, "next": {"//evil.example/"}, "csrf_token": {b.csrf("/login")}})
	if loc := res.Header.Get("Location"); loc != "/" {
		t.Fatalf("redirect after sign-in to %q, want /", loc)
	}
}

func TestSecurityHeadersAndEscaping(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "us-east", Name: `<script>alert(1)</script>`}); err != nil {
		t.Fatal(err)
	}
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	res, err := b.c.Get(f.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(body), "<script>alert(1)") {
		t.Error("a cluster name is rendered unescaped")
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src") {
		t.Errorf("no Content-Security-Policy: %q", csp)
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no X-Content-Type-Options: nosniff")
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// TestOneClientBehindTheProxyLocksOutOnlyItself: behind a trusted proxy, a client
// that exhausts its sign-in attempts is refused, and others (told apart by the
// proxy's X-Forwarded-For) still sign in; a client talking to the server directly
// cannot escape its limit by making up an X-Forwarded-For.
func TestOneClientBehindTheProxyLocksOutOnlyItself(t *testing.T) {
	t.Parallel()
	_, proxies, _ := net.ParseCIDR("10.0.0.0/8")
	f := newFixtureOn(t, storetest.New(t), web.Config{LoginRate: 3, TrustedProxies: []*net.IPNet{proxies}})
	f.user("ana@x.io", identity.RoleMember, "search")
	csrf := strings.Repeat("c", 43)
	signIn := func(peer, forwarded, password string) int {
		form := url.Values{"email": {"ana@x.io"}, "password": {password}}
		r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		r.RemoteAddr = peer
		if forwarded != "" {
			r.Header.Set("X-Forwarded-For", forwarded)
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("X-CSRF-Token", csrf)
		r.AddCookie(&http.Cookie{Name: "ch_csrf", Value: csrf})
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, r)
		return w.Code
	}
	for range 3 {
		if code := signIn("10.0.0.5:1000", "198.51.100.1", "wrong password"); code != http.StatusUnauthorized {
			t.Fatalf("a wrong password: %d", code)
		}
	}
	if code := signIn("10.0.0.5:1000", "198.51.100.1", testPassword); code != http.StatusTooManyRequests {
		t.Fatalf("the 4th attempt from the locked-out client: %d, want 429", code)
	}
	if code := signIn("10.0.0.5:1000", "198.51.100.2", testPassword); code != http.StatusSeeOther {
		t.Fatalf("another client behind the same proxy: %d, want to sign in", code)
	}
	for i := range 4 {
		code := signIn("203.0.113.9:1000", fmt.Sprintf("198.51.100.%d", 10+i), "wrong password")
		if i == 3 && code != http.StatusTooManyRequests {
			t.Fatalf("a direct client that makes up X-Forwarded-For: %d on its 4th attempt, want 429", code)
		}
	}
}
