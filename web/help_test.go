package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// /help explains the final round's payments and how to bid, reservations,
// best-effort jobs, holding charges and loss reasons,
// each in a section the contents link to, with a worked example whose figures are
// those the docs' rules give.
func TestHelpCoversReservationsBestEffortAndHoldingCharges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.tradeMarket()
	res, doc := b.get("/help")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/help: %d", res.StatusCode)
	}
	for id, wants := range map[string][]string{
		"help-reservations": {"free of charge", "worth at most $100.00", "$30.00 is released", "refused and nothing held"},
		"help-best-effort":  {"idle", "stopped and go back to your job's queue", "charged once when its last task is done", "released in full if you cancel"},
		"help-holding":      {"per unit and month", "from the day it is set", "1,600 × $0.10 × 19/30 = $101.33", "from the next month", "1,600 × $0.10 = $160.00", "first charged on 1 January"},
		"help-lost":         {"Short supply", "Limit below the price", "Sold out", "Your own team's order"},
		"help-final-round":  {"clock only", "at least your VCG payment", "never more than your limit", "Bid your true value", "$17 and $15", "capped at its limit", "not necessarily the nearest to the VCG payments"},
	} {
		sec := doc.Find("[data-testid=" + id + "]")
		if sec.Length() != 1 {
			t.Errorf("/help has %d sections %s, want 1", sec.Length(), id)
			continue
		}
		if sid, _ := sec.Attr("id"); doc.Find("[data-testid=help-toc] a[href='#"+sid+"']").Length() != 1 {
			t.Errorf("the contents do not link to section %s (#%s)", id, sid)
		}
		text := strings.Join(strings.Fields(sec.Text()), " ")
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("section %s does not say %q:\n%s", id, w, text)
			}
		}
		if id != "help-lost" && sec.Find("h3").Length() < 1 {
			t.Errorf("section %s has no worked example", id)
		}
	}
}
