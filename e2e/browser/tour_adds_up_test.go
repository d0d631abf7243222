package browser

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/moneyfmt"
)

// Finance and a team's owner read the demo's figures in a browser and add them up
// as a person would, from the text on the screen (issue 31's proof): on every
// settlement report the shown payments add to the shown totals and the cards say
// buyers paid = sellers received + treasury net; on /finance each budget's balance
// less held is its available and the columns add to their totals; a statement's
// rows chain from the opening balance to the closing one; and a settlement
// notification's total is the sum of its lines.
func TestBrowserFiguresAddUpAsAPersonAddsThem(t *testing.T) {
	t.Parallel()
	app, logins := e2etest.StartDemo(t)
	base := app.Server.URL()
	ctx := e2etest.NewBrowser(t)
	e2etest.SignIn(t, ctx, base, "finance@example.com", logins["finance@example.com"])
	texts := func(js string) []string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	amount := func(where, s string) int64 {
		t.Helper()
		s = strings.TrimSpace(s)
		if s == "" || s == "—" {
			return 0
		}
		m, err := moneyfmt.Parse(s)
		if err != nil {
			t.Fatalf("%s: %q is not an amount as shown: %v", where, s, err)
		}
		return m
	}
	sum := func(where string, ss []string) int64 {
		t.Helper()
		n := int64(0)
		for _, s := range ss {
			n += amount(where, s)
		}
		return n
	}
	// innerText is what the screen shows (CSS transforms included), one array per column.
	col := func(sel string) string {
		return fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.innerText)`, sel)
	}

	settled := 0
	for id := 1; ; id++ {
		if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/finance/auctions/%d", base, id)), chromedp.WaitVisible(chromedp.CSS(`main h1`))); err != nil {
			t.Fatal(err)
		}
		if h := e2etest.Text(t, ctx, `main h1`); !strings.Contains(h, "Settlement") {
			break // past the last auction
		}
		if len(texts(col(`[data-testid=settlement-totals]`))) == 0 {
			continue // not settled yet
		}
		settled++
		where := fmt.Sprintf("auction %d", id)
		if next := texts(col(`[rel=next]`)); len(next) > 0 {
			t.Fatalf("%s: its lines span pages; the test reads one", where)
		}
		paid := sum(where+" paid", texts(col(`[data-testid=settlement-line] [data-testid=paid]`)))
		received := sum(where+" received", texts(col(`[data-testid=settlement-line] [data-testid=received]`)))
		totalPaid := amount(where, texts(col(`[data-testid=settlement-totals] [data-label=Paid]`))[0])
		totalReceived := amount(where, texts(col(`[data-testid=settlement-totals] [data-label=Received]`))[0])
		if paid != totalPaid || received != totalReceived {
			t.Errorf("%s: the Paid column adds to %s (total shown %s), Received to %s (total shown %s)", where,
				moneyfmt.Exact(paid), moneyfmt.Exact(totalPaid), moneyfmt.Exact(received), moneyfmt.Exact(totalReceived))
		}
		cardPaid := amount(where, e2etest.Text(t, ctx, `[data-testid=buyers-paid]`))
		cardReceived := amount(where, e2etest.Text(t, ctx, `[data-testid=sellers-received]`))
		net := texts(col(`[data-testid=treasury-net]`))
		if cardPaid != totalPaid || cardReceived != totalReceived || len(net) != 1 || cardPaid != cardReceived+amount(where, net[0]) {
			t.Errorf("%s: cards say paid %s, received %s, treasury net %v; the columns' totals %s and %s", where,
				moneyfmt.Exact(cardPaid), moneyfmt.Exact(cardReceived), net, moneyfmt.Exact(totalPaid), moneyfmt.Exact(totalReceived))
		}
		for _, d := range texts(col(`[data-testid=settlement-line] [data-testid=derivation]`)) {
			if why := unreproduced(strings.Join(strings.Fields(d), " ")); why != "" {
				t.Errorf("%s: %q: %s", where, d, why)
			}
		}
	}
	if settled < 3 {
		t.Fatalf("%d settled auctions in the demo; want the week's", settled)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/finance"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=budgets]`))); err != nil {
		t.Fatal(err)
	}
	bal := texts(col(`[data-testid=budgets] tbody tr [data-label=Balance]`))
	held := texts(col(`[data-testid=budgets] tbody tr [data-label=Held]`))
	avail := texts(col(`[data-testid=budgets] tbody tr [data-label=Available]`))
	if len(bal) < 12 || len(bal) != len(held) || len(bal) != len(avail) {
		t.Fatalf("/finance: %d balances, %d held, %d available", len(bal), len(held), len(avail))
	}
	for i := range bal {
		if b, h, a := amount("/finance", bal[i]), amount("/finance", held[i]), amount("/finance", avail[i]); b-h != a {
			t.Errorf("/finance row %d: %s - %s shown, %s available shown", i+1, bal[i], held[i], avail[i])
		}
	}
	for _, c := range []struct {
		name string
		rows []string
	}{{"Balance", bal}, {"Held", held}, {"Available", avail}} {
		total := texts(col(`[data-testid=budget-totals] [data-label=` + c.name + `]`))
		if len(total) != 1 || sum("/finance", c.rows) != amount("/finance total", total[0]) {
			t.Errorf("/finance: the %s column adds to %s, its total shows %v", c.name, moneyfmt.Exact(sum("/finance", c.rows)), total)
		}
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/finance/teams/search"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=statement]`))); err != nil {
		t.Fatal(err)
	}
	type row struct{ Amount, Balance string }
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`Array.from(document.querySelectorAll('[data-testid=statement] tbody tr')).map(tr => {
		const a = tr.querySelector('[data-label=Amount]'), b = tr.querySelector('[data-label=Balance]');
		return {Amount: a ? a.innerText : '', Balance: b ? b.innerText : ''};
	})`))
	if err != nil || len(rows) < 4 {
		t.Fatalf("the statement: %d rows, %v", len(rows), err)
	}
	balance := amount("opening", rows[0].Balance)
	for i, r := range rows[1:] {
		if strings.TrimSpace(r.Amount) == "" {
			continue
		}
		balance += amount("statement", r.Amount)
		if shown := amount("statement", r.Balance); shown != balance {
			t.Errorf("statement row %d: the amounts above give %s, the row shows %s", i+2, moneyfmt.Exact(balance), r.Balance)
			balance = shown
		}
	}
	if closing := amount("closing", e2etest.Text(t, ctx, `[data-testid=closing]`)); closing != balance {
		t.Errorf("the statement's rows give %s, its closing balance shows %s", moneyfmt.Exact(balance), moneyfmt.Exact(closing))
	}

	owner := ctx
	e2etest.SignOut(t, owner)
	e2etest.SignIn(t, owner, base, "owner@search.example.com", logins["owner@search.example.com"])
	if err := chromedp.Do(owner, chromedp.Navigate(base+"/notifications"), chromedp.WaitVisible(chromedp.CSS(`[data-testid=notifications]`))); err != nil {
		t.Fatal(err)
	}
	notes, err := chromedp.Run(owner, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('[data-testid=notifications] li')).map(e => e.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	total := regexp.MustCompile(`; paid (\$[\d,]+\.\d+)`)
	line := regexp.MustCompile(`Order #\d+ won .*? and paid (\$[\d,]+\.\d+)(?:\.| \(|:)`) // the amount, then the end of the line, its VCG payment or its rule
	checked := 0
	for _, n := range notes {
		n = strings.Join(strings.Fields(n), " ")
		tm, lines := total.FindStringSubmatch(n), line.FindAllStringSubmatch(n, -1)
		if tm == nil || len(lines) == 0 {
			continue
		}
		checked++
		s := int64(0)
		for _, l := range lines {
			s += amount("notification line", l[1])
		}
		if got := amount("notification total", tm[1]); got != s {
			t.Errorf("a notification says paid %s over lines adding to %s: %s", tm[1], moneyfmt.Exact(s), n)
		}
	}
	if checked == 0 {
		t.Fatalf("no settlement notification with a total among %d: %q", len(notes), notes)
	}
}
