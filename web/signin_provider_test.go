package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/identity/oidctest"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// tamperer sits between Clearhouse and the provider's token endpoint and, when swap
// is set, replaces the ID token in the answer: a token altered in transit or meant
// for another client.
type tamperer struct {
	mu   sync.Mutex
	swap func(idToken string) string
}

func (tp *tamperer) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	tp.mu.Lock()
	swap := tp.swap
	tp.mu.Unlock()
	if err != nil || swap == nil || !strings.HasSuffix(req.URL.Path, "/oauth/token") {
		return res, err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err == nil {
		if s, ok := m["id_token"].(string); ok {
			m["id_token"] = swap(s)
		}
		body, _ = json.Marshal(m)
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Del("Content-Length")
	return res, nil
}

func (tp *tamperer) set(f func(string) string) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.swap = f
}

// providerFixture is a Clearhouse server signing in through a real OpenID Provider.
type providerFixture struct {
	*fixture
	p        *oidctest.Provider
	redirect string
	tamper   *tamperer
}

var testMapping = identity.GroupMapping{Rules: []identity.GroupRule{
	{Group: "ch-operators", Role: identity.RoleOperator},
	{Group: "ch-finance", Role: identity.RoleFinance},
	{Group: "ml-owners", Role: identity.RoleOwner, Team: "ml"},
	{Group: "ml-members", Role: identity.RoleMember, Team: "ml"},
}}

func newProviderFixture(t *testing.T, db *store.DB, users ...oidctest.User) *providerFixture {
	t.Helper()
	addr := oidctest.FreeAddr(t)
	redirect := "http://" + addr + "/login/oidc/callback"
	p := oidctest.Start(t, redirect, users...)
	m := testMapping
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	tp := &tamperer{}
	f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://" + addr, OIDC: web.OIDCConfig{
		Issuer: p.Issuer, ClientID: oidctest.ClientID, ClientSecret: oidctest.ClientSecret, Scopes: []string{"profile", "email"},
		RedirectURL: redirect, Mapping: m, HTTPClient: &http.Client{Transport: tp}}})
	// The provider's tokens are made by the real clock; the server's starts there too.
	f.clock.Set(time.Now())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: f.h}}
	srv.Start()
	t.Cleanup(srv.Close)
	f.srv = srv
	f.user("ops@x.io", identity.RoleOperator, "") // the break-glass operator, and team ml
	f.user("someone@x.io", identity.RoleMember, "ml")
	return &providerFixture{fixture: f, p: p, redirect: redirect, tamper: tp}
}

// signIn goes through the provider as subject and returns the response to the
// callback, and the callback URL (to replay).
func (pf *providerFixture) signIn(b *browser, subject string) (*http.Response, string) {
	pf.t.Helper()
	cb := oidctest.Authorize(pf.t, b.c, pf.srv.URL+"/login/oidc?next=/help", pf.redirect, subject)
	return pf.callback(b, cb), cb
}

