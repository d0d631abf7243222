package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// e2e is the production wiring on one SQLite file, which a test may restart.
type e2e struct {
	t     *testing.T
	clock *storetest.Clock
	path  string
	app   *server.App
}

func (e *e2e) start() {
	e.t.Helper()
	cfg := server.Config{Addr: "127.0.0.1:0", DB: e.path, Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute}
	e.app = server.NewApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), e.clock.Now)
	if err := e.app.Open(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *e2e) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.app.Close(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// call makes an API call with a bearer token and decodes the JSON answer into out.
func (e *e2e) call(token, method, path string, body any, out any) int {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.app.Server.URL()+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
		}
	}
	return res.StatusCode
}

// trialBalanceIsZero asks the API, as finance, that every account sums to zero.
func (e *e2e) trialBalanceIsZero(finance, when string) {
	e.t.Helper()
	var tb apiv1.TrialBalance
	if code := e.call(finance, "GET", "/api/v1/ledger/trial-balance", nil, &tb); code != http.StatusOK || tb.Total != ledger.Money(0).Plain() {
		e.t.Fatalf("%s: trial balance %d %q", when, code, tb.Total)
	}
}

func (e *e2e) reserve(token string, count int64, dur string, from, to time.Duration, value string) apiv1.Reservation {
	e.t.Helper()
	var id apiv1.NewReservationID
	if code := e.call(token, "POST", "/api/v1/reservations/new", nil, &id); code != http.StatusCreated {
		e.t.Fatalf("new reservation: %d", code)
	}
	now := e.clock.Now()
	def := map[string]any{"id": id.ID, "value": value, "requests": []any{map[string]any{
		"configuration": map[string]int64{"us-east/cpu": 1}, "count": count, "duration": dur,
		"arrival": now.Add(from).Format(time.RFC3339), "deadline": now.Add(to).Format(time.RFC3339)}}}
	var r apiv1.Reservation
	if code := e.call(token, "POST", "/api/v1/reservations", def, &r); code != http.StatusCreated {
		e.t.Fatalf("submit %v: %d %+v", def, code, r)
	}
	return r
}

