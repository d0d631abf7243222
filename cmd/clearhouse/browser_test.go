package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// startApp runs the production wiring on a fresh SQLite file and a free port.
func startApp(t *testing.T, clock *storetest.Clock) *App {
	t.Helper()
	cfg := Config{Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "e2e.db"), Migrate: true, LoginRate: 100, Tick: time.Hour, PreviewEvery: time.Minute}
	app := NewApp(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), clock.Now)
	if err := app.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		app.Close(ctx)
	})
	return app
}

// sharedBrowser is the one headless Chromium the package's browser tests share:
// the first newBrowser starts it, closeSharedFixtures (from TestMain) stops it.
// Starting Chromium took about 8 s a test; a browser context is cheap.
var sharedBrowser struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab; tests open their own browser contexts from it
	cancel func()
	dir    string // its user data directory
	err    error
}

// newBrowser opens a tab in a browser context of its own (cookies, storage and cache
// of its own, disposed when the test ends) in the package's shared headless Chromium.
// Chromium is required in CI (.ci/run installs it); elsewhere a missing browser skips
// the browser tests, and so does -short. Tabs of the shared browser are safe to use
// in parallel: the browser tests call t.Parallel, each with its own app, copy of the
// demo and clock.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: browser tests drive Chromium against the whole app")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	b := &sharedBrowser
	b.once.Do(func() { b.err = startSharedBrowser(path) })
	if b.err != nil {
		t.Fatalf("starting chromium: %v", b.err)
	}
	ctx, cancelC := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	// A guard against a hung browser, not a speed check: under the race detector on
	// a loaded 2-core machine, the demo and its first pages take tens of seconds.
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC() })
	return ctx
}

// startSharedBrowser starts Chromium at path as sharedBrowser.
func startSharedBrowser(path string) error {
	b := &sharedBrowser
	dir, err := os.MkdirTemp("", "clearhouse-chromium-")
	if err != nil {
		return err
	}
	b.dir = dir
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	b.ctx, b.cancel = ctx, func() { cancelC(); cancelA() }
	return chromedp.Do(ctx) // starts the browser
}

// closeSharedFixtures stops the shared browser and removes the seeded demo template,
// whichever of them the tests started.
func closeSharedFixtures() {
	if b := &sharedBrowser; b.cancel != nil {
		b.cancel()
		os.RemoveAll(b.dir)
	}
	removeDemoTemplate()
}

// screenshot saves a full-page PNG under $CLEARHOUSE_SCREENSHOTS, when it is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("CLEARHOUSE_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	app := startApp(t, storetest.NewClock(time.Time{}))
	bg := context.Background()
	if _, err := app.Market.AddTeam(bg, exchange.NewTeam{ID: "search", Name: "Search"}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Identity.AddUser(bg, identity.NewUser{Email: "ana@x.io", Role: identity.RoleMember, TeamID: "search", Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(app.Server.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-email]`), "ana@x.io"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-password]`), "not the password"),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-error]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "login-error")
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-password]`), "correct horse battery"),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=viewer]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	who, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-testid=viewer]`)))
	if err != nil || !strings.Contains(who, "ana@x.io") || !strings.Contains(who, "search") {
		t.Fatalf("viewer %q, %v", who, err)
	}
	screenshot(t, ctx, "market")
}
