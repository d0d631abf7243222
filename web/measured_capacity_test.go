package web_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/identity"
)

// The agent's report carries a pool's measured capacity: a negative one, or one for
// another cluster's pool, is refused; a good one shows on the pool's operate page
// beside the configured capacity, flagged when below it, and leaves the configured
// capacity (what the market prices with) as it was.
func TestMeasuredCapacityOnThePoolPage(t *testing.T) {
	f, _ := newUtilFixture(t)
	f.openMarket()
	ctx := context.Background()
	agent, _, err := f.id.IssueAgentToken(ctx, "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	f.user("op@x.io", identity.RoleOperator, "")
	b := f.browser()
	b.login("op@x.io")
	page := "/operate/pools/us-east/cpu"
	if _, doc := b.get(page); doc.Find("[data-testid=pool-measured-capacity]").Length() != 0 {
		t.Fatal("a measured capacity shows before any agent measured one")
	}
	for name, body := range map[string]string{
		"negative":      `{"pools": [{"pool": "us-east/cpu", "used": 1, "capacity": -1}]}`,
		"other cluster": `{"pools": [{"pool": "eu-west/cpu", "used": 1, "capacity": 10}]}`,
	} {
		if code, _ := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", body); code != http.StatusBadRequest {
			t.Errorf("%s capacity: %d, want 400", name, code)
		}
	}
	if _, doc := b.get(page); doc.Find("[data-testid=pool-measured-capacity]").Length() != 0 {
		t.Fatal("a refused report's capacity shows")
	}
	before, err := f.market.Pool(ctx, "us-east/cpu")
	if err != nil {
		t.Fatal(err)
	}
	below := before.Capacity - 4
	report := `{"pools": [{"pool": "us-east/cpu", "used": 3, "capacity": ` + i64s(below) + `}]}`
	if code, body := f.api(agent, "POST", "/api/v1/clusters/us-east/updates", report); code != http.StatusOK {
		t.Fatalf("report: %d %v", code, body)
	}
	_, doc := b.get(page)
	if got := text(doc, "[data-testid=capacity-configured]"); !strings.HasPrefix(got, i64s(before.Capacity)+" ") {
		t.Errorf("configured %q, want %d", got, before.Capacity)
	}
	if got := text(doc, "[data-testid=capacity-measured]"); !strings.HasPrefix(got, i64s(below)+" ") {
		t.Errorf("measured %q, want %d", got, below)
	}
	if doc.Find("[data-testid=capacity-below]").Length() != 1 {
		t.Error("a measured capacity below the configured one is not flagged")
	}
	if after, _ := f.market.Pool(ctx, "us-east/cpu"); after.Capacity != before.Capacity {
		t.Errorf("configured capacity %d -> %d", before.Capacity, after.Capacity)
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

func i64s(n int64) string { return strconv.FormatInt(n, 10) }
