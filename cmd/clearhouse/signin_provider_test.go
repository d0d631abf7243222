package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/identity/oidctest"
)

// TestBrowserSignInThroughProvider: with passwords off, a person signs in in Chromium
// through the real OpenID Provider (tools/oidc) and lands in the market with the team
// and role their group maps to; a person with no mapped group gets a page saying so.
func TestBrowserSignInThroughProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test")
	}
	ctx := newBrowser(t)
	addr := oidctest.FreeAddr(t)
	redirect := "http://" + addr + "/login/oidc/callback"
	p := oidctest.Start(t, redirect,
		oidctest.User{Subject: "ana", Email: "ana@corp.example", Name: "Ana Lopes", Groups: []string{"all-staff", "search-owners"}},
		oidctest.User{Subject: "zed", Email: "zed@corp.example", Name: "Zed", Groups: []string{"all-staff"}})
	groups := filepath.Join(t.TempDir(), "groups.yaml")
	if err := os.WriteFile(groups, []byte("claim: groups\nrules:\n  - {group: search-owners, role: owner, team: search}\n  - {group: ops, role: operator}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Addr: addr, DB: filepath.Join(t.TempDir(), "e2e.db"), Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute,
		SignIn: SignInConfig{Issuer: p.Issuer, ClientID: oidctest.ClientID, ClientSecret: oidctest.ClientSecret, Scopes: []string{"profile", "email"},
			RedirectURL: redirect, GroupsFile: groups, NoPasswordSignIn: true}}
	// The real clock: the provider's tokens carry real times.
	app := NewApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
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
	screenshot(t, ctx, "provider-signed-in")
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
	screenshot(t, ctx, "provider-no-group")
	msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=provider-refused]`)))
	if err != nil || !strings.Contains(msg, "None of your groups") || !strings.Contains(msg, "all-staff") || !strings.Contains(msg, "zed@corp.example") {
		t.Fatalf("no-group page %q, %v", msg, err)
	}
}

func TestSignInFlagsAreValidated(t *testing.T) {
	dir := t.TempDir()
	groups, secret := filepath.Join(dir, "groups.yaml"), filepath.Join(dir, "secret")
	if err := os.WriteFile(groups, []byte("rules:\n  - {group: ops, role: operator}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := SignInConfig{Issuer: "https://idp.example.com", ClientID: "clearhouse", ClientSecretFile: secret, GroupsFile: groups}
	for _, tc := range []struct {
		change    func(*SignInConfig)
		publicURL string
		want      string
	}{
		{func(c *SignInConfig) { *c = SignInConfig{NoPasswordSignIn: true} }, "", "--no-password-sign-in needs --oidc-issuer"},
		{func(c *SignInConfig) { c.Issuer = "idp.example.com" }, "https://ch.example.com", "--oidc-issuer"},
		{func(c *SignInConfig) { c.ClientID = "" }, "https://ch.example.com", "--oidc-client-id"},
		{func(c *SignInConfig) { c.ClientSecretFile = "" }, "https://ch.example.com", "CLEARHOUSE_OIDC_CLIENT_SECRET"},
		{func(c *SignInConfig) { c.ClientSecretFile = secret + ".missing" }, "https://ch.example.com", "--oidc-client-secret-file"},
		{func(c *SignInConfig) {}, "", "--oidc-redirect-url: required"},
		{func(c *SignInConfig) { c.GroupsFile = "" }, "https://ch.example.com", "--oidc-groups: required"},
		{func(c *SignInConfig) { c.GroupsFile = secret }, "https://ch.example.com", "--oidc-groups"},
	} {
		c := good
		tc.change(&c)
		if err := c.Validate(tc.publicURL); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c, err, tc.want)
		}
	}
	w, err := good.web("https://ch.example.com/")
	if err != nil || w.ClientSecret != "s3cret" || w.RedirectURL != "https://ch.example.com/login/oidc/callback" || w.Mapping.Claim != "groups" {
		t.Fatalf("good: %v %v", w, err)
	}
	good.ClientSecret = "from-the-environment"
	for _, printed := range []string{fmt.Sprint(w), fmt.Sprintf("%+v", w), fmt.Sprint(good), fmt.Sprintf("%v", Config{SignIn: good})} {
		if strings.Contains(printed, "s3cret") || strings.Contains(printed, "from-the-environment") {
			t.Errorf("printed configuration shows the client secret: %s", printed)
		}
	}
}

// serve takes the client secret from CLEARHOUSE_OIDC_CLIENT_SECRET and never prints it.
func TestServeTakesTheClientSecretFromTheEnvironment(t *testing.T) {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", t.TempDir() + "/c.db", "--public-url", "https://ch.example.com",
		"--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "clearhouse"}
	code, _, errOut := runCLI(t, "", args...)
	if code == 0 || !strings.Contains(errOut, "CLEARHOUSE_OIDC_CLIENT_SECRET") {
		t.Fatalf("no secret: code %d, stderr %q", code, errOut)
	}
	t.Setenv("CLEARHOUSE_OIDC_CLIENT_SECRET", "sekrit-from-env")
	code, out, errOut := runCLI(t, "", args...)
	if code == 0 || !strings.Contains(errOut, "--oidc-groups: required") {
		t.Fatalf("secret from the environment, no mapping: code %d, stderr %q", code, errOut)
	}
	if strings.Contains(out+errOut, "sekrit-from-env") {
		t.Fatalf("serve printed the client secret: %q %q", out, errOut)
	}
}
