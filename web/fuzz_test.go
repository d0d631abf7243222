package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// The fuzz targets send arbitrary bodies and forms to every route that decodes JSON
// and every HTML form, through the whole server on a real database (PostgreSQL when
// CLEARHOUSE_TEST_POSTGRES is set, else SQLite), and fail on any 5xx: a panic is
// one, since the recovery middleware answers it with a 500. Their seeds run with
// every `go test`; `go test -run '^$' -fuzz '^FuzzName$' -fuzztime 30s ./web/`
// explores further.

// fuzzMarket is a fixture with an open market and a token for every role and for a
// cluster agent.
type fuzzMarket struct {
	*fixture
	tokens map[identity.Role]string
	agent  string
}

func newFuzzMarket(f *testing.F) *fuzzMarket {
	var db *store.DB
	if os.Getenv(storetest.PostgresEnv) != "" {
		db, _ = storetest.NewPostgres(f)
	} else {
		db = storetest.New(f)
	}
	fx := newFixtureOn(f, db, web.Config{LoginRate: 1 << 30, LoginRatePerAddress: 1 << 30, PublicURL: "http://127.0.0.1"})
	fx.openMarket()
	m := &fuzzMarket{fixture: fx, tokens: map[identity.Role]string{}}
	for _, r := range identity.Roles {
		team := ""
		if r.OnTeam() {
			team = "search"
		}
		m.tokens[r] = fx.token(fx.user(string(r)+"@x.io", r, team))
	}
	agent, _, err := fx.id.IssueAgentToken(f.Context(), "us-east", "agent")
	if err != nil {
		f.Fatal(err)
	}
	m.agent = agent
	return m
}

// send makes one request in-process and fails the test on a 5xx. A GET takes the
// input as its raw query; anything else as its body.
func (m *fuzzMarket) send(t *testing.T, method, path, token, ctype, input string, header ...string) int {
	t.Helper()
	var req *http.Request
	if method == http.MethodGet {
		req = httptest.NewRequest(method, path, nil)
		req.URL.RawQuery = input
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(input))
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	m.h.ServeHTTP(w, req)
	if w.Code >= 500 {
		t.Fatalf("%s %s with %q: %d: %.500s", method, path, input, w.Code, w.Body.String())
	}
	return w.Code
}

// route is one form route a fuzz target posts to, as a role.
type route struct {
	method, path string
	as           identity.Role
}

// fuzzForms posts (or, for GET, queries) arbitrary URL-encoded forms to the routes,
// the first byte of the input choosing the route.
func fuzzForms(f *testing.F, routes []route, seeds ...url.Values) {
	m := newFuzzMarket(f)
	for i, s := range seeds {
		f.Add(uint8(i), s.Encode())
	}
	f.Add(uint8(0), "a=%00&b=%ff")
	f.Add(uint8(1), "=&&=;%zz&"+strings.Repeat("x", 70<<10))
	f.Fuzz(func(t *testing.T, which uint8, form string) {
		r := routes[int(which)%len(routes)]
		m.send(t, r.method, r.path, m.tokens[r.as], "application/x-www-form-urlencoded", form)
	})
}

func FuzzBidForm(f *testing.F) {
	fuzzForms(f, []route{{"POST", "/orders", identity.RoleMember}, {"GET", "/orders/new", identity.RoleOwner}},
		url.Values{"q.cpu": {"10"}, "cluster": {"us-east"}, "limit_mode": {"one"}, "limit": {"20"}},
		url.Values{"q.cpu": {"10"}, "cluster": {"us-east"}, "step": {"2"}, "limit_mode": {"each"}, "limit.us-east": {"2,000"}},
		url.Values{"q.cpu": {"-9223372036854775808"}, "cluster": {"us-east", "eu-west"}, "limit": {"1e400"}})
}

func FuzzOfferForm(f *testing.F) {
	fuzzForms(f, []route{{"POST", "/orders/offer", identity.RoleOwner}, {"POST", "/orders/1/withdraw", identity.RoleMember}},
		url.Values{"pool": {"us-east/cpu"}, "quantity": {"5"}, "minimum": {"1.50"}},
		url.Values{"pool": {"us-east/cpu"}, "quantity": {"9223372036854775807"}, "minimum": {"-1"}})
}

