package browser

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/identity/oidctest"
	"github.com/clearhouse/clearhouse/server"
)

// TestBrowserSignInThroughProvider: with passwords off, a person signs in in Chromium
// through the real OpenID Provider (tools/oidc) and lands in the market with the team
// and role their group maps to; a person with no mapped group gets a page saying so.
func TestBrowserSignInThroughProvider(t *testing.T) {
	t.Parallel() // its own provider, app and browser context
	ctx := e2etest.NewBrowser(t)
	addr := oidctest.FreeAddr(t)
	redirect := "http://" + addr + "/login/oidc/callback"
	p := oidctest.Start(t, redirect,
		oidctest.User{Subject: "ana", Email: "ana@corp.example", Name: "Ana Lopes", Groups: []string{"all-staff", "search-owners"}},
		oidctest.User{Subject: "zed", Email: "zed@corp.example", Name: "Zed", Groups: []string{"all-staff"}})
	groups := filepath.Join(t.TempDir(), "groups.yaml")
	if err := os.WriteFile(groups, []byte("claim: groups\nrules:\n  - {group: search-owners, role: owner, team: search}\n  - {group: ops, role: operator}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Addr: addr, DB: filepath.Join(t.TempDir(), "e2e.db"), Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute,
		SignIn: server.SignInConfig{Issuer: p.Issuer, ClientID: oidctest.ClientID, ClientSecret: oidctest.ClientSecret, Scopes: []string{"profile", "email"},
			RedirectURL: redirect, GroupsFile: groups, NoPasswordSignIn: true}}
	// The real clock: the provider's tokens carry real times.
	app := server.NewApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	if err := app.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		app.Close(ctx)
	})
	if _, err := app.Market.AddTeam(context.Background(), exchange.NewTeam{ID: "search", Name: "Search"}); err != nil {
		t.Fatal(err)
	}

	err := chromedp.Do(ctx,
		chromedp.Navigate(app.Server.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-provider]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	passwordForms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('[data-testid=login-submit]').length`))
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`[data-testid=login-provider]`)),
		chromedp.WaitVisible(chromedp.CSS(`#username`)),
		chromedp.SendKeys(chromedp.CSS(`#username`), "ana"),
		chromedp.SendKeys(chromedp.CSS(`#password`), oidctest.Password),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=viewer]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if passwordForms != 0 {
		t.Errorf("the sign-in page shows a password form with --no-password-sign-in")
	}
	e2etest.Screenshot(t, ctx, "provider-signed-in")
	who, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=viewer]`)))
	if err != nil || !strings.Contains(who, "ana@corp.example") || !strings.Contains(who, "search") || !strings.Contains(who, "owner") {
		t.Fatalf("viewer %q, %v; want ana, owner of search", who, err)
	}
	u, err := app.Identity.UserByEmail(context.Background(), "ana@corp.example")
	if err != nil || u.Role != identity.RoleOwner || u.TeamID != "search" || u.AccessSource != identity.SourceProvider {
		t.Fatalf("ana: %+v %v", u, err)
	}

	// Sign out ends the session; zed, in no mapped group, gets a page that says so.
	err = chromedp.Do(ctx,
		chromedp.Submit(chromedp.CSS(`form[action="/logout"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-provider]`)),
		chromedp.Navigate(app.Server.URL()+"/login"),
		chromedp.Click(chromedp.CSS(`[data-testid=login-provider]`)),
		chromedp.WaitVisible(chromedp.CSS(`#username`)),
		chromedp.SendKeys(chromedp.CSS(`#username`), "zed"),
		chromedp.SendKeys(chromedp.CSS(`#password`), oidctest.Password),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=provider-refused]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	e2etest.Screenshot(t, ctx, "provider-no-group")
	msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=provider-refused]`)))
	if err != nil || !strings.Contains(msg, "None of your groups") || !strings.Contains(msg, "all-staff") || !strings.Contains(msg, "zed@corp.example") {
		t.Fatalf("no-group page %q, %v", msg, err)
	}
}
