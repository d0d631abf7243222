package web_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// badInput is one request carrying a NUL byte or invalid UTF-8 somewhere the app
// reads.
type badInput struct {
	name, method, path, body, ctype string
	as                              identity.Role // "" for nobody
	header                          [2]string
}

// badInputs are the places a NUL byte or invalid UTF-8 can reach: the path, the query,
// form fields, JSON strings and keys, and the headers the app reads. On PostgreSQL
// each of them once ended in a 500.
var badInputs = []badInput{
	{name: "path", method: "GET", path: "/finance/teams/se%00arch", as: identity.RoleFinance},
	{name: "path utf-8", method: "GET", path: "/finance/teams/se%ffarch", as: identity.RoleFinance},
	{name: "api path", method: "GET", path: "/api/v1/teams/%00/budget", as: identity.RoleFinance},
	{name: "query", method: "GET", path: "/api/v1/orders?team=se%00arch", as: identity.RoleFinance},
	{name: "query utf-8", method: "GET", path: "/api/v1/orders?team=%c3%28", as: identity.RoleFinance},
	{name: "query key", method: "GET", path: "/api/v1/orders?te%00am=search", as: identity.RoleFinance},
	{name: "reservations query", method: "GET", path: "/api/v1/reservations?team=%00", as: identity.RoleFinance},
	{name: "operate query", method: "GET", path: "/operate/schedule?pool=us-east%2Fcpu%00", as: identity.RoleOperator},
	{name: "login form, signed out", method: "POST", path: "/login", body: "email=ana%00%40x.io&password=x", ctype: "application/x-www-form-urlencoded"},
	{name: "login form utf-8", method: "POST", path: "/login", body: "email=ana%ff%40x.io&password=x", ctype: "application/x-www-form-urlencoded"},
	{name: "grant form", method: "POST", path: "/finance/grants", body: "team=search&amount=1&memo=a%00b", ctype: "application/x-www-form-urlencoded", as: identity.RoleFinance},
	{name: "cluster form", method: "POST", path: "/operate/clusters", body: "id=eu%00&name=x&region=y", ctype: "application/x-www-form-urlencoded", as: identity.RoleOperator},
	{name: "offer form", method: "POST", path: "/orders/offer", body: "pool=us-east%2Fcpu%00&quantity=1&minimum=1", ctype: "application/x-www-form-urlencoded", as: identity.RoleMember},
	{name: "json string", method: "POST", path: "/api/v1/orders", body: `{"team":"search\u0000","bundles":[{"us-east/cpu":1}],"limit":"1"}`, as: identity.RoleMember},
	{name: "json pool key", method: "POST", path: "/api/v1/orders", body: `{"bundles":[{"us-east/cpu\u0000":1}],"limit":"1"}`, as: identity.RoleMember},
	{name: "json raw utf-8", method: "POST", path: "/api/v1/orders", body: "{\"bundles\":[{\"us-east/cpu\xff\":1}],\"limit\":\"1\"}", as: identity.RoleMember},
	{name: "json reservation", method: "POST", path: "/api/v1/reservations/quote", body: `{"value":"1","requests":[{"configuration":{"us-east/cpu":1},"count":1,"duration":"1h\u0000","arrival":"x","deadline":"y"}]}`, as: identity.RoleMember},
	{name: "idempotency key", method: "POST", path: "/api/v1/orders", body: `{"bundles":[{"us-east/cpu":1}],"limit":"1"}`, as: identity.RoleMember, header: [2]string{"Idempotency-Key", "k\xff"}},
	{name: "authorization", method: "GET", path: "/api/v1/market", header: [2]string{"Authorization", "Bearer chu_\xff"}},
	{name: "proxy header", method: "GET", path: "/finance", header: [2]string{"X-Forwarded-Email", "ana\xff@x.io"}},
}