func (pf *providerFixture) callback(b *browser, cb string) *http.Response {
	pf.t.Helper()
	res, err := b.c.Get(cb)
	if err != nil {
		pf.t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res
}

// signedInAs is the email the page at / shows as the viewer, or "" when / sends the
// browser to sign in.
func signedInAs(b *browser) string {
	res, doc := b.get("/")
	if res.StatusCode != http.StatusOK {
		return ""
	}
	return strings.TrimSpace(doc.Find("[data-testid=viewer]").Text())
}

func hasSession(res *http.Response) bool {
	for _, c := range res.Cookies() {
		if c.Name == "ch_session" && c.Value != "" {
			return true
		}
	}
	return false
}

func userByEmail(t *testing.T, f *fixture, email string) identity.User {
	t.Helper()
	u, err := f.id.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var ana = oidctest.User{Subject: "ana", Email: "ana@corp.example", Name: "Ana Lopes", Groups: []string{"everyone", "ml-owners"}}

func TestProviderSignInMapsGroupsAtEverySignIn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		bob := oidctest.User{Subject: "bob", Email: "bob@corp.example", Name: "Bob", Groups: []string{"unknown-group", "ch-finance", "ml-members"}}
		pf := newProviderFixture(t, db, ana, bob)
		b := pf.browser()

		res, _ := pf.signIn(b, "ana")
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/help" || !hasSession(res) {
			t.Fatalf("callback: %d to %q, session %v", res.StatusCode, res.Header.Get("Location"), hasSession(res))
		}
		if who := signedInAs(b); !strings.Contains(who, "Ana Lopes") && !strings.Contains(who, "ana@corp.example") {
			t.Fatalf("signed in as %q", who)
		}
		u := userByEmail(t, pf.fixture, "ana@corp.example")
		if u.Role != identity.RoleOwner || u.TeamID != "ml" || u.AccessSource != identity.SourceProvider || u.AccessGroup != "ml-owners" {
			t.Fatalf("ana: %s of %q from %s %q; want owner of ml from provider ml-owners", u.Role, u.TeamID, u.AccessSource, u.AccessGroup)
		}
		// The owners' page is hers; the operators' is not.
		if res, _ := b.get("/operate/access"); res.StatusCode != http.StatusForbidden {
			t.Fatalf("an owner on /operate/access: %d", res.StatusCode)
		}

		// The first rule that matches wins; unknown groups are ignored.
		bb := pf.browser()
		if res, _ := pf.signIn(bb, "bob"); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("bob: %d %s", res.StatusCode, readBody(res))
		}
		if u := userByEmail(t, pf.fixture, "bob@corp.example"); u.Role != identity.RoleFinance || u.TeamID != "" || u.AccessGroup != "ch-finance" {
			t.Fatalf("bob: %s of %q by %q; want finance by ch-finance", u.Role, u.TeamID, u.AccessGroup)
		}

		// Moved from owners to members at the provider: a member at the next sign-in,
		// and the session opened as an owner ends.
		pf.p.SetGroups("ana", "ml-members")
		b2 := pf.browser()
		if res, _ := pf.signIn(b2, "ana"); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("second sign-in: %d %s", res.StatusCode, readBody(res))
		}
		if u := userByEmail(t, pf.fixture, "ana@corp.example"); u.Role != identity.RoleMember || u.TeamID != "ml" || u.AccessGroup != "ml-members" {
			t.Fatalf("after the move: %s of %q by %q", u.Role, u.TeamID, u.AccessGroup)
		}
		if who := signedInAs(b); who != "" {
			t.Fatalf("the owner's session survived the change to member: %q", who)
		}

		// Removed from every mapped group: a clear page, no session, the account off.
		pf.p.SetGroups("ana", "everyone")
		b3 := pf.browser()
		res, _ = pf.signIn(b3, "ana")
		doc := b3.page("callback", res.Body)
		if res.StatusCode != http.StatusForbidden || hasSession(res) || doc.Find("[data-testid=provider-refused]").Length() != 1 ||
			doc.Find("[data-testid=provider-refused-group]").Text() != "everyone" {
			t.Fatalf("no mapped group: %d, session %v, page %q", res.StatusCode, hasSession(res), doc.Find("main").Text())
		}
		if who := signedInAs(b2); who != "" {
			t.Fatalf("the member's session survived removal from the groups: %q", who)
		}
		if u := userByEmail(t, pf.fixture, "ana@corp.example"); u.DisabledAt == nil || u.AccessSource != identity.SourceRevoked {
			t.Fatalf("removed: disabled %v source %s", u.DisabledAt, u.AccessSource)
		}
		// Back in a group: access again.
		pf.p.SetGroups("ana", "ch-operators")
		b4 := pf.browser()
		if res, _ := pf.signIn(b4, "ana"); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("back in a group: %d %s", res.StatusCode, readBody(res))
		}
		if u := userByEmail(t, pf.fixture, "ana@corp.example"); u.Role != identity.RoleOperator || u.DisabledAt != nil {
			t.Fatalf("back in ch-operators: %s, disabled %v", u.Role, u.DisabledAt)
		}

		// The operators' access page says where each membership came from.
		_, doc = b4.get("/operate/access")
		src := map[string]string{}
		doc.Find("tr[data-testid^=user-]").Each(func(_ int, s *goquery.Selection) {
			src[strings.Fields(s.Find("td").First().Text())[0]] = strings.TrimSpace(s.Find("[data-testid=source]").Text())
		})
		want := map[string]string{"ana@corp.example": "provider group ch-operators", "bob@corp.example": "provider group ch-finance",
			"ops@x.io": "local grant", "someone@x.io": "local grant"}
		for email, w := range want {
			if src[email] != w {
				t.Errorf("access page: %s from %q, want %q (all: %v)", email, src[email], w, src)
			}
		}
	})
}

