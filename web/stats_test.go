package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The statistics page shows, per auction, the share settled, the winners' bid
// premium (buyers and sellers) and settlement prices over the reference fixed price
// the operator sets on the pool's page, with charts.
func TestStatsShowThePapersFigures(t *testing.T) {
	t.Parallel()
	f := moneyMarket(t)
	op := f.browser()
	op.login("op@x.io")
	_, doc := op.get("/operate/stats")
	if doc.Find("[data-testid=no-references]").Length() != 1 {
		t.Error("the page does not say no pool has a reference price")
	}
	tok := op.csrf("/operate/pools/us-east/cpu")
	res, _ := op.post("/operate/pools/us-east/cpu/reference", url.Values{"csrf_token": {tok}, "reference_price": {"0.50"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("set reference: %d", res.StatusCode)
	}
	res, _ = op.post("/operate/pools/us-east/cpu/reference", url.Values{"csrf_token": {tok}, "reference_price": {"lots"}})
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/operate/pools/us-east/cpu" {
		t.Fatalf("bad reference: %d %q", res.StatusCode, loc)
	}
	_, doc = op.get("/operate/pools/us-east/cpu")
	if v, _ := doc.Find("[data-testid=field-reference_price]").Attr("value"); v != "0.50" {
		t.Errorf("pool page shows reference %q, want 0.50", v)
	}
	_, doc = op.get("/operate/stats")
	row := doc.Find("[data-testid=stats] tbody tr").First()
	if s := row.Find("[data-testid=reference]").Text(); !strings.Contains(s, "us-east/cpu") || !strings.Contains(s, "×") {
		t.Errorf("no price over reference for us-east/cpu: %q", s)
	}
	cells := row.Find("td")
	if s := cells.Eq(2).Text(); !strings.Contains(s, "2 of 2") {
		t.Errorf("share settled %q, want both orders (the buyer and the seller)", s)
	}
	// Both winners have a premium: the buyer's limit was far above its payment and
	// the seller's minimum far below its receipt, so the median is positive.
	if s := cells.Eq(3).Text(); strings.HasPrefix(strings.TrimSpace(s), "-") || strings.TrimSpace(s) == "" || strings.Contains(s, "—") {
		t.Errorf("bid premium median %q", s)
	}
	for _, id := range []string{"stats-settled", "stats-reference"} {
		if doc.Find("[data-testid="+id+"] svg.chart").Length() != 1 {
			t.Errorf("no %s chart", id)
		}
	}
}

// The seller counts: with the buyer alone the mean premium would be about 4,283%
// (a $1,314.92 limit for $30.00); with the seller's 50% it is about half that.
func TestBidPremiumCountsSellers(t *testing.T) {
	t.Parallel()
	f := moneyMarket(t)
	op := f.browser()
	op.login("op@x.io")
	_, doc := op.get("/operate/stats")
	mean := strings.TrimSpace(doc.Find("[data-testid=stats] tbody tr").First().Find("td").Eq(4).Text())
	if !strings.HasPrefix(mean, "+2") || len(mean) != len("+2166.6%") {
		t.Errorf("mean bid premium %q, want about +2,167%% (buyer and seller)", mean)
	}
}
