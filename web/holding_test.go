package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// An operator sets a pool's holding charge on its page (a bad amount is marked on
// the field and changes nothing; other roles and requests without the CSRF token
// are refused); the month's charge then reads on the team's statement as a person
// would say it.
func TestHoldingChargeFromThePoolPageToTheStatement(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.cpuPool()
	ctx := context.Background()
	if err := f.market.GrantQuota(ctx, "search", "us-east/cpu", 40); err != nil {
		t.Fatal(err)
	}
	f.user("op@x.io", identity.RoleOperator, "")
	f.user("mia@x.io", identity.RoleMember, "search")
	op := f.browser()
	op.login("op@x.io")
	const page = "/operate/pools/us-east/cpu"
	_, doc := op.get(page)
	if note := doc.Find("[data-testid=holding-note]").Text(); !strings.HasPrefix(note, "Off") {
		t.Fatalf("a new pool's holding charge says %q, want off", note)
	}
	tok := op.csrf(page)
	for _, bad := range []string{"-0.10", "lots"} {
		res, doc := op.post(page+"/holding", url.Values{"csrf_token": {tok}, "holding_charge": {bad}})
		field := doc.Find("[data-testid=pool-holding] .has-error")
		if res.StatusCode != http.StatusUnprocessableEntity || field.Length() != 1 || !strings.Contains(field.Text(), "0") {
			t.Fatalf("holding charge %q: status %d, field %q", bad, res.StatusCode, field.Text())
		}
		if v, _ := field.Find("input").Attr("value"); v != bad {
			t.Errorf("the field lost what was typed: %q", v)
		}
	}
	if rates, _ := f.market.HoldingRates(ctx); len(rates) != 0 {
		t.Fatalf("refused entries saved a rate: %v", rates)
	}
	if res, _ := op.post(page+"/holding", url.Values{"holding_charge": {"0.10"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("without the CSRF token: status %d", res.StatusCode)
	}
	mia := f.browser()
	mia.login("mia@x.io")
	if res, _ := mia.post(page+"/holding", url.Values{"csrf_token": {mia.csrf("/orders")}, "holding_charge": {"0.10"}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a member set a holding charge: status %d", res.StatusCode)
	}
	if res, _ := op.post(page+"/holding", url.Values{"csrf_token": {tok}, "holding_charge": {"0.10"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("saving the holding charge: status %d", res.StatusCode)
	}
	_, doc = op.get(page)
	if note := doc.Find("[data-testid=holding-note]").Text(); !strings.Contains(note, "$0.10 per core") || !strings.Contains(note, "April 2026") {
		t.Fatalf("holding note %q", note)
	}

	f.clock.Set(time.Date(2026, 4, 1, 0, 30, 0, 0, time.UTC))
	run, err := f.market.ChargeHolding(ctx, f.clock.Now())
	if err != nil || len(run.Charged) != 1 || run.Charged[0].Amount != 4*ledger.Dollar {
		t.Fatalf("April's charge: %+v, %v", run, err)
	}
	mia = f.browser() // a month later: a new session
	mia.login("mia@x.io")
	_, doc = mia.get("/team?from=2026-04-01&to=2026-04-30")
	text := strings.Join(strings.Fields(doc.Find("[data-testid=statement]").Text()), " ")
	if !strings.Contains(text, "Holding charge, us-east/cpu, April 2026: 40 cores x $0.10") || !strings.Contains(text, "holding charge") {
		t.Fatalf("the statement does not show the holding charge: %q", text)
	}
}
