package web_test

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/identity"
)

// labelledRows fails unless the table marked testid stacks into labelled rows on
// narrow screens: class "stack", and a data-label on every cell that shows
// something, except the row's actions and a total row's heading.
func labelledRows(t *testing.T, doc *goquery.Document, page, testid string) {
	t.Helper()
	tables := doc.Find(`table[data-testid="` + testid + `"]`)
	if tables.Length() == 0 {
		t.Fatalf("%s: no table %s", page, testid)
	}
	tables.Each(func(_ int, table *goquery.Selection) {
		if !table.HasClass("stack") {
			t.Errorf("%s: table %s does not stack on narrow screens", page, testid)
		}
		table.Find("tbody td").Each(func(_ int, td *goquery.Selection) {
			if _, ok := td.Attr("data-label"); ok || td.HasClass("row-actions") || strings.TrimSpace(td.Text()) == "" && td.Children().Length() == 0 {
				return
			}
			if td.Parent().HasClass("total") && td.Index() == 0 {
				return
			}
			t.Errorf("%s: a cell of %s without a label: %q", page, testid, strings.TrimSpace(td.Text()))
		})
	})
}

// A team's idle-capacity accounts say what their figures measure, in plain words,
// rounded with thousands separators (every digit on hover); and every table of
// the idle-capacity pages stacks into labelled rows on narrow screens.
func TestIdleAccountsSayTheirUnitsAndTablesStack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	ana := f.user("ana@x.io", identity.RoleMember, "search")
	f.user("op@x.io", identity.RoleOperator, "")
	if _, err := f.be.Submit(ctx, ana, besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 2}, Tasks: 35}); err != nil {
		t.Fatal(err)
	}
	// Six hours of 70 cores: ORIG utility 70 × 6² / 2 = 1,260 unit-hours × hours,
	// priority (0 - 1,260) / 100 cores.
	for range 2 {
		if _, err := f.be.Step(ctx, "us-east"); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(6 * time.Hour)
	}
	if _, err := f.be.ComputeFairness(ctx); err != nil {
		t.Fatal(err)
	}
	b := f.browser()
	b.login("ana@x.io")
	for _, page := range []string{"/best-effort", "/team"} {
		_, doc := b.get(page)
		row := doc.Find(`[data-testid="idle-us-east/cpu"]`)
		got := map[string]string{}
		for _, k := range []string{"policy", "policy-words", "lent", "borrowed", "contribution", "utility", "priority"} {
			got[k] = strings.TrimSpace(row.Find("[data-testid=" + k + "]").Text())
		}
		want := map[string]*regexp.Regexp{
			"policy":       regexp.MustCompile(`^direct-orig$`),
			"policy-words": regexp.MustCompile(`^DirectContr \(contribution minus use\)`),
			"lent":         regexp.MustCompile(`^0\.0 cores$`),
			"borrowed":     regexp.MustCompile(`^70 cores$`),
			"contribution": regexp.MustCompile(`^0\.0 unit-hours × hours$`),
			"utility":      regexp.MustCompile(`^1,260\.0 unit-hours × hours$`),
			"priority":     regexp.MustCompile(`^-12\.60 h²$`),
		}
		for k, re := range want {
			if !re.MatchString(got[k]) {
				t.Errorf("%s: %s %q, want %s", page, k, got[k], re)
			}
		}
		exact, _ := row.Find("[data-testid=utility] [title]").Attr("title")
		if x, err := strconv.ParseFloat(strings.TrimSuffix(exact, " unit-hours × hours"), 64); err != nil || math.Abs(x-1260) > 1e-6 {
			t.Errorf("%s: the utility's exact value %q", page, exact)
		}
		if help := doc.Find("[data-testid=idle-accounts-help]").Text(); !strings.Contains(help, "DirectContr (contribution minus use)") || !strings.Contains(help, "unit-hours × hours") {
			t.Errorf("%s: the accounts' explanation: %q", page, help)
		}
		// Read first: what the team borrowed, in words; the exact figures one click away.
		if words := doc.Find(`[data-testid="idle-words-us-east/cpu"]`).Text(); !strings.Contains(words, "borrow 70 cores") || strings.Contains(words, "unit-hours") {
			t.Errorf("%s: the account in words: %q", page, words)
		}
		if doc.Find("details[data-testid=idle-exact] [data-testid=idle-accounts]").Length() != 1 {
			t.Errorf("%s: the exact figures are not in a collapsed section", page)
		}
		labelledRows(t, doc, page, "idle-accounts")
		if page == "/best-effort" {
			labelledRows(t, doc, page, "best-effort-jobs")
		}
	}

	op := f.browser()
	op.login("op@x.io")
	_, doc := op.get("/operate/idle")
	for _, id := range []string{"idle-pools", "fairness", "best-effort-jobs"} {
		labelledRows(t, doc, "/operate/idle", id)
	}
	if got := doc.Find("[data-testid=policy-words]").Text(); !strings.Contains(got, "direct-orig: DirectContr (contribution minus use)") || !strings.Contains(got, "round-robin: teams take turns") {
		t.Errorf("the policies in plain words: %q", got)
	}
	if got := doc.Find(`[data-testid="idle-pool-us-east/cpu"] [data-testid=field-policy] option`).First().Text(); got != "direct-orig" {
		t.Errorf("the first policy offered is %q, want its identifier", got)
	}
}
