package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// api calls the JSON API with a bearer token and decodes the answer.
func (f *fixture) api(token, method, path, body string) (int, map[string]any) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return res.StatusCode, out
}

func (f *fixture) token(u identity.User) string {
	f.t.Helper()
	tok, _, err := f.id.IssueToken(context.Background(), u.ID, "test")
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

// definition is a one-request definition in JSON, starting at the clock's now.
func (f *fixture) definition(id int64, units int, dur string, from, to time.Duration, value string) string {
	now := f.clock.Now()
	idPart := ""
	if id > 0 {
		idPart = fmt.Sprintf(`"id": %d, `, id)
	}
	return fmt.Sprintf(`{%s"value": %s, "requests": [{"configuration": {"us-east/cpu": 1}, "count": %d, "duration": %q, "arrival": %q, "deadline": %q}]}`,
		idPart, value, units, dur, now.Add(from).Format(time.RFC3339), now.Add(to).Format(time.RFC3339))
}

func errorMessage(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func TestTheReservationAPIFollowsYARNsConventions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	code, body := f.api(member, "POST", "/api/v1/reservations/new", "")
	if code != http.StatusCreated {
		t.Fatalf("new: %d %v", code, body)
	}
	id := int64(body["id"].(float64))

	code, quote := f.api(member, "POST", "/api/v1/reservations/quote", f.definition(0, 10, "1h", 0, 2*time.Hour, `"1"`))
	if code != http.StatusOK || quote["feasible"] != true || quote["price"] == "" {
		t.Fatalf("quote: %d %v", code, quote)
	}
	def := f.definition(id, 10, "1h", 0, 2*time.Hour, `"50.00"`)
	code, first := f.api(member, "POST", "/api/v1/reservations", def)
	if code != http.StatusCreated || first["status"] != "accepted" || first["price"] != quote["price"] {
		t.Fatalf("submit: %d %v (quoted %v)", code, first, quote["price"])
	}
	if code, again := f.api(member, "POST", "/api/v1/reservations", def); code != http.StatusCreated || again["price"] != first["price"] {
		t.Fatalf("the same definition again: %d %v", code, again)
	}
	if code, _ := f.api(member, "POST", "/api/v1/reservations", f.definition(id, 11, "1h", 0, 2*time.Hour, `"50.00"`)); code != http.StatusConflict {
		t.Fatalf("another definition under the id: %d", code)
	}
	bal, _ := f.market.Ledger().Balance(context.Background(), ledger.TeamAccount("search"))
	if price, _ := ledger.ParseMoney(first["price"].(string)); bal.Held != price || price <= 0 {
		t.Fatalf("held %s for a reservation priced %v", bal.Held, first["price"])
	}

	// An update that cannot be honoured leaves the old one standing.
	code, body = f.api(member, "POST", fmt.Sprintf("/api/v1/reservations/%d/update", id), f.definition(0, 1000, "1h", 0, 2*time.Hour, `"50.00"`))
	if code != http.StatusUnprocessableEntity || !strings.Contains(errorMessage(body), "stands as it was") {
		t.Fatalf("an update that cannot be honoured: %d %v", code, body)
	}
	code, body = f.api(member, "GET", fmt.Sprintf("/api/v1/reservations/%d", id), "")
	if code != http.StatusOK || body["price"] != first["price"] || body["status"] != "accepted" {
		t.Fatalf("after the refused update: %d %v", code, body)
	}
	code, body = f.api(member, "POST", fmt.Sprintf("/api/v1/reservations/%d/update", id), f.definition(0, 20, "30m", 0, 2*time.Hour, `"50.00"`))
	if code != http.StatusOK || body["requests"].([]any)[0].(map[string]any)["count"] != float64(20) {
		t.Fatalf("an update that fits: %d %v", code, body)
	}

	// Listing: a team sees its own; another team's member sees none of them.
	code, list := f.api(member, "GET", "/api/v1/reservations?team=search&from="+url.QueryEscape(f.clock.Now().Format(time.RFC3339)), "")
	if code != http.StatusOK || len(list["reservations"].([]any)) != 1 {
		t.Fatalf("list: %d %v", code, list)
	}
	if _, err := f.market.AddTeam(context.Background(), exchange.NewTeam{ID: "ads"}); err != nil {
		t.Fatal(err)
	}
	other := f.token(f.user("bob@x.io", identity.RoleMember, "ads"))
	if code, _ := f.api(other, "GET", "/api/v1/reservations?team=search", ""); code != http.StatusForbidden {
		t.Fatalf("another team's list: %d", code)
	}
	if code, _ := f.api(other, "GET", fmt.Sprintf("/api/v1/reservations/%d", id), ""); code != http.StatusNotFound {
		t.Fatalf("another team's reservation: %d", code)
	}
	if code, _ := f.api(other, "DELETE", fmt.Sprintf("/api/v1/reservations/%d", id), ""); code != http.StatusNotFound {
		t.Fatalf("another team cancelled it: %d", code)
	}
	finance := f.token(f.user("fin@x.io", identity.RoleFinance, ""))
	if code, list := f.api(finance, "GET", "/api/v1/reservations?team=search", ""); code != http.StatusOK || len(list["reservations"].([]any)) != 1 {
		t.Fatalf("finance reads every team's: %d", code)
	}
	if code, _ := f.api(finance, "POST", "/api/v1/reservations/new", ""); code != http.StatusForbidden {
		t.Fatalf("finance made a reservation: %d", code)
	}

	code, body = f.api(member, "DELETE", fmt.Sprintf("/api/v1/reservations/%d", id), "")
	if code != http.StatusOK || body["status"] != "cancelled" {
		t.Fatalf("delete: %d %v", code, body)
	}
	bal, _ = f.market.Ledger().Balance(context.Background(), ledger.TeamAccount("search"))
	if bal.Held != 0 {
		t.Fatalf("a cancelled reservation still holds %s", bal.Held)
	}
}

func TestABadDefinitionGetsA400NamingTheField(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	now := f.clock.Now()
	at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
	req := func(cfg, dur, arrival, deadline string) string {
		return fmt.Sprintf(`{"configuration": %s, "count": 1, "duration": %q, "arrival": %q, "deadline": %q}`, cfg, dur, arrival, deadline)
	}
	ok := req(`{"us-east/cpu": 1}`, "1h", at(0), at(2*time.Hour))
	for field, def := range map[string]string{
		"requests[0].deadline":      `{"value": "5", "requests": [` + req(`{"us-east/cpu": 1}`, "1h", at(2*time.Hour), at(time.Hour)) + `]}`,
		"requests[0].duration":      `{"value": "5", "requests": [` + req(`{"us-east/cpu": 1}`, "3h", at(0), at(2*time.Hour)) + `]}`,
		"requests[0].configuration": `{"value": "5", "requests": [` + req(`{"us-east/cpu": 1, "eu-west/cpu": 1}`, "1h", at(0), at(2*time.Hour)) + `]}`,
		"requests[0].deadline ":     `{"value": "5", "requests": [` + req(`{"us-east/cpu": 1}`, "1h", at(0), at(20*24*time.Hour)) + `]}`,
		"value":                     `{"value": "-5", "requests": [` + ok + `]}`,
		"value ":                    `{"value": "five", "requests": [` + ok + `]}`,
		"requests[0].arrival":       `{"value": "5", "requests": [` + req(`{"us-east/cpu": 1}`, "1h", "tomorrow", at(2*time.Hour)) + `]}`,
	} {
		_, body := f.api(member, "POST", "/api/v1/reservations/new", "")
		id := int(body["id"].(float64))
		withID := strings.Replace(def, "{", fmt.Sprintf(`{"id": %d, `, id), 1)
		code, body := f.api(member, "POST", "/api/v1/reservations", withID)
		if code != http.StatusBadRequest || !strings.HasPrefix(errorMessage(body), strings.TrimSpace(field)+":") {
			t.Errorf("%s: %d %q", field, code, errorMessage(body))
		}
	}
	code, list := f.api(member, "GET", "/api/v1/reservations", "")
	if code != http.StatusOK || len(list["reservations"].([]any)) != 0 {
		t.Fatalf("bad definitions left reservations: %v", list)
	}
}

func TestAgentTokensReachOnlyTheirClustersRoutes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	if _, err := f.market.AddCluster(ctx, exchange.Cluster{ID: "eu-west"}); err != nil {
		t.Fatal(err)
	}
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	member := f.user("ana@x.io", identity.RoleMember, "search")
	v, err := f.plan.Reserve(ctx, member, fleet.Definition{Value: 5 * ledger.Dollar, Requests: []fleet.RequestSpec{{
		Configuration: map[string]int64{"us-east/cpu": 2}, Count: 3, Duration: time.Hour, Arrival: f.clock.Now(), Deadline: f.clock.Now().Add(2 * time.Hour)}}})
	if err != nil || v.Status != fleet.ReservationAccepted {
		t.Fatalf("reserve: %+v %v", v.Reservation, err)
	}
	code, alloc := f.api(agent, "GET", "/api/v1/clusters/us-east/allocation", "")
	running, _ := alloc["running"].([]any)
	if code != http.StatusOK || len(running) != 1 || running[0].(map[string]any)["units"] != float64(3) {
		t.Fatalf("allocation: %d %v", code, alloc)
	}
	update := fmt.Sprintf(`{"usage": [{"reservation": %d, "request": 0, "pool": "us-east/cpu", "units": 5}]}`, v.ID)
	if code, body := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", update); code != http.StatusOK {
		t.Fatalf("updates: %d %v", code, body)
	}
	if got, _ := f.plan.Reservation(ctx, v.ID); got.Requests[0].UsageByPool()["us-east/cpu"] != 5 {
		t.Fatal("the reported usage was not recorded")
	}
	memberTok, operatorTok := f.token(member), f.token(f.user("op@x.io", identity.RoleOperator, ""))
	for _, c := range []struct {
		token, method, path, body string
		want                      int
	}{
		{agent, "GET", "/api/v1/clusters/eu-west/allocation", "", http.StatusForbidden},
		{agent, "POST", "/api/v1/clusters/eu-west/updates", `{}`, http.StatusForbidden},
		{agent, "GET", "/api/v1/market", "", http.StatusUnauthorized},
		{agent, "GET", "/api/v1/reservations", "", http.StatusUnauthorized},
		{agent, "POST", "/api/v1/reservations/new", "", http.StatusUnauthorized},
		{memberTok, "GET", "/api/v1/clusters/us-east/allocation", "", http.StatusForbidden},
		{memberTok, "POST", "/api/v1/clusters/us-east/updates", `{}`, http.StatusForbidden},
		{operatorTok, "GET", "/api/v1/clusters/us-east/allocation", "", http.StatusOK},
		{operatorTok, "POST", "/api/v1/clusters/us-east/updates", `{}`, http.StatusForbidden},
		{"", "GET", "/api/v1/clusters/us-east/allocation", "", http.StatusUnauthorized},
		// A report about another cluster's pool changes nothing.
		{agent, "POST", "/api/v1/clusters/us-east/updates", `{"capacity": [{"pool": "eu-west/cpu", "from": "2026-03-02T09:00:00Z", "to": "2026-03-02T10:00:00Z", "units": 0}]}`, http.StatusBadRequest},
	} {
		if code, body := f.api(c.token, c.method, c.path, c.body); code != c.want {
			t.Errorf("%s %s: %d, want %d (%v)", c.method, c.path, code, c.want, body)
		}
	}
	var changes int64
	f.db.Read.Table("capacity_changes").Count(&changes)
	if changes != 0 {
		t.Fatal("a refused report recorded a capacity change")
	}
}

func TestTheReservationPagesQuoteReserveAndCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	res, doc := b.get("/reservations")
	if res.StatusCode != http.StatusOK || doc.Find("[data-testid=reservation-form]").Length() != 1 || doc.Find("[data-testid=no-reservations]").Length() != 1 {
		t.Fatalf("reservations page: %d", res.StatusCode)
	}
	tok := b.csrf("/reservations")
	now := f.clock.Now()
	form := url.Values{"csrf_token": {tok}, "cluster": {"us-east"}, "u.cpu": {"2"}, "count": {"5"}, "duration": {"1h"},
		"arrival": {now.Format("2006-01-02T15:04")}, "deadline": {now.Add(3 * time.Hour).Format("2006-01-02T15:04")}, "value": {"20"}, "action": {"quote"}}
	res, doc = b.post("/reservations", form)
	if res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=quote]").Text(), "$") {
		t.Fatalf("quote: %d %q", res.StatusCode, doc.Find("[data-testid=quote]").Text())
	}
	quoted := quoteOf(doc)
	if n, _ := f.plan.Reservations(context.Background(), fleet.ReservationFilter{}); len(n) != 0 {
		t.Fatal("a quote made a reservation")
	}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("action", "reserve")
	bad.Set("duration", "5h")
	res, doc = b.post("/reservations", bad)
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-duration]").Length() != 1 {
		t.Fatalf("a job longer than its window: %d", res.StatusCode)
	}
	form.Set("action", "reserve")
	form.Set("quote", quoted)
	res, _ = b.post("/reservations", form)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("reserve: %d", res.StatusCode)
	}
	res, doc = b.get("/reservations")
	row := doc.Find("tr[data-testid^=reservation-]")
	if res.StatusCode != http.StatusOK || row.Length() != 1 || row.Find("[data-testid=phase]").Text() != "running" ||
		doc.Find("[data-testid=timeline-us-east\\/cpu] [data-testid=timeline-row]").Length() != 1 {
		t.Fatalf("after reserving: %d rows %d", res.StatusCode, row.Length())
	}
	cancel, _ := row.Find("form").Attr("action")
	res, _ = b.confirmThrough(cancel, url.Values{"csrf_token": {tok}}, func() {
		if _, doc := b.get("/reservations"); doc.Find("tr[data-testid^=reservation-] [data-testid=phase]").Text() != "running" {
			t.Fatal("asking to cancel changed the reservation")
		}
	})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %d", res.StatusCode)
	}
	_, doc = b.get("/reservations")
	if got := doc.Find("tr[data-testid^=reservation-] [data-testid=phase]").Text(); got != "cancelled" {
		t.Fatalf("after cancelling: %q", got)
	}
}

