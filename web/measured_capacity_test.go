package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/identity"
)

// capacityMarket is us-east/cpu (100 cores configured) with search holding 60 and
// an auction open, an agent token for us-east and a signed-in operator.
func capacityMarket(t *testing.T) (*fixture, string, *browser) {
	f, _ := newUtilFixture(t)
	f.cpuPool()
	ctx := context.Background()
	if err := f.market.GrantQuota(ctx, "search", "us-east/cpu", 60); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
		t.Fatal(err)
	}
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("op@x.io")
	return f, agent, b
}

func (f *fixture) rows(table string) int64 {
	f.t.Helper()
	var n int64
	if err := f.db.Read.Table(table).Count(&n).Error; err != nil {
		f.t.Fatal(err)
	}
	return n
}

// The agent's report carries a pool's measured capacity: a negative one, one for
// another cluster's pool, or an absurd one is refused whole, naming the field; a
// good one becomes the pool's effective capacity, shown on its page and the market
// summary with where it comes from, flagged when below the configured capacity,
// and the configured capacity stays as it was.
func TestMeasuredCapacityOnThePoolPage(t *testing.T) {
	t.Parallel()
	f, agent, b := capacityMarket(t)
	ctx := context.Background()
	page := "/operate/pools/us-east/cpu"
	_, doc := b.get(page)
	if got := text(doc, "[data-testid=capacity-effective]"); got != "100 cores" || text(doc, "[data-testid=capacity-source]") != "configured" ||
		doc.Find("[data-testid=capacity-measured]").Length() != 0 {
		t.Fatalf("before any measurement: effective %q from %q", got, text(doc, "[data-testid=capacity-source]"))
	}
	for name, c := range map[string]struct{ body, field string }{
		"negative":      {`{"pools": [{"pool": "us-east/cpu", "used": 1, "capacity": -1}]}`, "pools[0]: capacity"},
		"other cluster": {`{"pools": [{"pool": "eu-west/cpu", "used": 1, "capacity": 10}]}`, "pools[0]: pool"},
		"2^63-1": {`{"capacity": [{"pool": "us-east/cpu", "from": "` + f.clock.Now().Format(time.RFC3339) + `", "to": "` + f.clock.Now().Add(time.Hour).Format(time.RFC3339) + `", "units": 90}],
			"pools": [{"pool": "us-east/cpu", "used": 1, "capacity": 9223372036854775807}]}`, "pools[0]: capacity"},
		"used 100 of 10": {`{"pools": [{"pool": "us-east/cpu", "used": 100, "capacity": 10}]}`, "pools[0]: used: 100 is more than 4 times the capacity of 10"},
	} {
		code, body := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", c.body)
		e, _ := body["error"].(map[string]any)
		if msg, _ := e["message"].(string); code != http.StatusBadRequest || !strings.HasPrefix(msg, c.field) {
			t.Errorf("%s: %d %v, want 400 naming %s", name, code, body, c.field)
		}
	}
	for _, table := range []string{"pool_measured_capacity", "capacity_changes", "usage_samples"} {
		if n := f.rows(table); n != 0 {
			t.Errorf("refused reports stored %d rows in %s", n, table)
		}
	}
	before, err := f.market.Pool(ctx, "us-east/cpu")
	if err != nil {
		t.Fatal(err)
	}
	report := `{"pools": [{"pool": "us-east/cpu", "used": 3, "capacity": 96}]}`
	if code, body := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", report); code != http.StatusOK {
		t.Fatalf("report: %d %v", code, body)
	}
	_, doc = b.get(page)
	if got := text(doc, "[data-testid=capacity-configured]"); got != "100 cores" {
		t.Errorf("configured %q, want 100", got)
	}
	if got := text(doc, "[data-testid=capacity-measured]"); !strings.HasPrefix(got, "96 cores") {
		t.Errorf("measured %q, want 96", got)
	}
	if got := text(doc, "[data-testid=capacity-effective]"); got != "96 cores" || text(doc, "[data-testid=capacity-source]") != "measured" {
		t.Errorf("effective %q from %q, want the measured 96", got, text(doc, "[data-testid=capacity-source]"))
	}
	if doc.Find("[data-testid=capacity-below]").Length() != 1 {
		t.Error("a measured capacity below the configured one is not flagged")
	}
	if after, _ := f.market.Pool(ctx, "us-east/cpu"); after.Capacity != before.Capacity {
		t.Errorf("configured capacity %d -> %d", before.Capacity, after.Capacity)
	}
	_, doc = b.get("/")
	if got := text(doc, `[data-testid="pool-us-east/cpu"] [data-testid=capacity]`); got != "96 measured" {
		t.Errorf("market summary capacity %q, want 96 measured", got)
	}
	f.user("ana@x.io", identity.RoleMember, "search")
	member := f.browser()
	member.login("ana@x.io")
	_, doc = member.get("/orders/new?step=2&q.cpu=10&cluster=us-east")
	if got := text(doc, "[data-testid=availability]"); got != "us-east/cpu: 36 cores offered, 36 of 96 free" {
		t.Errorf("the bid form's availability %q, want 36 of the measured 96 free", got)
	}
	_, mkt := f.api(f.token(f.user("reader@x.io", identity.RoleMember, "search")), "GET", "/api/v1/market", "")
	pools, _ := mkt["pools"].([]any)
	if len(pools) != 1 {
		t.Fatalf("market API pools %v", mkt)
	}
	if p := pools[0].(map[string]any); p["capacity"] != 100.0 || p["effective_capacity"] != 96.0 || p["capacity_source"] != "measured" {
		t.Errorf("market API pool %v, want capacity 100, effective 96 measured", p)
	}
	// At or above the configured capacity: shown, not flagged.
	f.clock.Advance(5 * time.Minute)
	report = `{"pools": [{"pool": "us-east/cpu", "used": 3, "capacity": ` + i64s(before.Capacity+8) + `}]}`
	if code, body := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", report); code != http.StatusOK {
		t.Fatalf("report: %d %v", code, body)
	}
	_, doc = b.get(page)
	if got := text(doc, "[data-testid=capacity-measured]"); !strings.HasPrefix(got, i64s(before.Capacity+8)+" ") || doc.Find("[data-testid=capacity-below]").Length() != 0 {
		t.Errorf("measured %q, flagged %d", got, doc.Find("[data-testid=capacity-below]").Length())
	}
}

