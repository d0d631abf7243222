package web_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// Lost value reads its period with the statements' parser: the same messages for
// bad dates, and the last date a form accepts (9999-12-31) finds the same days on
// SQLite and PostgreSQL (SQLite compares times as text, where a bound in year
// 10000 sorts before every date and found nothing).
func TestLostValuePeriodToTheLastDate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
		f.cpuPool()
		op := f.token(f.user("op@x.io", identity.RoleOperator, ""))
		for _, at := range []time.Time{time.Date(9999, 12, 30, 8, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC)} {
			if err := db.Write.Create(&fleet.LostValue{TeamID: "search", PoolID: "us-east/cpu", At: at, Value: 3 * ledger.Dollar,
				Reason: "no-room", CreatedAt: at}).Error; err != nil {
				t.Fatal(err)
			}
		}
		code, body := f.api(op, http.MethodGet, "/api/v1/lost-value?from=9999-12-01&to=9999-12-31", "")
		days, _ := body["days"].([]any)
		if code != http.StatusOK || len(days) != 2 || body["to"] != "9999-12-31" {
			t.Fatalf("lost value to 9999-12-31: %d %v", code, body)
		}
		for q, want := range map[string]string{
			"from=2026-13-01":                "from: give a date as YYYY-MM-DD",
			"to=31.12.2026":                  "to: give a date as YYYY-MM-DD",
			"from=2026-03-01&to=2026-01-01":  "to: the period ends on or after the day it starts; this end date is before the start date",
			"from=10000-01-01&to=9999-12-31": "from: give a date as YYYY-MM-DD",
		} {
			code, body := f.api(op, http.MethodGet, "/api/v1/lost-value?"+q, "")
			if code != http.StatusBadRequest || errorMessage(body) != want {
				t.Errorf("lost value ?%s: %d %q, want 400 %q", q, code, errorMessage(body), want)
			}
		}
	})
}
