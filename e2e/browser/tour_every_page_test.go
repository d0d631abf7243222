package browser

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/templates"
)

// TestBrowserEveryPageForEveryRole opens every page of the demo market as each
// role (a member, an owner, finance, an operator, and the owner of a team that
// sells) at 1400 and 400 px: none may print templ source as text, none may show an
// amount its unit prices do not give (pagesFitScreens multiplies out every
// derivation shown), and none may scroll the whole page sideways (wide tables
// scroll inside their frame). The pages whose tables stack into labelled rows on a
// phone (the auction pages' pools and final-round tables, the idle-capacity pages:
// operators' settings, auctions and fairness reports, a member's jobs and team
// accounts) may not scroll sideways even inside a table's frame.
//
// It was four tests, each on a demo app of its own (every page; the trading pages;
// the auction pages; the idle-capacity pages): one app serves them all, a tab for
// each login, and each page is loaded once.
func TestBrowserEveryPageForEveryRole(t *testing.T) {
	t.Parallel()
	everyone := []string{"/", "/auctions", "/auctions/1", "/auctions/7", "/auctions/8", "/search?q.cpu=8", "/search?q.cpu=lots", "/help", "/notifications"}
	team := []string{"/orders", "/orders/new", "/orders/new?q.cpu=10&cluster=us-east&cluster=eu-west&step=2", "/orders/new?q.cpu=10&cluster=us-east&cluster=eu-west&step=2&limit_mode=each",
		"/orders/offer", "/orders/move", "/team", "/team?from=2026-12-01&to=2026-01-01", "/reservations", "/best-effort", "/spend"}
	pagesFitScreens(t, []pagesOf{
		{email: "member@search.example.com", pages: append(append(append([]string{}, everyone...), team...),
			"/auctions/4", "/search?shape=storage-server&count=50", "/orders/new?shape=web-server&count=20&cluster=us-east&cluster=eu-west&step=2"),
			tables: []string{"/auctions/1", "/auctions/4", "/auctions/7", "/auctions/8", "/best-effort", "/team"}},
		{email: "owner@search.example.com", pages: append(append(append([]string{}, everyone...), team...), "/approvals")},
		{email: "owner@storage.example.com", pages: []string{"/orders/offer"}},
		{email: "finance@example.com", pages: append(append([]string{}, everyone...), "/finance", "/finance/teams/search", "/finance/teams/ml", "/finance/best-effort", "/finance/auctions/1", "/finance/auctions/7", "/spend", "/spend?from=2026-03&to=2025-01", "/audit", "/audit?action=budget.")},
		{email: "operator@example.com", pages: append(append([]string{}, everyone...), "/operate", "/operate/pools/us-east/cpu", "/operate/curves/standard", "/operate/trades",
			"/operate/stats", "/operate/schedule", "/operate/shapes", "/operate/access", "/operate/idle", "/operate/auctions/8/close", "/audit", "/search?q.gpu=8"),
			tables: []string{"/operate/idle"}},
	})
}

// pagesOf is the pages one demo login opens, and those of them whose tables may
// not scroll sideways inside their frame either.
type pagesOf struct {
	email  string
	pages  []string
	tables []string
}

// pagesFitScreens opens each login's pages on the demo market at 1400 and 400 px
// and fails where a page prints templ source, shows a derivation its unit prices do
// not give, or is wider than the screen, or, for the login's tables pages, where a
// table scrolls sideways inside its frame. Each page is loaded once, at one width (1400 px for
// the even pages of a login's list, 400 for the odd), and measured there and again
// after the viewport is set to the other: the pages' layout is CSS alone (their two
// scripts, curve.js and reserve.js, read no widths), so a page resized to a width
// lays out as one loaded at it, and its document, which the templ and derivation
// checks read, is the same at both. The logins share one demo app and run as
// parallel subtests, each in a browser tab of its own (one tab for all of them ran
// past NewBrowser's 5-minute guard at a load of 50). With CLEARHOUSE_SCREENSHOTS set
// it saves each page at both widths.
func pagesFitScreens(t *testing.T, logins []pagesOf) {
	t.Helper()
	app, passwords := e2etest.StartDemo(t)
	base := app.Server.URL()
	for _, who := range logins {
		t.Run(who.email, func(t *testing.T) {
			t.Parallel() // the logins share the app (they only read), each in a tab of its own
			ctx := e2etest.NewBrowser(t)
			e2etest.SignIn(t, ctx, base, who.email, passwords[who.email])
			for i, page := range who.pages {
				pageFitsScreens(t, ctx, base+page, page, who.email, i%2 == 1, slices.Contains(who.tables, page))
			}
		})
	}
}