// An agent sending the same capacity change every poll adds one row.
func TestIdenticalCapacityReportsThroughTheAPIAddOneRow(t *testing.T) {
	t.Parallel()
	f, agent, _ := capacityMarket(t)
	now := f.clock.Now()
	body := `{"capacity": [{"pool": "us-east/cpu", "from": "` + now.Format(time.RFC3339) + `", "to": "` + now.Add(3*time.Hour).Format(time.RFC3339) + `", "units": 90}]}`
	for i := 0; i < 60; i++ {
		if code, res := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", body); code != http.StatusOK {
			t.Fatalf("report %d: %d %v", i, code, res)
		}
		f.clock.Advance(30 * time.Second)
	}
	if n := f.rows("capacity_changes"); n != 1 {
		t.Fatalf("60 identical reports stored %d capacity changes, want 1", n)
	}
}

// Holdings above the effective capacity show on /operate as an oversold pool, by
// how much and with what to do, and go when the operator overrides the capacity
// (with a reason and an expiry, through a CSRF-protected form only operators may
// post; a bad entry is refused naming the field and saves nothing) and come back
// when the override expires.
func TestOversoldPoolsOnOperateAndTheCapacityOverride(t *testing.T) {
	t.Parallel()
	f, agent, b := capacityMarket(t)
	page := "/operate/pools/us-east/cpu"
	if _, doc := b.get("/operate"); doc.Find("[data-testid=oversold-pools]").Length() != 0 {
		t.Fatal("an oversold pool shows before any measurement")
	}
	if code, body := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", `{"pools": [{"pool": "us-east/cpu", "used": 40, "capacity": 48}]}`); code != http.StatusOK {
		t.Fatalf("report: %d %v", code, body)
	}
	_, doc := b.get("/operate")
	row := `[data-testid="oversold-us-east/cpu"]`
	if got := text(doc, row+" [data-testid=oversold-by]"); got != "12 cores" {
		t.Fatalf("oversold by %q, want 12 cores (60 held of a measured 48)", got)
	}
	if !strings.Contains(text(doc, "[data-testid=oversold-what-to-do]"), "override the capacity") {
		t.Error("the oversold list does not say what to do")
	}
	if _, doc = b.get(page); !strings.HasPrefix(text(doc, "[data-testid=capacity-oversold]"), "Teams hold 12 cores more") {
		t.Errorf("pool page: %q", text(doc, "[data-testid=capacity-oversold]"))
	}

	expires := f.clock.Now().Add(2 * time.Hour).Format("2006-01-02 15:04")
	tok := b.csrf(page)
	form := func(units, reason, expires string) url.Values {
		return url.Values{"csrf_token": {tok}, "capacity_units": {units}, "capacity_reason": {reason}, "capacity_expires": {expires}}
	}
	for name, c := range map[string]struct {
		form  url.Values
		field string
	}{
		"no reason":   {form("64", " ", expires), "capacity_reason"},
		"negative":    {form("-1", "repair", expires), "capacity_units"},
		"not whole":   {form("6.5", "repair", expires), "capacity_units"},
		"absurd":      {form("9223372036854775807", "repair", expires), "capacity_units"},
		"in the past": {form("64", "repair", f.clock.Now().Add(-time.Hour).Format("2006-01-02 15:04")), "capacity_expires"},
		"no date":     {form("64", "repair", "soon"), "capacity_expires"},
	} {
		res, doc := b.post(page+"/capacity", c.form)
		if res.StatusCode != http.StatusUnprocessableEntity || doc.Find(`[data-testid=pool-capacity] .has-error #f-`+c.field).Length() != 1 {
			t.Errorf("%s: %d, errors %q; want 422 naming %s", name, res.StatusCode, text(doc, "[data-testid=pool-capacity] .field-error"), c.field)
		}
	}
	if n := f.rows("pool_capacity_overrides") + f.rows("capacity_override_log"); n != 0 {
		t.Fatalf("refused overrides stored %d rows", n)
	}
	noToken := form("64", "repair", expires)
	noToken.Del("csrf_token")
	if res, _ := b.post(page+"/capacity", noToken); res.StatusCode != http.StatusForbidden {
		t.Errorf("an override without the CSRF token: %d, want 403", res.StatusCode)
	}
	f.user("ana@x.io", identity.RoleMember, "search")
	member := f.browser()
	member.login("ana@x.io")
	if res, _ := member.post(page+"/capacity", url.Values{"csrf_token": {member.csrf("/")}, "capacity_units": {"64"}, "capacity_reason": {"x"}, "capacity_expires": {expires}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("a member's override: %d, want 403", res.StatusCode)
	}
	if n := f.rows("pool_capacity_overrides"); n != 0 {
		t.Fatalf("refused overrides stored %d rows", n)
	}

	if res, _ := b.post(page+"/capacity", form("64", "4 nodes back from repair tonight", expires)); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("override: %d", res.StatusCode)
	}
	_, doc = b.get(page)
	if got := text(doc, "[data-testid=capacity-effective]"); got != "64 cores" || text(doc, "[data-testid=capacity-source]") != "override" {
		t.Errorf("effective %q from %q, want the override's 64", got, text(doc, "[data-testid=capacity-source]"))
	}
	if o := text(doc, "[data-testid=capacity-override]"); !strings.Contains(o, "op@x.io") || !strings.Contains(o, "4 nodes back from repair tonight") || !strings.Contains(o, expires) {
		t.Errorf("override shown as %q", o)
	}
	if l := text(doc, "[data-testid=capacity-override-log]"); !strings.Contains(l, "op@x.io set 64 cores") {
		t.Errorf("override log %q", l)
	}
	if _, doc = b.get("/operate"); doc.Find("[data-testid=oversold-pools]").Length() != 0 {
		t.Error("the pool is still listed as oversold under an override above holdings")
	}
	f.clock.Advance(2*time.Hour + time.Minute)
	if _, doc = b.get("/operate"); text(doc, row+" [data-testid=oversold-by]") != "12 cores" {
		t.Error("the oversold pool does not come back when the override expires")
	}
	if res, _ := b.post(page+"/capacity/clear", url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("clear: %d", res.StatusCode)
	}
}

func i64s(n int64) string { return strconv.FormatInt(n, 10) }
