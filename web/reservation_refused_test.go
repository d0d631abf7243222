package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/identity"
)

// A reservation the scheduler refuses is reported truthfully: the refused request
// is listed as rejected, and the page does not claim nothing was saved.
func TestRefusedReservationIsReportedTruthfully(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.openMarket()
	f.user("mia@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("mia@x.io")
	_, doc := b.get("/reservations")
	arrival, _ := doc.Find("[data-testid=field-arrival]").Attr("value")
	deadline, _ := doc.Find("[data-testid=field-deadline]").Attr("value")
	form := url.Values{"csrf_token": {b.csrf("/reservations")}, "cluster": {"us-east"}, "u.cpu": {"50"}, "count": {"1"}, "duration": {"1h"},
		"arrival": {arrival}, "deadline": {deadline}, "value": {"0.000001"}, "action": {"reserve"}}
	form.Set("quote", quote(t, b, form))
	res, doc := b.post("/reservations", form)
	flash := doc.Find("[data-testid=flash]").Text()
	if res.StatusCode == http.StatusSeeOther {
		t.Fatal("the scheduler accepted a request worth $0.000001")
	}
	if !strings.Contains(flash, "was refused") || !strings.Contains(flash, "listed below as rejected") {
		t.Fatalf("refusal: %d, flash %q, errors %q", res.StatusCode, flash, doc.Find("[data-testid=form-errors]").Text())
	}
	if doc.Find("[data-testid=form-errors]").Length() != 0 {
		t.Error("the page still says nothing was saved")
	}
	if v, _ := doc.Find("[data-testid=field-value]").Attr("value"); v != "0.000001" {
		t.Errorf("the form lost the value typed: %q", v)
	}
}
