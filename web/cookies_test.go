package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// TestSecureCookiesFollowTheConfigurationNotTheHost reads the pre-session cookie the
// sign-in page sets, with Host headers that would have changed the old decision.
func TestSecureCookiesFollowTheConfigurationNotTheHost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		cfg    web.Config
		host   string
		secure bool
	}{
		{web.Config{Addr: "127.0.0.1:8080"}, "clearhouse.example.com", false},
		{web.Config{Addr: "localhost:8080"}, "clearhouse.example.com", false},
		{web.Config{Addr: "[::1]:8080"}, "clearhouse.example.com", false},
		{web.Config{Addr: "0.0.0.0:8080"}, "localhost:8080", true},
		{web.Config{Addr: ":8080"}, "127.0.0.1:8080", true},
		{web.Config{}, "127.0.0.1", true},
		{web.Config{Addr: "127.0.0.1:8080", PublicURL: "https://clearhouse.example.com"}, "127.0.0.1:8080", true},
		{web.Config{Addr: "0.0.0.0:8080", PublicURL: "http://market.lan:8080"}, "clearhouse.example.com", false},
	}
	for _, tc := range cases {
		s := web.NewServer(tc.cfg, web.Services{Identity: f.id, Market: f.market, Reservations: f.plan, BestEffort: f.be}, slog.New(slog.NewTextHandler(io.Discard, nil)), f.clock.Now)
		r := httptest.NewRequest(http.MethodGet, "/login", nil)
		r.Host = tc.host
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		cookies := w.Result().Cookies()
		if len(cookies) == 0 {
			t.Fatalf("%+v: no cookie", tc.cfg)
		}
		if cookies[0].Secure != tc.secure {
			t.Errorf("listening on %q, public URL %q, Host %q: Secure %v, want %v", tc.cfg.Addr, tc.cfg.PublicURL, tc.host, cookies[0].Secure, tc.secure)
		}
	}
}

// TestHealthzIgnoresCredentials probes /healthz with a stale token, a stale session
// cookie, a malformed Authorization and an unknown proxy user.
func TestHealthzIgnoresCredentials(t *testing.T) {
	t.Parallel()
	f := newFixtureOn(t, storetest.New(t), web.Config{ProxyHeader: "X-Forwarded-Email", TrustedProxies: nil})
	u := f.user("ana@x.io", identity.RoleMember, "search")
	stale := f.token(u)
	if err := f.id.DisableUser(t.Context(), u.ID); err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(*http.Request){
		"stale token":    func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+stale) },
		"unknown token":  func(r *http.Request) { r.Header.Set("Authorization", "Bearer chu_nope") },
		"not a bearer":   func(r *http.Request) { r.Header.Set("Authorization", "Basic YTpi") },
		"stale session":  func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "ch_session", Value: "chs_gone"}) },
		"unknown person": func(r *http.Request) { r.Header.Set("X-Forwarded-Email", "nobody@x.io") },
	} {
		r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		set(r)
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Body.String() != "ok" {
			t.Errorf("/healthz with a %s: %d %q", name, w.Code, w.Body.String())
		}
	}
}
