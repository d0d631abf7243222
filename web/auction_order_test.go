package web_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// pathCommand is one command of an SVG path and its numbers.
var pathCommand = regexp.MustCompile(`([MLHV])([^MLHVZ]*)`)

// An auction closed early, then one added after it, then one scheduled before
// either: the price history charts them in the order they closed (#1, #3, #2, the
// line never doubling back), and the first one's page says when it closed and that
// it closed early.
func TestPriceHistoryFollowsWhenAuctionsClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket() // auction 1: the next hour
	ctx := context.Background()
	member := f.user("mia@x.io", identity.RoleMember, "search")
	bid := func() {
		t.Helper()
		limit := 50 * ledger.Dollar
		if _, err := f.market.PlaceOrder(ctx, member, exchange.OrderSpec{Team: "search", Limit: &limit, Bundles: []exchange.Bundle{{"us-east/cpu": 5}}}); err != nil {
			t.Fatal(err)
		}
	}
	closeNow := func(id int64) {
		t.Helper()
		if _, err := f.market.Close(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	open := func(from time.Time, d time.Duration) int64 {
		t.Helper()
		a, err := f.market.ScheduleAuction(ctx, from, from.Add(d), auction.DefaultParams)
		if err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	start := f.clock.Now()
	tomorrow := open(start.Add(24*time.Hour), time.Hour) // auction 2
	bid()
	f.clock.Advance(10 * time.Minute)
	closeNow(1) // early
	f.clock.Advance(10 * time.Minute)
	extra := open(f.clock.Now(), 30*time.Minute) // auction 3, closing before 1 was to
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	bid()
	f.clock.Advance(30 * time.Minute)
	closeNow(extra)
	f.clock.Set(start.Add(24 * time.Hour))
	if _, err := f.market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	bid()
	f.clock.Advance(time.Hour)
	closeNow(tomorrow)

	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/auctions")
	ch := doc.Find(`[data-testid="history-us-east"]`)
	var labels []string
	ch.Find("svg.chart > text.label.wide-only[text-anchor=middle]").Each(func(_ int, s *goquery.Selection) {
		if s.Text() != "" {
			labels = append(labels, s.Text())
		}
	})
	if strings.Join(labels, " ") != "#1 #3 #2" {
		t.Errorf("x axis %q, want the auctions in the order they closed: #1 #3 #2", labels)
	}
	ch.Find("path.series").Each(func(_ int, s *goquery.Selection) {
		d, _ := s.Attr("d")
		last := -1.0
		for _, m := range pathCommand.FindAllStringSubmatch(d, -1) {
			if m[1] == "V" { // vertical: x stays
				continue
			}
			x, err := strconv.ParseFloat(strings.Fields(strings.ReplaceAll(m[2], ",", " "))[0], 64)
			if err != nil {
				t.Fatalf("path %q: %v", d, err)
			}
			if x < last {
				t.Errorf("the line doubles back: %q", d)
			}
			last = x
		}
	})
	_, doc = b.get("/auctions/1")
	w := strings.Join(strings.Fields(doc.Find("[data-testid=auction-window]").Text()), " ")
	if !strings.Contains(w, "closed "+start.Add(10*time.Minute).UTC().Format("2006-01-02 15:04")) || !strings.Contains(w, "early") {
		t.Errorf("auction 1's window %q does not say it closed early at 10 minutes", w)
	}
	if doc.Find("[data-testid=auction-settled]").Length() != 1 {
		t.Error("auction 1's page does not say when it settled")
	}
}