// TestNULAndInvalidUTF8AreRefusedBeforeAnyHandler sends each bad input, on SQLite and
// on PostgreSQL, and wants a 400 that says what was wrong: never a 500.
func TestNULAndInvalidUTF8AreRefusedBeforeAnyHandler(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		_, proxy, _ := net.ParseCIDR("192.0.2.0/24")
		f := newFixtureOn(t, db, web.Config{LoginRate: 1000, ProxyHeader: "X-Forwarded-Email", TrustedProxies: []*net.IPNet{proxy}})
		f.openMarket()
		tokens := map[identity.Role]string{}
		for _, r := range identity.Roles {
			team := ""
			if r.OnTeam() {
				team = "search"
			}
			tokens[r] = f.token(f.user(string(r)+"@x.io", r, team))
		}
		for _, in := range badInputs {
			req := httptest.NewRequest(in.method, in.path, strings.NewReader(in.body))
			req.RemoteAddr = "192.0.2.7:4711"
			if in.ctype != "" {
				req.Header.Set("Content-Type", in.ctype)
			}
			if in.as != "" {
				req.Header.Set("Authorization", "Bearer "+tokens[in.as])
			}
			if in.header[0] != "" {
				req.Header.Set(in.header[0], in.header[1])
			}
			rec := httptest.NewRecorder()
			f.h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("%s: %d, want 400: %.300s", in.name, rec.Code, body)
				continue
			}
			msg := string(body)
			if strings.HasPrefix(in.path, "/api/") {
				var e apiv1.Error
				_ = json.Unmarshal(body, &e)
				msg = e.Error.Message
			}
			if !strings.Contains(msg, "NUL byte") && !strings.Contains(msg, "UTF-8") {
				t.Errorf("%s: the message does not say what was wrong: %.300s", in.name, msg)
			}
		}
	})
}

// countingBody is a request body of n bytes of b, made as it is read, that counts
// how many bytes were read.
type countingBody struct {
	n, read int64
	b       byte
}

func (r *countingBody) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	for i := range k {
		p[i] = r.b
	}
	r.read += k
	return int(k), nil
}

// TestBodiesAreBoundedBeforeTheyAreRead sends bodies too large for their routes,
// declared or chunked, and multipart bodies: each is refused having read at most the
// route's bound, and a multipart body not at all.
func TestBodiesAreBoundedBeforeTheyAreRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("mem@x.io", identity.RoleMember, "search"))
	agent, _, err := f.id.IssueAgentToken(t.Context(), "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	const mb = 1 << 20
	cases := []struct {
		name, path, ctype, token string
		size, declared           int64 // declared -1: chunked
		want                     int
		maxRead                  int64
	}{
		{"300 MB multipart sign-in", "/login", "multipart/form-data; boundary=x", "", 300 * mb, 300 * mb, http.StatusRequestEntityTooLarge, 0},
		{"chunked multipart sign-in", "/login", "multipart/form-data; boundary=x", "", 300 * mb, -1, http.StatusUnsupportedMediaType, 0},
		{"chunked multipart order", "/api/v1/orders", "multipart/form-data; boundary=x", member, 300 * mb, -1, http.StatusUnsupportedMediaType, 0},
		{"chunked large form", "/login", "application/x-www-form-urlencoded", "", 300 * mb, -1, http.StatusRequestEntityTooLarge, 64<<10 + 1},
		{"declared large form", "/orders", "application/x-www-form-urlencoded", member, 65 << 10, 65 << 10, http.StatusRequestEntityTooLarge, 0},
		{"chunked large JSON", "/api/v1/orders", "application/json", member, 300 * mb, -1, http.StatusRequestEntityTooLarge, 64<<10 + 1},
		{"chunked text", "/orders", "text/plain", "", 300 * mb, -1, http.StatusForbidden, 64<<10 + 1},
		// The agent's report route takes up to 1 MiB: 100 KiB passes the bound and is
		// refused as JSON, which it is not.
		{"agent report within its bound", "/api/v1/clusters/us-east/updates", "application/json", agent, 100 << 10, 100 << 10, http.StatusBadRequest, 100 << 10},
		{"agent report over its bound", "/api/v1/clusters/us-east/updates", "application/json", agent, 2 * mb, -1, http.StatusRequestEntityTooLarge, mb + 1},
	}
	for _, tc := range cases {
		body := &countingBody{n: tc.size, b: 'a'}
		req := httptest.NewRequest(http.MethodPost, tc.path, body)
		req.ContentLength = tc.declared
		req.Header.Set("Content-Type", tc.ctype)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("%s: %d, want %d: %.200s", tc.name, rec.Code, tc.want, rec.Body.String())
		}
		if body.read > tc.maxRead {
			t.Errorf("%s: read %d bytes of the body, want at most %d", tc.name, body.read, tc.maxRead)
		}
		if tc.want == http.StatusRequestEntityTooLarge && !strings.Contains(rec.Body.String(), "KiB") {
			t.Errorf("%s: the 413 does not say the bound: %.200s", tc.name, rec.Body.String())
		}
	}
}