func readBody(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// tokenFor is a real ID token from the provider for a client, with a nonce, obtained
// outside Clearhouse.
func (pf *providerFixture) tokenFor(clientID, nonce, subject string) string {
	pf.t.Helper()
	ctx := context.Background()
	p, err := oidc.NewProvider(ctx, pf.p.Issuer)
	if err != nil {
		pf.t.Fatal(err)
	}
	conf := oauth2.Config{ClientID: clientID, ClientSecret: oidctest.ClientSecret, Endpoint: p.Endpoint(), RedirectURL: pf.redirect, Scopes: []string{oidc.ScopeOpenID}}
	b := pf.browser()
	cb := oidctest.Authorize(pf.t, b.c, conf.AuthCodeURL("other-state", oidc.Nonce(nonce)), pf.redirect, subject)
	req, _ := http.NewRequest(http.MethodGet, cb, nil)
	tok, err := conf.Exchange(ctx, req.URL.Query().Get("code"))
	if err != nil {
		pf.t.Fatal(err)
	}
	return tok.Extra("id_token").(string)
}

// pendingNonce is the nonce of the one sign-in under way.
func pendingNonce(t *testing.T, f *fixture) string {
	t.Helper()
	var rows []identity.ProviderLogin
	if err := f.db.Read.Find(&rows).Error; err != nil || len(rows) != 1 {
		t.Fatalf("sign-ins under way: %d, %v", len(rows), err)
	}
	return rows[0].Nonce
}

// TestProviderSignInRefusesBadTokens: a token altered in transit, one for another
// audience, an expired one, a replayed state and a state from another browser each
// get a refusal page and no session; nobody is created.
func TestProviderSignInRefusesBadTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pf := newProviderFixture(t, db, ana)
		refused := func(name string, res *http.Response) {
			t.Helper()
			if res.StatusCode != http.StatusUnauthorized || hasSession(res) {
				t.Errorf("%s: %d, session %v; want 401 and none", name, res.StatusCode, hasSession(res))
			}
			if _, err := pf.id.UserByEmail(context.Background(), ana.Email); err == nil {
				t.Errorf("%s: the account was made", name)
			}
		}

		// Tampered: the payload's groups changed, the signature kept.
		pf.tamper.set(func(tok string) string {
			parts := strings.Split(tok, ".")
			payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
			var claims map[string]any
			_ = json.Unmarshal(payload, &claims)
			claims["groups"] = []string{"ch-operators"}
			payload, _ = json.Marshal(claims)
			parts[1] = base64.RawURLEncoding.EncodeToString(payload)
			return strings.Join(parts, ".")
		})
		b := pf.browser()
		res, _ := pf.signIn(b, "ana")
		refused("tampered", res)

		// Another audience: a real token for the other client with this sign-in's nonce.
		b = pf.browser()
		cb := oidctest.Authorize(t, b.c, pf.srv.URL+"/login/oidc", pf.redirect, "ana")
		other := pf.tokenFor(oidctest.OtherClientID, pendingNonce(t, pf.fixture), "ana")
		pf.tamper.set(func(string) string { return other })
		refused("wrong audience", pf.callback(b, cb))

		// A token of another sign-in: right audience, another nonce.
		b = pf.browser()
		cb = oidctest.Authorize(t, b.c, pf.srv.URL+"/login/oidc", pf.redirect, "ana")
		stolen := pf.tokenFor(oidctest.ClientID, "another-sign-in", "ana")
		pf.tamper.set(func(string) string { return stolen })
		refused("another nonce", pf.callback(b, cb))

		// Expired: the server's clock is past the token's expiry (the provider's tokens last an hour).
		pf.tamper.set(nil)
		pf.clock.Advance(2 * time.Hour)
		b = pf.browser()
		res, _ = pf.signIn(b, "ana")
		refused("expired", res)

		// Replayed state: the first use signs in, the second is refused.
		pf.clock.Set(time.Now())
		b = pf.browser()
		res, cb = pf.signIn(b, "ana")
		if res.StatusCode != http.StatusSeeOther || !hasSession(res) {
			t.Fatalf("a good sign-in: %d %s", res.StatusCode, readBody(res))
		}
		replay := pf.callback(b, cb)
		if replay.StatusCode != http.StatusUnauthorized || hasSession(replay) {
			t.Errorf("replayed state: %d, session %v", replay.StatusCode, hasSession(replay))
		}

		// A state started in another browser (login CSRF): refused, and the row stays for
		// the browser that started it.
		b = pf.browser()
		cb = oidctest.Authorize(t, b.c, pf.srv.URL+"/login/oidc", pf.redirect, "ana")
		if res := pf.callback(pf.browser(), cb); res.StatusCode != http.StatusUnauthorized || hasSession(res) {
			t.Errorf("another browser's state: %d, session %v", res.StatusCode, hasSession(res))
		}
		if res := pf.callback(b, cb); res.StatusCode != http.StatusSeeOther {
			t.Errorf("the starting browser after another tried its state: %d", res.StatusCode)
		}
	})
}

