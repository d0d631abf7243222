package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/exchange"
)

// In a settled auction where units of us-east/cpu traded and nothing of
// us-east/ram did, the auction page and the API call cpu's price traded and ram's
// indicative, and the price history charts cpu only.
func TestPricesSayWhetherAnythingTraded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	mia := f.settleOneBid(400, 100, exchange.Bundle{"us-east/cpu": 10})
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/auctions/1")
	if doc.Find(`[data-testid="auction-pool-us-east/cpu"] [data-testid=traded]`).Length() != 1 {
		t.Error("cpu, where units traded, is not shown as a traded price")
	}
	ram := doc.Find(`[data-testid="auction-pool-us-east/ram"]`)
	if ram.Find("[data-testid=indicative]").Length() != 1 || !strings.Contains(ram.Text(), "nothing traded") {
		t.Errorf("ram, where nothing traded, is not called indicative: %q", strings.Join(strings.Fields(ram.Text()), " "))
	}
	_, doc = b.get("/auctions")
	var series []string
	doc.Find(`[data-testid="history-us-east"] path.series title`).Each(func(_ int, s *goquery.Selection) { series = append(series, s.Text()) })
	if strings.Join(series, ",") != "us-east/cpu" {
		t.Errorf("price history charts %q, want only the pool that traded", series)
	}

	tok := f.token(mia)
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL+"/api/v1/auctions/1", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out apiv1.Auction
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	basis := map[string]string{}
	for _, p := range out.Pools {
		basis[p.Pool] = p.PriceBasis
		if p.Pool == "us-east/cpu" && p.TradedUnits != 10 {
			t.Errorf("cpu traded %d units in the API, want 10", p.TradedUnits)
		}
	}
	if basis["us-east/cpu"] != "traded" || basis["us-east/ram"] != "indicative" || out.ClosedAt == nil {
		t.Errorf("API price bases %v, closed_at %v", basis, out.ClosedAt)
	}
}