// A team wins quota at auction, reserves inside it for free and beyond it for a
// charge; the cluster's agent sees the allocation slot by slot; an early end
// releases the unused part of the hold; a capacity drop re-plans one reservation
// and cannot honour another; a restart keeps every accepted reservation; the
// trial balance stays zero throughout.
func TestReservationsEndToEnd(t *testing.T) {
	e := &e2e{t: t, clock: storetest.NewClock(storetest.Epoch), path: storetest.MigratedFile(t)}
	e.start()
	defer func() { e.stop() }()
	ctx := context.Background()
	m := e.app.Market
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	_, err = m.AddCluster(ctx, exchange.Cluster{ID: "us-east"})
	must(err)
	_, err = m.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100, UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"})
	must(err)
	tokens := map[string]string{}
	for _, u := range []identity.NewUser{{Email: "ana@search.io", Role: identity.RoleMember, TeamID: "search"},
		{Email: "bo@ads.io", Role: identity.RoleMember, TeamID: "ads"}, {Email: "op@x.io", Role: identity.RoleOperator}, {Email: "fin@x.io", Role: identity.RoleFinance}} {
		if u.TeamID != "" {
			_, err := m.AddTeam(ctx, exchange.NewTeam{ID: u.TeamID, Budget: 1000 * ledger.Dollar})
			must(err)
		}
		user, err := e.app.Identity.AddUser(ctx, u)
		must(err)
		tokens[u.Email], _, err = e.app.Identity.IssueToken(ctx, user.ID, "e2e")
		must(err)
	}
	search, ads, op, fin := tokens["ana@search.io"], tokens["bo@ads.io"], tokens["op@x.io"], tokens["fin@x.io"]
	var agentOut bytes.Buffer
	if code := run(ctx, []string{"agent", "token", "--cluster", "us-east", "--db", e.path}, nil, &agentOut, io.Discard); code != 0 {
		t.Fatalf("agent token: exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(agentOut.String()), "\n")
	agent := lines[len(lines)-1]
	_, err = e.app.Plan.SetPolicy(ctx, fleet.PricingPolicy{PoolID: "us-east/cpu", Algorithm: "greedy", Predictor: "seasonal", UnitPrice: 10_000})
	must(err)

	// search wins 40 cores at auction.
	a, err := m.ScheduleAuction(ctx, e.clock.Now(), e.clock.Now().Add(time.Hour), auction.DefaultParams)
	must(err)
	_, err = m.OpenDue(ctx)
	must(err)
	if code := e.call(search, "POST", "/api/v1/orders", map[string]any{"bundles": []map[string]int64{{"us-east/cpu": 40}}, "limit": "500"}, nil); code != http.StatusCreated {
		t.Fatalf("bid: %d", code)
	}
	if code := e.call(op, "POST", fmt.Sprintf("/api/v1/auctions/%d/close", a.ID), nil, nil); code != http.StatusOK {
		t.Fatalf("close: %d", code)
	}
	e.trialBalanceIsZero(fin, "after the auction")

	// 30 cores for an hour fit in the quota; 50 more take 10 from it and 40 from shared capacity.
	inside := e.reserve(search, 30, "1h", 0, 2*time.Hour, "10")
	beyond := e.reserve(search, 50, "1h", 0, 2*time.Hour, "100")
	if inside.Price != "0.00" || beyond.Price != "4.80" { // 40 cores x 12 slots x 1 cent
		t.Fatalf("prices: inside %s, beyond %s", inside.Price, beyond.Price)
	}
	var budget apiv1.Budget
	e.call(search, "GET", "/api/v1/budget", nil, &budget)
	if budget.Held != "4.80" {
		t.Fatalf("held %s, want the charge", budget.Held)
	}
	e.trialBalanceIsZero(fin, "after reserving")

	// The agent sees both running, slot by slot.
	for slot := range 3 {
		var al apiv1.Allocation
		if code := e.call(agent, "GET", "/api/v1/clusters/us-east/allocation", nil, &al); code != http.StatusOK || len(al.Running) != 2 ||
			al.Running[0].Units+al.Running[1].Units != 80 {
			t.Fatalf("slot %d: %d %+v", slot, code, al)
		}
		e.clock.Advance(5 * time.Minute)
	}
	e.app.RunTick(ctx) // three slots have passed: a quarter of the charge is captured
	var got apiv1.Reservation
	e.call(search, "GET", fmt.Sprintf("/api/v1/reservations/%d", beyond.ID), nil, &got)
	if got.Charged != "1.20" || got.Phase != "running" {
		t.Fatalf("after three slots: %+v", got)
	}
	// It ends early, after six slots: the rest of the hold is released at once.
	e.clock.Advance(15 * time.Minute)
	end := map[string]any{"ends": []any{map[string]any{"reservation": beyond.ID, "request": 0, "at": e.clock.Now().Format(time.RFC3339)}}}
	if code := e.call(agent, "POST", "/api/v1/clusters/us-east/updates", end, nil); code != http.StatusOK {
		t.Fatalf("early end: %d", code)
	}
	e.call(search, "GET", fmt.Sprintf("/api/v1/reservations/%d", beyond.ID), nil, &got)
	e.call(search, "GET", "/api/v1/budget", nil, &budget)
	if got.Status != "done" || got.Charged != "2.40" || got.Released != "2.40" || budget.Held != "0.00" {
		t.Fatalf("after the early end: %+v, held %s", got, budget.Held)
	}
	e.trialBalanceIsZero(fin, "after the early end")

	// ads reserves shared capacity; then capacity falls to 70 for two hours, leaving
	// 30 cores beside search's quota. Re-planning keeps the most valuable where it
	// was, moves the next inside its window and cannot honour the last.
	now := e.clock.Now()
	kept := e.reserve(ads, 20, "1h", 30*time.Minute, 90*time.Minute, "80")
	movable := e.reserve(ads, 20, "1h", 30*time.Minute, 3*time.Hour, "50")
	doomed := e.reserve(ads, 20, "1h", 30*time.Minute, 90*time.Minute, "10")
	drop := map[string]any{"capacity": []any{map[string]any{"pool": "us-east/cpu", "from": now.Format(time.RFC3339),
		"to": now.Add(2 * time.Hour).Format(time.RFC3339), "units": 70}}}
	var rep apiv1.Answer
	if code := e.call(agent, "POST", "/api/v1/clusters/us-east/updates", drop, &rep); code != http.StatusOK ||
		len(rep.AtRisk) != 1 || rep.AtRisk[0] != doomed.ID || len(rep.Moved) != 1 || rep.Moved[0] != movable.ID {
		var all apiv1.ReservationList
		e.call(op, "GET", "/api/v1/reservations", nil, &all)
		t.Fatalf("capacity drop: %d %+v (movable %d, doomed %d)\n%+v", code, rep, movable.ID, doomed.ID, all)
	}
	var adsBudget apiv1.Budget
	e.call(ads, "GET", "/api/v1/budget", nil, &adsBudget)
	e.call(ads, "GET", fmt.Sprintf("/api/v1/reservations/%d", movable.ID), nil, &got)
	if adsBudget.Held != "4.80" || (got.Requests[0].Start == nil || !got.Requests[0].Start.Equal(now.Add(90*time.Minute))) {
		t.Fatalf("after the drop: ads holds %s (want 4.80 for the two it keeps), the movable one starts %v", adsBudget.Held, got.Requests[0].Start)
	}
	var failed apiv1.Reservation
	e.call(ads, "GET", fmt.Sprintf("/api/v1/reservations/%d", doomed.ID), nil, &failed)
	if failed.Phase != "could not be honoured" || failed.Charged != "0.00" || kept.ID == 0 {
		t.Fatalf("the reservation that cannot be honoured: %+v", failed)
	}
	e.trialBalanceIsZero(fin, "after the capacity drop")

	// A restart keeps every accepted reservation where it was.
	var before, after apiv1.ReservationList
	e.call(op, "GET", "/api/v1/reservations", nil, &before)
	e.stop()
	e.start()
	e.call(op, "GET", "/api/v1/reservations", nil, &after)
	if len(before.Reservations) != 5 || !reflect.DeepEqual(before, after) {
		t.Fatalf("reservations before and after the restart:\n%+v\n%+v", before, after)
	}
	var al apiv1.Allocation
	e.call(agent, "GET", "/api/v1/clusters/us-east/allocation", nil, &al)
	if len(al.Running) != 1 || al.Running[0].Reservation != inside.ID {
		t.Fatalf("allocation after the restart: %+v", al)
	}
	// The inside reservation ends; the moved one runs later and is charged.
	e.clock.Advance(3 * time.Hour)
	e.app.RunTick(ctx)
	e.call(ads, "GET", fmt.Sprintf("/api/v1/reservations/%d", movable.ID), nil, &got)
	if got.Status != "done" || got.Charged != "2.40" {
		t.Fatalf("the moved reservation after it ran: %+v", got)
	}
	st, err := e.app.Ledger.Statement(ctx, ledger.TeamAccount("ads"), storetest.Epoch, e.clock.Now().Add(time.Hour))
	must(err)
	var charges []ledger.Money
	for _, l := range st.Lines {
		if l.Reason == ledger.ReasonReservation {
			charges = append(charges, l.Amount)
		}
	}
	if fmt.Sprint(charges) != "[-2.40 -2.40]" {
		t.Fatalf("ads's reservation charges: %v, want the two it ran", charges)
	}
	e.trialBalanceIsZero(fin, "at the end")
}
