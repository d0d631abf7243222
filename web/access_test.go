package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/clearhouse/clearhouse/identity"
)

// TestOperatorsRevokeTokensEndSessionsAndDisableUsers drives /operate/access: the
// page lists people and tokens (never a token itself), and each button takes access
// away at once.
func TestOperatorsRevokeTokensEndSessionsAndDisableUsers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	opUser := f.user("op@x.io", identity.RoleOperator, "")
	mem := f.user("mem@x.io", identity.RoleMember, "search")
	memToken, memTok, err := f.id.IssueToken(context.Background(), mem.ID, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	second := f.token(mem)
	op, member := f.browser(), f.browser()
	op.login("op@x.io")
	member.login("mem@x.io")

	res, doc := op.get("/operate/access")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /operate/access: %d", res.StatusCode)
	}
	html, _ := doc.Html()
	if strings.Contains(html, memToken) || strings.Contains(html, memTok.TokenHash) {
		t.Fatal("the page shows a token or its hash")
	}
	row := doc.Find(fmt.Sprintf("[data-testid=user-%d]", mem.ID))
	if row.Find("[data-testid=sessions]").Text() != "1" || row.Find("[data-testid=disable]").Length() != 1 {
		t.Fatalf("the member's row: %q", row.Text())
	}
	if doc.Find(fmt.Sprintf("[data-testid=user-%d] [data-testid=disable]", opUser.ID)).Length() != 0 {
		t.Error("an operator is offered to disable themselves")
	}
	tokRow := doc.Find(fmt.Sprintf("[data-testid=token-%d]", memTok.ID))
	if !strings.Contains(tokRow.Text(), "laptop") || !strings.Contains(tokRow.Text(), "mem@x.io") || tokRow.Find("[data-testid=revoke]").Length() != 1 {
		t.Fatalf("the token's row: %q", tokRow.Text())
	}

	revoke := fmt.Sprintf("/operate/access/tokens/%d/revoke", memTok.ID)
	if res, _ := op.post(revoke, url.Values{}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("revoke without a CSRF token: %d, want 403", res.StatusCode)
	}
	tok := op.csrf("/operate/access")
	if res, _ := member.post(revoke, url.Values{"csrf_token": {member.csrf("/orders")}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a member revoking: %d, want 403", res.StatusCode)
	}
	if res, _ := op.post(revoke, url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", res.StatusCode)
	}
	if code, _ := f.api(memToken, http.MethodGet, "/api/v1/budget", ""); code != http.StatusUnauthorized {
		t.Fatalf("a revoked token: %d, want 401", code)
	}
	if code, _ := f.api(second, http.MethodGet, "/api/v1/budget", ""); code != http.StatusOK {
		t.Fatalf("another token of the same user: %d", code)
	}
	_, doc = op.get("/operate/access")
	if s := doc.Find(fmt.Sprintf("[data-testid=token-%d] [data-testid=state]", memTok.ID)).Text(); !strings.Contains(s, "revoked") {
		t.Fatalf("the revoked token's state: %q", s)
	}

	if res, _ := op.post(fmt.Sprintf("/operate/access/users/%d/sessions/end", mem.ID), url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("end sessions: %d", res.StatusCode)
	}
	if res, _ := member.get("/orders"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("the member after their sessions ended: %d, want a redirect to sign in", res.StatusCode)
	}
	if code, _ := f.api(second, http.MethodGet, "/api/v1/budget", ""); code != http.StatusOK {
		t.Fatalf("ending sessions stopped a token: %d", code)
	}

	member.login("mem@x.io")
	if res, _ := op.confirmThrough(fmt.Sprintf("/operate/access/users/%d/disable", mem.ID), url.Values{"csrf_token": {tok}}, func() {
		if res, _ := member.get("/orders"); res.StatusCode != http.StatusOK {
			t.Fatalf("asking to disable the member ended their session: %d", res.StatusCode)
		}
	}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("disable: %d", res.StatusCode)
	}
	if res, _ := member.get("/orders"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a disabled member's session: %d, want a redirect to sign in", res.StatusCode)
	}
	if code, _ := f.api(second, http.MethodGet, "/api/v1/budget", ""); code != http.StatusUnauthorized {
		t.Fatalf("a disabled member's token: %d, want 401", code)
	}
	if res, _ := member.post("/login", url.Values{"email": {"mem@x.io"}, "password": {testPassword}, "csrf_token": {member.csrf("/login")}}); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a disabled member signing in: %d, want 401", res.StatusCode)
	}
	_, doc = op.get("/operate/access")
	if doc.Find(fmt.Sprintf("[data-testid=user-%d] [data-testid=disabled]", mem.ID)).Length() != 1 {
		t.Fatal("the member is not shown as disabled")
	}
	if res, _ := op.post(fmt.Sprintf("/operate/access/users/%d/enable", mem.ID), url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("enable: %d", res.StatusCode)
	}
	if code, _ := f.api(second, http.MethodGet, "/api/v1/budget", ""); code != http.StatusOK {
		t.Fatalf("an enabled member's token: %d", code)
	}

	res, _ = op.post(fmt.Sprintf("/operate/access/users/%d/disable", opUser.ID), url.Values{"csrf_token": {tok}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("disabling oneself: %d", res.StatusCode)
	}
	if res, doc = op.get("/operate/access"); res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=flash]").Text(), "your own account") {
		t.Fatalf("disabling oneself: %d, flash %q", res.StatusCode, doc.Find("[data-testid=flash]").Text())
	}
	for _, path := range []string{"/operate/access/users/999/disable", "/operate/access/tokens/999/revoke", "/operate/access/users/x/enable"} {
		if res, _ := op.post(path, url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, res.StatusCode)
		}
	}
}