func TestOperatorsSetAPoolsPricingAndSeeItsPlan(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("op@x.io")
	res, doc := b.get("/operate/schedule")
	if res.StatusCode != http.StatusOK || doc.Find("[data-testid=schedule-us-east\\/cpu] svg.chart").Length() != 1 || doc.Find("[data-testid=no-at-risk]").Length() != 1 {
		t.Fatalf("schedule page: %d", res.StatusCode)
	}
	tok := b.csrf("/operate/schedule")
	res, doc = b.post("/operate/schedule/us-east/cpu", url.Values{"csrf_token": {tok}, "algorithm": {"greedy"}, "predictor": {"load"}, "unit_price": {"-1"}})
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-unit_price]").Length() != 1 {
		t.Fatalf("a negative unit price: %d", res.StatusCode)
	}
	res, _ = b.post("/operate/schedule/us-east/cpu", url.Values{"csrf_token": {tok}, "algorithm": {"greedy"}, "predictor": {"load"}, "unit_price": {"0.02"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("save policy: %d", res.StatusCode)
	}
	pols, _ := f.plan.Policies(context.Background())
	if p := pols["us-east/cpu"]; p.Algorithm != "greedy" || p.Predictor != "load" || p.UnitPrice != 20_000 {
		t.Fatalf("policy: %+v", p)
	}
}

// Cancelling a reservation asks for confirmation only for one of the viewer's team:
// another team's reservation, or an id that does not exist, is not found before any
// page (before issue 36 any id got "Cancel reservation #N?"), and nothing changes.
func TestCancellingAnotherTeamsReservationIsNotFoundBeforeConfirming(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	code, body := f.api(member, "POST", "/api/v1/reservations/new", "")
	if code != http.StatusCreated {
		t.Fatalf("new: %d %v", code, body)
	}
	id := int64(body["id"].(float64))
	if code, body := f.api(member, "POST", "/api/v1/reservations", f.definition(id, 10, "1h", 0, 2*time.Hour, `"50.00"`)); code != http.StatusCreated {
		t.Fatalf("submit: %d %v", code, body)
	}
	if _, err := f.market.AddTeam(context.Background(), exchange.NewTeam{ID: "ads"}); err != nil {
		t.Fatal(err)
	}
	f.user("bob@x.io", identity.RoleMember, "ads")
	bob := f.browser()
	bob.login("bob@x.io")
	tok := bob.csrf("/reservations")
	for _, path := range []string{fmt.Sprintf("/reservations/%d/cancel", id), "/reservations/987654/cancel"} {
		res, doc := bob.post(path, url.Values{"csrf_token": {tok}})
		if res.StatusCode != http.StatusNotFound || doc.Find("[data-testid=confirm]").Length() != 0 {
			t.Errorf("POST %s by another team: %d, confirmation page %d", path, res.StatusCode, doc.Find("[data-testid=confirm]").Length())
		}
		res, _ = bob.post(path, url.Values{"csrf_token": {tok}, "confirm": {"yes"}})
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s confirmed by another team: %d", path, res.StatusCode)
		}
	}
	if code, v := f.api(member, "GET", fmt.Sprintf("/api/v1/reservations/%d", id), ""); code != http.StatusOK || v["status"] != "accepted" {
		t.Fatalf("after another team's attempts: %d %v", code, v)
	}
	ana := f.browser()
	ana.login("ana@x.io")
	if res, doc := ana.post(fmt.Sprintf("/reservations/%d/cancel", id), url.Values{"csrf_token": {ana.csrf("/reservations")}}); res.StatusCode != http.StatusOK || doc.Find("[data-testid=confirm]").Length() != 1 {
		t.Errorf("the team's own reservation: %d, want the confirmation page", res.StatusCode)
	}
}