func FuzzReservationForm(f *testing.F) {
	fuzzForms(f, []route{{"POST", "/reservations", identity.RoleMember}, {"POST", "/reservations/1/cancel", identity.RoleMember}},
		url.Values{"cluster": {"us-east"}, "u.cpu": {"2"}, "count": {"5"}, "duration": {"1h"}, "arrival": {"2026-03-02T09:00"},
			"deadline": {"2026-03-02T15:00"}, "value": {"40"}, "action": {"quote"}},
		url.Values{"cluster": {"us-east"}, "u.cpu": {"1"}, "count": {"1"}, "duration": {"9999999h"}, "arrival": {"0001-01-01T00:00"},
			"deadline": {"9999-12-31T23:59"}, "value": {"1"}})
}

func FuzzTeamForms(f *testing.F) {
	fuzzForms(f, []route{{"POST", "/team/threshold", identity.RoleOwner}, {"POST", "/approvals/1", identity.RoleOwner},
		{"GET", "/team", identity.RoleMember}, {"GET", "/team/statement.csv", identity.RoleMember}},
		url.Values{"threshold": {"1,000"}},
		url.Values{"decision": {"approve"}},
		url.Values{"from": {"2026-01-01"}, "to": {"2026-03-01"}},
		url.Values{"from": {"9999-12-31"}, "to": {"0001-01-01"}})
}

func FuzzFinanceForms(f *testing.F) {
	fuzzForms(f, []route{{"POST", "/finance/grants", identity.RoleFinance}, {"GET", "/finance/journal.csv", identity.RoleFinance},
		{"GET", "/finance/teams/search", identity.RoleFinance}},
		url.Values{"team": {"search"}, "amount": {"100"}, "memo": {"=1+1"}},
		url.Values{"from": {"2026-01-01"}, "to": {"2026-12-31"}},
		url.Values{"team": {"search"}, "amount": {"-99999999999999"}, "memo": {strings.Repeat("m", 300)}})
}

func FuzzOperateForms(f *testing.F) {
	fuzzForms(f, []route{{"POST", "/operate/clusters", identity.RoleOperator}, {"POST", "/operate/pools", identity.RoleOperator},
		{"POST", "/operate/pools/us-east/cpu", identity.RoleOperator}, {"POST", "/operate/curves/standard", identity.RoleOperator},
		{"POST", "/operate/auctions", identity.RoleOperator}, {"POST", "/operate/schedule/us-east/cpu", identity.RoleOperator},
		{"GET", "/operate/curves/standard", identity.RoleOperator}, {"GET", "/operate/schedule", identity.RoleOperator},
		{"POST", "/operate/access/users/1/disable", identity.RoleOperator}},
		url.Values{"id": {"eu-west"}, "name": {"EU West"}, "region": {"eu"}},
		url.Values{"cluster": {"us-east"}, "resource": {"ram"}, "unit": {"GiB"}, "capacity": {"400"}, "unit_cost": {"0.01"}, "utilization": {"0.5"}, "curve": {"standard"}},
		url.Values{"unit": {"core"}, "capacity": {"-1"}, "unit_cost": {"NaN"}, "utilization": {"1e308"}, "curve": {"standard"}},
		url.Values{"name": {"Standard"}, "kind": {"points"}, "points": {"0 0.5\n0.8 1\n1 4"}},
		url.Values{"opens": {"2026-03-03T09:00"}, "closes": {"2026-03-03T10:00"}, "final": {"10"}},
		url.Values{"algorithm": {"greedy"}, "predictor": {"load"}, "unit_price": {"0.02"}},
		url.Values{"kind": {"parametric"}, "k": {"Inf"}, "gamma": {"-0"}, "threshold": {"2"}},
		url.Values{"pool": {"us-east/cpu"}})
}