// TestEveryJSONBodyRefusesDuplicateAndUnknownKeys sends bodies with a key twice (a
// buy that became a sell of 5 when the last key won), unknown fields and trailing
// data to every route that decodes JSON.
func TestEveryJSONBodyRefusesDuplicateAndUnknownKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("mem@x.io", identity.RoleMember, "search"))
	agent, _, err := f.id.IssueAgentToken(t.Context(), "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	req := `{"configuration":{"us-east/cpu":1},"count":1,"duration":"1h","arrival":"2026-03-02T10:00:00Z","deadline":"2026-03-02T12:00:00Z"}`
	cases := []struct {
		name, token, path, body, want string
	}{
		{"order key twice", member, "/api/v1/orders", `{"bundles":[{"us-east/cpu":5}],"limit":"10","bundles":[{"us-east/cpu":-5}]}`, `body: key "bundles" appears twice`},
		{"pool twice", member, "/api/v1/orders", `{"bundles":[{"us-east/cpu":5,"us-east/cpu":-5}],"limit":"10"}`, `body.bundles[0]: key "us-east/cpu" appears twice`},
		{"order unknown field", member, "/api/v1/orders", `{"bundles":[{"us-east/cpu":5}],"limit":"10","side":"buy"}`, `body: unknown field "side"`},
		{"order wrong type", member, "/api/v1/orders", `{"bundles":[{"us-east/cpu":"5"}],"limit":"10"}`, `must be a whole number`},
		{"order trailing data", member, "/api/v1/orders", `{"bundles":[{"us-east/cpu":5}],"limit":"10"} {}`, `unexpected data after the JSON value`},
		{"order empty", member, "/api/v1/orders", ``, `a JSON object is required`},
		{"reservation key twice", member, "/api/v1/reservations", `{"id":1,"value":"1","value":"2","requests":[` + req + `]}`, `body: key "value" appears twice`},
		{"request key twice", member, "/api/v1/reservations/quote", `{"requests":[` + strings.Replace(req, `"count":1`, `"count":1,"count":9`, 1) + `]}`, `body.requests[0]: key "count" appears twice`},
		{"update key twice", member, "/api/v1/reservations/1/update", `{"requests":[],"requests":[` + req + `]}`, `body: key "requests" appears twice`},
		{"agent report key twice", agent, "/api/v1/clusters/us-east/updates", `{"usage":[],"usage":[]}`, `body: key "usage" appears twice`},
		{"agent report deep key twice", agent, "/api/v1/clusters/us-east/updates", `{"capacity":[{"pool":"us-east/cpu","units":1,"units":2}]}`, `body.capacity[0]: key "units" appears twice`},
		{"agent report unknown field", agent, "/api/v1/clusters/us-east/updates", `{"capacity":[{"pool":"us-east/cpu","unit":1}]}`, `unknown field "unit"`},
	}
	for _, tc := range cases {
		code, body := f.api(tc.token, http.MethodPost, tc.path, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(errorMessage(body), tc.want) {
			t.Errorf("%s: %d %q, want 400 with %q", tc.name, code, errorMessage(body), tc.want)
		}
	}
	if code, body := f.api(member, http.MethodGet, "/api/v1/orders", ""); code != http.StatusOK || len(body["orders"].([]any)) != 0 {
		t.Fatalf("a refused body placed an order: %d %v", code, body)
	}
}

// TestTheCSRFTokenIsReadFromAHeaderOrAURLEncodedFormOnly signs in and signs out with
// the token in a multipart form (refused unread), then in the header.
func TestTheCSRFTokenIsReadFromAHeaderOrAURLEncodedFormOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	tok := b.csrf("/")
	multipart := "--x\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n" + tok + "\r\n--x--\r\n"
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/logout", strings.NewReader(multipart))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("sign out with a multipart form: %d, want 415", res.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPost, f.srv.URL+"/logout", nil)
	req.Header.Set("X-CSRF-Token", tok)
	if res, err = b.c.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign out with the token in X-CSRF-Token: %d, want 303", res.StatusCode)
	}
}