// An agent's end sent twice is answered in already_ended the second time, with the
// end on record and a reason, and an earlier one in refused_ends; the answer's lists
// are always present (empty when nothing is to say).
func TestAgentEndsSentAgainAreAnsweredInTheReport(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	code, body := f.api(member, "POST", "/api/v1/reservations/new", "")
	if code != http.StatusCreated {
		t.Fatalf("new: %d %v", code, body)
	}
	id := int64(body["id"].(float64))
	if code, body := f.api(member, "POST", "/api/v1/reservations", f.definition(id, 10, "1h", 0, 2*time.Hour, `"50.00"`)); code != http.StatusCreated {
		t.Fatalf("submit: %d %v", code, body)
	}
	agent, _, err := f.id.IssueAgentToken(context.Background(), "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	_, v := f.api(member, "GET", fmt.Sprintf("/api/v1/reservations/%d", id), "")
	start, _ := time.Parse(time.RFC3339, v["requests"].([]any)[0].(map[string]any)["start"].(string))
	f.clock.Set(start.Add(20 * time.Minute))
	end := fmt.Sprintf(`{"ends":[{"reservation":%d,"request":0,"at":%q}]}`, id, f.clock.Now().Format(time.RFC3339))
	code, first := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", end)
	if code != http.StatusOK || len(first["already_ended"].([]any)) != 0 || len(first["refused_ends"].([]any)) != 0 {
		t.Fatalf("the end: %d %v", code, first)
	}
	code, again := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", end)
	ae, _ := again["already_ended"].([]any)
	if code != http.StatusOK || len(ae) != 1 || !strings.HasPrefix(ae[0].(map[string]any)["reason"].(string), "already ended at ") {
		t.Fatalf("the end sent again: %d %v", code, again)
	}
	earlier := fmt.Sprintf(`{"ends":[{"reservation":%d,"request":0,"at":%q}]}`, id, f.clock.Now().Add(-10*time.Minute).Format(time.RFC3339))
	code, out := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", earlier)
	re, _ := out["refused_ends"].([]any)
	if code != http.StatusOK || len(re) != 1 || !strings.Contains(re[0].(map[string]any)["reason"].(string), "out of order") {
		t.Fatalf("an earlier end: %d %v", code, out)
	}
}
