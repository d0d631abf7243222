package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
)

// The web form makes a map-then-reduce reservation (ORDER) with an overhead; the
// reduce stage starts once the map has ended, and a reduce stage without its
// tasks is refused beside the field.
func TestTheFormReservesMapThenReduce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("ana@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("ana@x.io")
	now := f.clock.Now()
	form := url.Values{"csrf_token": {b.csrf("/reservations")}, "cluster": {"us-east"}, "u.cpu": {"1"}, "count": {"60"}, "duration": {"1h"},
		"language": {"ORDER"}, "reduce_count": {"10"}, "reduce_duration": {"30m"}, "o.cpu": {"2"},
		"arrival": {now.Format("2006-01-02T15:04")}, "deadline": {now.Add(4 * time.Hour).Format("2006-01-02T15:04")}, "value": {"50"}, "action": {"reserve"}}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Del("reduce_count")
	res, doc := b.post("/reservations", bad)
	if res.StatusCode != http.StatusUnprocessableEntity || doc.Find("[data-testid=error-reduce_count]").Length() != 1 {
		t.Fatalf("a reduce stage without tasks: %d", res.StatusCode)
	}
	form.Set("quote", quote(t, b, form))
	if res, _ := b.post("/reservations", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("reserve: %d", res.StatusCode)
	}
	vs, err := f.plan.Reservations(context.Background(), fleet.ReservationFilter{})
	if err != nil || len(vs) != 1 {
		t.Fatalf("reservations: %v %v", vs, err)
	}
	v := vs[0]
	if v.Language != "ORDER" || len(v.Requests) != 2 || v.Requests[1].Count != 10 || v.Requests[1].StartAt.Before(v.Requests[0].End()) ||
		v.Requests[0].OverheadByPool()["us-east/cpu"] != 2 {
		t.Fatalf("map then reduce: %+v %+v", v.Reservation, v.Requests)
	}
	_, doc = b.get("/reservations")
	if text := doc.Find(fmt.Sprintf("[data-testid=reservation-%d]", v.ID)).Text(); !strings.Contains(text, ", then ") || !strings.Contains(text, "160 × 1 core cpu in us-east") || !strings.Contains(text, "2 core cpu overhead") {
		t.Fatalf("the reservation's row: %q", text)
	}
}

// The API takes a language and overheads, and says which request ANY chose.
func TestTheAPITakesALanguage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
	now := f.clock.Now()
	req := func(count int, dur string) string {
		return fmt.Sprintf(`{"configuration": {"us-east/cpu": 1}, "count": %d, "duration": %q, "arrival": %q, "deadline": %q, "overhead": {"us-east/cpu": 1}}`,
			count, dur, now.Format(time.RFC3339), now.Add(3*time.Hour).Format(time.RFC3339))
	}
	code, q := f.api(member, "POST", "/api/v1/reservations/quote", `{"language": "ANY", "requests": [`+req(50, "2h")+`, `+req(50, "1h")+`]}`)
	if code != http.StatusOK || q["feasible"] != true || q["chosen"] != float64(1) {
		t.Fatalf("ANY quote: %d %v", code, q)
	}
	code, body := f.api(member, "POST", "/api/v1/reservations", fmt.Sprintf(`{"id": %d, "value": "100", "language": "ORDER", "requests": [%s, %s]}`,
		f.newID(member), req(50, "1h"), req(10, "30m")))
	reqs, _ := body["requests"].([]any)
	if code != http.StatusCreated || body["language"] != "ORDER" || len(reqs) != 2 {
		t.Fatalf("ORDER: %d %v", code, body)
	}
	if o, _ := reqs[0].(map[string]any)["overhead"].(map[string]any); o["us-east/cpu"] != float64(1) {
		t.Fatalf("overhead: %v", reqs[0])
	}
	code, body = f.api(member, "POST", "/api/v1/reservations/quote", `{"language": "SOMETIMES", "requests": [`+req(1, "1h")+`]}`)
	if code != http.StatusBadRequest || !strings.HasPrefix(errorMessage(body), "language:") {
		t.Fatalf("a bad language: %d %v", code, body)
	}
}
