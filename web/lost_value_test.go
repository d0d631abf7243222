package web_test

import (
	"encoding/csv"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/identity"
)

// A bid refused for want of room is value lost: the scheduler page shows it per
// pool and day, the API gives it to operators and finance only, and the CSV has it.
func TestLostValueShowsOnTheSchedulerPageTheAPIAndTheCSV(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	operator := f.user("op@x.io", identity.RoleOperator, "")
	// 500 cores of a 100-core pool never fit: refused, its $80 lost for no room.
	code, body := f.api(member, "POST", "/api/v1/reservations", f.definition(f.newID(member), 500, "1h", 0, 2*time.Hour, `"80.00"`))
	if code != http.StatusUnprocessableEntity || !strings.Contains(errorMessage(body), "no room") {
		t.Fatalf("the oversized reservation: %d %v", code, body)
	}
	day := f.clock.Now().UTC().Format(time.DateOnly)

	b := f.browser()
	b.login(operator.Email)
	res, doc := b.get("/operate/schedule")
	row := doc.Find("[data-testid='lost-" + day + "-us-east/cpu']")
	if res.StatusCode != http.StatusOK || row.Length() != 1 {
		t.Fatalf("scheduler page: %d, lost-value row for %s: %d", res.StatusCode, day, row.Length())
	}
	if cells := row.Find("td"); !strings.Contains(cells.Eq(2).Text(), "80.00") || !strings.Contains(cells.Eq(5).Text(), "80.00") || strings.TrimSpace(cells.Eq(6).Text()) != "1" {
		t.Fatalf("lost-value row: %q", row.Text())
	}

	if code, _ := f.api(member, "GET", "/api/v1/lost-value", ""); code != http.StatusForbidden {
		t.Fatalf("a team member read the lost value: %d", code)
	}
	code, body = f.api(f.token(operator), "GET", "/api/v1/lost-value?from="+day+"&to="+day, "")
	days, _ := body["days"].([]any)
	if code != http.StatusOK || len(days) != 1 {
		t.Fatalf("lost value API: %d %v", code, body)
	}
	if d := days[0].(map[string]any); d["pool"] != "us-east/cpu" || d["no_room"] != "80.00" || d["total"] != "80.00" || d["not_honoured"] != "0.00" {
		t.Fatalf("lost value API day: %v", d)
	}
	if code, body := f.api(f.token(operator), "GET", "/api/v1/lost-value?from=2020-01-01&to=2024-01-01", ""); code != http.StatusBadRequest || !strings.Contains(errorMessage(body), "366") {
		t.Fatalf("a span of four years: %d %v", code, body)
	}

	res, _ = b.get("/operate/schedule/lost-value.csv")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
}

// The CSV has a header and one line per pool and day with the amounts as numbers.
func TestLostValueCSVHasOneLinePerPoolAndDay(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	for range 2 {
		if code, body := f.api(member, "POST", "/api/v1/reservations", f.definition(f.newID(member), 500, "1h", 0, 2*time.Hour, `"80.00"`)); code != http.StatusUnprocessableEntity {
			t.Fatalf("reservation: %d %v", code, body)
		}
	}
	b := f.browser()
	b.login(f.user("op@x.io", identity.RoleOperator, "").Email)
	res, err := b.c.Get(f.srv.URL + "/operate/schedule/lost-value.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	rows, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
	if err != nil {
		t.Fatalf("CSV %q: %v", raw, err)
	}
	day := f.clock.Now().UTC().Format(time.DateOnly)
	want := [][]string{{"day", "pool", "no_room", "priced_out", "not_honoured", "total", "bids"}, {day, "us-east/cpu", "160.000000", "0.000000", "0.000000", "160.000000", "2"}}
	if len(rows) != 2 || strings.Join(rows[0], ",") != strings.Join(want[0], ",") || strings.Join(rows[1], ",") != strings.Join(want[1], ",") {
		t.Fatalf("CSV rows: %q, want %q", rows, want)
	}
}

// newID asks the API for a reservation id.
func (f *fixture) newID(token string) int64 {
	f.t.Helper()
	code, body := f.api(token, "POST", "/api/v1/reservations/new", "")
	if code != http.StatusCreated {
		f.t.Fatalf("new reservation id: %d %v", code, body)
	}
	return int64(body["id"].(float64))
}
