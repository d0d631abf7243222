package web_test

import (
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/identity"
)

// The team page puts money first (budget, holds, statement, approval rule), then
// quota, then idle capacity, collapsed.
func TestTeamPageShowsMoneyFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("mia@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("mia@x.io")
	res, err := b.c.Get(f.srv.URL + "/team")
	if err != nil {
		t.Fatal(err)
	}
	doc := b.page("/team", res.Body)
	res.Body.Close()
	html, _ := doc.Find("main").Html()
	at := func(marker string) int {
		i := strings.Index(html, marker)
		if i < 0 {
			t.Fatalf("no %s on the team page", marker)
		}
		return i
	}
	budget, statement, rule, quota, idle := at(`data-testid="budget"`), at(`data-testid="statement"`), at(`data-testid="approval-rule"`), at(`data-testid="no-holdings"`), at(`data-testid="idle-section"`)
	if !(budget < statement && statement < rule && rule < quota && quota < idle) {
		t.Errorf("order on the page: budget %d, statement %d, approval rule %d, quota %d, idle %d", budget, statement, rule, quota, idle)
	}
	if _, open := doc.Find("[data-testid=idle-section]").Attr("open"); open || goquery.NodeName(doc.Find("[data-testid=idle-section]")) != "details" {
		t.Error("idle capacity is not collapsed")
	}
}