func FuzzLoginForm(f *testing.F) {
	m := newFuzzMarket(f)
	f.Add(url.Values{"email": {"member@x.io"}, "password": {testPassword}, "next": {"/orders"}}.Encode())
	f.Add(url.Values{"email": {strings.Repeat("e", 300)}, "password": {strings.Repeat("p", 100)}, "next": {"//evil.example"}}.Encode())
	f.Add("email=%00&password=%ff")
	csrf := strings.Repeat("c", 43)
	f.Fuzz(func(t *testing.T, form string) {
		m.send(t, "POST", "/login", "", "application/x-www-form-urlencoded", form, "X-CSRF-Token", csrf, "Cookie", "ch_csrf="+csrf)
	})
}

// orderSeeds are bodies of POST /api/v1/orders, good and bad.
var orderSeeds = []string{
	`{"bundles":[{"us-east/cpu":10}],"limit":"120.50"}`,
	`{"bundles":[{"us-east/cpu":10},{"us-east/cpu":5}],"limits":["100","60"]}`,
	`{"bundles":[{"us-east/cpu":-5}],"limit":"-1"}`,
	`{"bundles":[{"us-east/cpu":5}],"limit":"10","bundles":[{"us-east/cpu":-5}]}`,
	`{"bundles":[{"us-east/cpu\u0000":1}],"limit":"1"}`,
	`{"team":"ads","bundles":[{"us-east/cpu":9223372036854775807}],"limit":"99999999999999999999"}`,
	`{"bundles":[],"limit":null}`,
	`[`, `{}`, `null`, `""`,
}

func FuzzAPIOrderBody(f *testing.F) {
	m := newFuzzMarket(f)
	for _, s := range orderSeeds {
		f.Add(s, "")
	}
	f.Add(orderSeeds[0], "key-1")
	f.Add(orderSeeds[1], "key-1")
	f.Add(orderSeeds[0], "k\xff")
	f.Fuzz(func(t *testing.T, body, key string) {
		var header []string
		if key != "" {
			header = []string{"Idempotency-Key", key}
		}
		m.send(t, "POST", "/api/v1/orders", m.tokens[identity.RoleMember], "application/json", body, header...)
	})
}

func FuzzAPIReservationBody(f *testing.F) {
	m := newFuzzMarket(f)
	req := `{"configuration":{"us-east/cpu":1},"count":2,"duration":"1h","arrival":"2026-03-02T09:00:00Z","deadline":"2026-03-02T15:00:00Z"}`
	for i, s := range []string{
		`{"value":"40.00","requests":[` + req + `]}`,
		`{"id":1,"value":"40.00","requests":[` + req + `]}`,
		`{"id":1,"value":40,"requests":[` + req + `,` + req + `]}`,
		`{"value":"1","requests":[{"configuration":{"us-east/cpu":-1},"count":-2,"duration":"-1h","arrival":"9999-12-31T23:59:59Z","deadline":"0001-01-01T00:00:00Z"}]}`,
		`{"value":{"x":1},"requests":null}`,
		`{"id":-1}`,
	} {
		f.Add(uint8(i), s)
	}
	paths := []string{"/api/v1/reservations/quote", "/api/v1/reservations", "/api/v1/reservations/1/update", "/api/v1/reservations/new"}
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		m.send(t, "POST", paths[int(which)%len(paths)], m.tokens[identity.RoleOwner], "application/json", body)
	})
}

func FuzzAPIAgentReport(f *testing.F) {
	m := newFuzzMarket(f)
	for _, s := range []string{
		`{"capacity":[{"pool":"us-east/cpu","from":"2026-03-02T09:00:00Z","to":"2026-03-02T12:00:00Z","units":80}]}`,
		`{"ends":[{"reservation":1,"request":0,"at":"2026-03-02T09:30:00Z","failed":true}],"usage":[{"reservation":1,"request":0,"pool":"us-east/cpu","units":2}]}`,
		`{"waiting":[{"reservation":1,"request":0,"tasks":3}]}`,
		`{"capacity":[{"pool":"us-east/cpu","from":"0001-01-01T00:00:00Z","to":"9999-12-31T00:00:00Z","units":9223372036854775807}]}`,
		`{"capacity":[{"pool":"eu-west/cpu","units":-1}],"ends":[{"reservation":-1,"request":-1}]}`,
		`{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		m.send(t, "POST", "/api/v1/clusters/us-east/updates", m.agent, "application/json", body)
	})
}