// With passwords off, the right password signs nobody in and the page has no password form.
func TestPasswordSignInCanBeTurnedOff(t *testing.T) {
	f := newFixtureOn(t, storetest.New(t), web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1", NoPasswordSignIn: true,
		OIDC: web.OIDCConfig{Issuer: "http://127.0.0.1:1/", ClientID: "c", ClientSecret: "s", RedirectURL: "http://127.0.0.1/login/oidc/callback", Mapping: testMapping}})
	f.user("ops@x.io", identity.RoleOperator, "")
	b := f.browser()
	_, doc := b.get("/login")
	if doc.Find("[data-testid=login-submit]").Length() != 0 || doc.Find("[data-testid=login-provider]").Length() != 1 {
		t.Fatalf("login page: password form %d, provider link %d", doc.Find("[data-testid=login-submit]").Length(), doc.Find("[data-testid=login-provider]").Length())
	}
	var csrf string
	for _, c := range b.c.Jar.Cookies(mustURL(f.srv.URL)) {
		if c.Name == "ch_csrf" {
			csrf = c.Value
		}
	}
	res, doc := b.post("/login", url.Values{"email": {"ops@x.io"}, "password": {testPassword}, "csrf_token": {csrf}})
	if res.StatusCode != http.StatusForbidden || hasSession(res) || !strings.Contains(doc.Text(), "password is turned off") {
		t.Fatalf("password sign-in while off: %d, session %v: %s", res.StatusCode, hasSession(res), doc.Find("main").Text())
	}
	// An unreachable provider is a page that says so, not a 500.
	if res, doc := b.get("/login/oidc"); res.StatusCode != http.StatusBadGateway || doc.Find("[data-testid=provider-refused]").Length() != 1 {
		t.Fatalf("unreachable provider: %d", res.StatusCode)
	}
}