// pageFitsScreens loads url (page, as email) in the tab ctx at 1400 px (at 400 when
// narrowFirst) and checks it there and at the other width, as pagesFitScreens says.
func pageFitsScreens(t *testing.T, ctx context.Context, url, page, email string, narrowFirst, tables bool) {
	t.Helper()
	widths := []int64{1400, 400}
	if narrowFirst {
		widths = []int64{400, 1400}
	}
	err := chromedp.Do(ctx, chromedp.EmulateViewport(widths[0], 900), chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`main h1`)))
	if err != nil {
		t.Fatalf("%s as %s: %v", page, email, err)
	}
	doc, err := chromedp.Run(ctx, chromedp.Evaluate[pageDocument](`({HTML: document.documentElement.outerHTML,
		Derivations: Array.from(document.querySelectorAll('[data-testid=derivation]')).map(e => e.textContent.replace(/\s+/g, ' ').trim())})`))
	if err != nil {
		t.Fatal(err)
	}
	if leaks := templates.LeakedTemplateSource(doc.HTML); len(leaks) > 0 {
		t.Errorf("%s as %s prints templ source as text: %q", page, email, leaks)
	}
	for _, d := range doc.Derivations {
		if why := unreproduced(d); why != "" {
			t.Errorf("%s as %s: the unit prices shown do not give the amount: %q: %s", page, email, d, why)
		}
	}
	for _, width := range widths {
		if width != widths[0] {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
				t.Fatal(err)
			}
		}
		pageFits(t, ctx, page, email, width, tables)
	}
}

// pageDocument is what pagesFitScreens reads from a page's document: its HTML and
// the text of its derivations.
type pageDocument struct {
	HTML        string
	Derivations []string
}

// pageFit is what pageFits measures: the window's width, how far the page is wider,
// and the tables that scroll sideways inside their frame.
type pageFit struct {
	Width, Over int64
	Wide        []string
}

// pageFits fails the test where the page in the tab ctx, at width px, is wider than
// the screen or, with tables, has a table that scrolls sideways inside its frame,
// and saves a screenshot when CLEARHOUSE_SCREENSHOTS is set.
func pageFits(t *testing.T, ctx context.Context, page, email string, width int64, tables bool) {
	t.Helper()
	fit, err := chromedp.Run(ctx, chromedp.Evaluate[pageFit](fmt.Sprintf(`({Width: window.innerWidth, Over: document.documentElement.scrollWidth - window.innerWidth,
		Wide: %t ? Array.from(document.querySelectorAll('.table-wrap')).filter(e => e.scrollWidth > e.clientWidth).map(e => e.querySelector('table').dataset.testid) : []})`, tables)))
	if err != nil {
		t.Fatal(err)
	}
	if fit.Width != width {
		t.Fatalf("%s as %s: the window is %d px wide, not the %d set", page, email, fit.Width, width)
	}
	if fit.Over > 0 {
		t.Errorf("%s at %d px as %s: the page is %d px wider than the screen", page, width, email, fit.Over)
	}
	if tables && len(fit.Wide) > 0 {
		t.Errorf("%s at %d px as %s: tables scroll sideways: %v", page, width, email, fit.Wide)
	}
	name := strings.NewReplacer("/", "-", "?", "-", "&", "-", "=", "-").Replace(strings.TrimPrefix(page, "/"))
	if len(name) > 60 {
		name = name[:60]
	}
	e2etest.Screenshot(t, ctx, fmt.Sprintf("w%d-%s", width, name))
}

// derivationTerm is one "pool quantity unit × $price" of an amount's derivation,
// and derivationTotal the amount it ends with.
var (
	derivationTerm  = regexp.MustCompile(`(-?[\d,]+) \S+ × ([-−]?)\$([\d,]+\.\d+)`)
	derivationTotal = regexp.MustCompile(`= ([-−]?)\$([\d,]+\.\d+)$`)
)

// unreproduced says why a shown derivation ("us-east/cpu 200 core × $3.388700 +
// ... = $975.540000") does not hold, or "" when its unit prices, multiplied out in
// micro-dollars, give the amount exactly (prices are whole micro-dollars).
func unreproduced(d string) string {
	micros := func(sign, s string) (int64, bool) {
		whole, frac, _ := strings.Cut(strings.ReplaceAll(s, ",", ""), ".")
		frac = (frac + "000000")[:6]
		n, err := strconv.ParseInt(whole+frac, 10, 64)
		if sign != "" {
			n = -n
		}
		return n, err == nil
	}
	m := derivationTotal.FindStringSubmatch(d)
	if m == nil {
		return "no amount after ="
	}
	total, ok := micros(m[1], m[2])
	if !ok {
		return "the amount is not a number"
	}
	terms := derivationTerm.FindAllStringSubmatch(d, -1)
	if len(terms) == 0 {
		return "no quantity × unit price"
	}
	var sum int64 // prices are whole micro-dollars: the terms give the amount exactly
	for _, tm := range terms {
		q, err := strconv.ParseInt(strings.ReplaceAll(tm[1], ",", ""), 10, 64)
		p, ok := micros(tm[2], tm[3])
		if err != nil || !ok {
			return "a term is not a number"
		}
		sum += q * p
	}
	if sum != total {
		return fmt.Sprintf("the terms give %d micro-dollars, the amount is %d", sum, total)
	}
	return ""
}
