package web_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// finishAll reports every running best-effort task of us-east done.
func (f *fixture) finishAll() {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.be.Step(ctx, "us-east"); err != nil {
		f.t.Fatal(err)
	}
	alloc, err := f.be.Allocation(ctx, "us-east")
	if err != nil {
		f.t.Fatal(err)
	}
	var evs []besteffort.TaskEvent
	for _, r := range alloc.Run {
		evs = append(evs, besteffort.TaskEvent{Task: r.Task, Event: "done", At: f.clock.Now()})
	}
	if err := f.be.Report(ctx, "us-east", besteffort.Report{Tasks: evs}); err != nil {
		f.t.Fatal(err)
	}
}

// Finance sees best-effort charges per team and job with totals; the team's
// statement names the charge in users' words with a link to the job, and the
// journal CSV carries the best-effort reason.
func TestFinanceSeesBestEffortCharges(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	ctx := context.Background()
	ana := f.user("ana@x.io", identity.RoleMember, "search")
	f.user("fin@x.io", identity.RoleFinance, "")
	if err := f.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: besteffort.PolicyAbacus, Alpha: 0.5}); err != nil {
		t.Fatal(err)
	}
	done, err := f.be.Submit(ctx, ana, besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 1}, Tasks: 2, Budget: 12 * ledger.Dollar})
	if err != nil {
		t.Fatal(err)
	}
	f.finishAll()
	open, err := f.be.Submit(ctx, ana, besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 1}, Tasks: 2, Budget: 5 * ledger.Dollar})
	if err != nil {
		t.Fatal(err)
	}
	fin := f.browser()
	fin.login("fin@x.io")
	_, doc := fin.get("/finance")
	if href, _ := doc.Find("[data-testid=best-effort-charges]").Attr("href"); href != "/finance/best-effort" {
		t.Fatalf("finance links to %q", href)
	}
	_, doc = fin.get("/finance/best-effort")
	team := doc.Find("[data-testid=charges-search]")
	if got := team.Find("[data-testid=charged]").Text(); got != "$12.00" {
		t.Fatalf("search charged %q: %q", got, strings.Join(strings.Fields(team.Text()), " "))
	}
	if got := strings.Join(strings.Fields(team.Text()), " "); !strings.Contains(got, "$17.00") || !strings.Contains(got, "$5.00") {
		t.Fatalf("search's budgets and held: %q", got)
	}
	if got := doc.Find("[data-testid=charges-total] [data-testid=charged]").Text(); got != "$12.00" {
		t.Fatalf("total charged %q", got)
	}
	if got := doc.Find(fmt.Sprintf("[data-testid=charge-job-%d] [data-testid=charged]", done.ID)).Text(); got != "$12.00" {
		t.Fatalf("the done job charged %q", got)
	}
	if got := doc.Find(fmt.Sprintf("[data-testid=charge-job-%d] [data-testid=charged]", open.ID)).Text(); got != "$0.00" {
		t.Fatalf("the waiting job charged %q", got)
	}

	_, doc = fin.get("/finance/teams/search")
	var line string
	doc.Find("tbody tr").Each(func(_ int, s *goquery.Selection) {
		if strings.Contains(s.Text(), fmt.Sprintf("Best-effort job #%d", done.ID)) {
			line = strings.Join(strings.Fields(s.Text()), " ")
			if href, _ := s.Find("a").Attr("href"); href != fmt.Sprintf("/finance/best-effort#job-%d", done.ID) {
				t.Errorf("the statement links the job to %q", href)
			}
		}
	})
	if !strings.Contains(line, "best-effort job") || !strings.Contains(line, fmt.Sprintf("Charge for best-effort job #%d", done.ID)) || !strings.Contains(line, "-$12.00") {
		t.Fatalf("the statement line: %q", line)
	}
	res, err := fin.c.Get(f.srv.URL + "/finance/journal.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if body := string(raw); !strings.Contains(body, fmt.Sprintf(",best-effort,best-effort:%d,", done.ID)) {
		t.Fatalf("the journal has no best-effort charge:\n%s", body)
	}
}
