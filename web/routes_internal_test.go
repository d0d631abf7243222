package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// publicRoutes answer without signing in.
var publicRoutes = map[string]bool{
	"GET /healthz": true, "GET /livez": true, "GET /readyz": true, "GET /login": true, "POST /login": true, "POST /logout": true,
	"GET /static/*filepath": true, "HEAD /static/*filepath": true, "GET /api/v1/openapi.json": true,
}

// Every route the server registers, except the public ones, refuses a client that
// has not signed in: pages send it to the sign-in page, the API and form posts
// answer 401 or 403. A route added without a role check fails this test.
func TestEveryRouteRefusesAnonymousClients(t *testing.T) {
	t.Parallel()
	s := NewServer(Config{LoginRate: 5, PublicURL: "http://127.0.0.1"}, Services{}, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	routes := s.engine.Routes()
	if len(routes) < 40 {
		t.Fatalf("only %d routes registered", len(routes))
	}
	for _, r := range routes {
		key := r.Method + " " + r.Path
		if publicRoutes[key] {
			continue
		}
		path := r.Path
		for _, seg := range strings.Split(r.Path, "/") {
			if strings.HasPrefix(seg, ":") || strings.HasPrefix(seg, "*") {
				path = strings.Replace(path, seg, "1", 1)
			}
		}
		var req *http.Request
		switch {
		case r.Method == http.MethodGet || r.Method == http.MethodDelete || r.Method == http.MethodHead:
			req = httptest.NewRequest(r.Method, path, nil)
		case strings.HasPrefix(path, "/api/"):
			req = httptest.NewRequest(r.Method, path, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
		default:
			req = httptest.NewRequest(r.Method, path, strings.NewReader("csrf_token=x"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		rec := httptest.NewRecorder()
		s.engine.ServeHTTP(rec, req)
		switch code := rec.Code; {
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
		case code == http.StatusSeeOther || code == http.StatusFound:
			if loc := rec.Header().Get("Location"); !strings.HasPrefix(loc, "/login") {
				t.Errorf("%s: redirects an anonymous client to %q, not to sign in", key, loc)
			}
		default:
			t.Errorf("%s: an anonymous client gets %d", key, code)
		}
	}
}

// The probes answer anyone, whatever credentials they carry, and are not logged
// per request; /readyz reports the readiness check's failure as 503.
func TestProbesAnswerAnyoneUnlogged(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	notReady := errors.New("database unreachable")
	var ready error
	s := NewServer(Config{LoginRate: 5, PublicURL: "http://127.0.0.1", Ready: func(context.Context) error { return ready }},
		Services{}, slog.New(slog.NewTextHandler(&logs, nil)), time.Now)
	probe := func(path string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer stale-token") // never resolved for a probe
		rec := httptest.NewRecorder()
		s.engine.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, path := range []string{"/livez", "/readyz", "/healthz"} {
		if code := probe(path); code != http.StatusOK {
			t.Errorf("%s: %d", path, code)
		}
	}
	if logs.Len() != 0 {
		t.Errorf("probes logged:\n%s", logs.String())
	}
	ready = notReady
	if code := probe("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while not ready: %d", code)
	}
	if code := probe("/livez"); code != http.StatusOK {
		t.Errorf("/livez while not ready: %d", code)
	}
	if !strings.Contains(logs.String(), "/readyz") || !strings.Contains(logs.String(), "status=503") {
		t.Errorf("a failing probe is not logged:\n%s", logs.String())
	}
}

// A request's method is any token a client sends, of any length: the log line clips
// it like the path (1,000 requests with 2,000-letter methods logged 2 MB of them).
func TestLoggedMethodsAreClipped(t *testing.T) {
	t.Parallel()
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(strings.Repeat("A", 2000), "/"+strings.Repeat("p", 500), nil)
	attrs := logAttrs(c)
	for _, a := range attrs {
		if a, ok := a.(slog.Attr); ok && len(a.Value.String()) > maxLoggedPath+40 {
			t.Errorf("%s logged with %d bytes", a.Key, len(a.Value.String()))
		}
		if a, ok := a.(slog.Attr); ok && a.Key == "method" && !strings.HasPrefix(a.Value.String(), strings.Repeat("A", maxLoggedMethod)) {
			t.Errorf("method logged as %q", a.Value.String())
		}
	}
	c.Request = httptest.NewRequest(http.MethodPost, "/", nil)
	if got := logAttrs(c)[1].(slog.Attr).Value.String(); got != "POST" {
		t.Errorf("POST logged as %q", got)
	}
}