// TestTheAccessPageIsPaged lists 150 users and 150 tokens over two pages each.
func TestTheAccessPageIsPaged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.user("op@x.io", identity.RoleOperator, "")
	ctx := context.Background()
	for i := range 149 {
		u, err := f.id.AddUser(ctx, identity.NewUser{Email: fmt.Sprintf("u%03d@x.io", i), Role: identity.RoleFinance})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.id.IssueToken(ctx, u.ID, fmt.Sprintf("t%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.id.IssueAgentToken(ctx, "nowhere", "agent"); err == nil {
		t.Fatal("an agent token for an unknown cluster")
	}
	op := f.browser()
	op.login("op@x.io")
	seenUsers, seenTokens := map[string]bool{}, map[string]bool{}
	pages := 0
	for path := "/operate/access"; path != ""; pages++ {
		res, doc := op.get(path)
		if res.StatusCode != http.StatusOK || pages > 3 {
			t.Fatalf("%s: %d (page %d)", path, res.StatusCode, pages)
		}
		doc.Find("[data-testid=access-users] tbody tr").Each(func(_ int, r *goquery.Selection) { seenUsers[r.AttrOr("data-testid", "")] = true })
		doc.Find("[data-testid=access-tokens] tbody tr").Each(func(_ int, r *goquery.Selection) { seenTokens[r.AttrOr("data-testid", "")] = true })
		path = ""
		if next, ok := doc.Find("[data-testid=next-users]").Attr("href"); ok {
			path = next
		} else if next, ok := doc.Find("[data-testid=next-tokens]").Attr("href"); ok && len(seenTokens) < 149 {
			path = next
		}
	}
	if len(seenUsers) != 150 || len(seenTokens) != 149 {
		t.Fatalf("saw %d users and %d tokens over %d pages, want 150 and 149", len(seenUsers), len(seenTokens), pages)
	}
}

// An API request with no credential at all is told to authenticate (401 naming the
// token it needs), not that a form expired: before issue 36 an agent's report without
// its token got the CSRF message. A signed-in browser's unsafe API request without
// the CSRF token is still refused as before.
func TestAPIWithoutCredentialsIsUnauthorizedNotCSRF(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, r := range []struct{ method, path, body, says string }{
		{http.MethodPost, "/api/v1/clusters/us-east/updates", `{"pools":[]}`, "clearhouse agent token --cluster us-east"},
		{http.MethodPost, "/api/v1/orders", `{}`, ""},
		{http.MethodDelete, "/api/v1/reservations/1", ``, ""},
	} {
		code, body := f.api("", r.method, r.path, r.body)
		e, _ := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if code != http.StatusUnauthorized || strings.Contains(msg, "form") || !strings.Contains(msg, r.says) {
			t.Errorf("%s %s without credentials: %d %v", r.method, r.path, code, body)
		}
	}
	f.user("mem@x.io", identity.RoleMember, "search")
	b := f.browser()
	b.login("mem@x.io")
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/v1/orders", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a signed-in browser's POST /api/v1/orders without the CSRF token: %d, want 403", res.StatusCode)
	}
}
