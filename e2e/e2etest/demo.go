package e2etest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// DemoConfig is the configuration the browser tests run the demo with, on the
// SQLite file db.
func DemoConfig(db string) server.Config {
	return server.Config{Addr: "127.0.0.1:0", DB: db, Migrate: true, LoginRate: 100, Demo: true,
		Tick: time.Hour, AuctionEvery: 24 * time.Hour, AuctionWindow: time.Hour, PreviewEvery: 5 * time.Minute}
}

// demoTemplate is a SQLite file the demo was seeded into once per test binary, at
// storetest.Epoch with DemoConfig, and the logins the seeding printed. Seeding took
// about 10 s a test; a copy of the file holds the same market and passwords.
var demoTemplate struct {
	once   sync.Once
	dir    string
	path   string
	logins map[string]string
	err    error
}

// seedDemoTemplate seeds demoTemplate: the production wiring's services and demo
// seeding (server.App.OpenServices), without jobs or listeners, then the database closed.
func seedDemoTemplate() error {
	dir, err := os.MkdirTemp("", "clearhouse-demo-template-")
	if err != nil {
		return err
	}
	demoTemplate.dir, demoTemplate.path = dir, filepath.Join(dir, "demo.db")
	// Seeded on a migrated copy: the wiring's migration finds nothing pending.
	if err := storetest.WriteMigrated(demoTemplate.path); err != nil {
		return err
	}
	app := server.NewApp(DemoConfig(demoTemplate.path), Quiet(), storetest.NewClock(time.Time{}).Now)
	var out bytes.Buffer
	app.DemoOut = &out
	if err := app.OpenServices(context.Background()); err != nil {
		return err
	}
	// Everything into the main file, so that a copy of the file alone is the market.
	if err := app.DB.Write.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error; err != nil {
		return errors.Join(err, app.DB.Close())
	}
	if err := app.DB.Close(); err != nil {
		return err
	}
	if st, err := os.Stat(demoTemplate.path + "-wal"); err == nil && st.Size() > 0 {
		return errors.New("the closed demo template left a write-ahead log: copying the file alone would lose it")
	}
	demoTemplate.logins = ParseLogins(out.String())
	if len(demoTemplate.logins) < 4 {
		return fmt.Errorf("the demo printed no logins:\n%s", out.String())
	}
	return nil
}

// removeDemoTemplate removes the template's directory, if a test seeded it.
func removeDemoTemplate() {
	if demoTemplate.dir != "" {
		os.RemoveAll(demoTemplate.dir)
	}
}

// ParseLogins reads the logins the demo prints (email password role) into email ->
// password.
func ParseLogins(out string) map[string]string {
	logins := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && strings.Contains(f[0], "@") {
			logins[f[0]] = f[1]
		}
	}
	return logins
}

// CopyDemo copies the seeded demo template into the test's own directory and returns
// the copy's path and the demo logins (a map of the test's own). Under -short it
// skips the test: seeding the demo takes 10 s or more.
func CopyDemo(t *testing.T) (string, map[string]string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the test needs the seeded demo market")
	}
	demoTemplate.once.Do(func() { demoTemplate.err = seedDemoTemplate() })
	if demoTemplate.err != nil {
		t.Fatalf("seeding the demo template: %v", demoTemplate.err)
	}
	data, err := os.ReadFile(demoTemplate.path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, maps.Clone(demoTemplate.logins)
}

// OpenDemo runs the production wiring with cfg (whose DB is a copy of the demo) on
// clock, as `serve --demo` on a database that holds the demo, and closes it when the
// test ends.
func OpenDemo(t *testing.T, cfg server.Config, clock *storetest.Clock) *server.App {
	t.Helper()
	app := server.NewApp(cfg, Quiet(), clock.Now) // the demo finds its market: nothing printed
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

// StartDemo runs the production wiring with --demo on a copy of the seeded demo and
// returns the app and the demo logins (email -> password).
func StartDemo(t *testing.T) (*server.App, map[string]string) {
	t.Helper()
	app, logins, _ := StartDemoClock(t)
	return app, logins
}

// StartDemoClock is StartDemo with the clock the test moves.
func StartDemoClock(t *testing.T) (*server.App, map[string]string, *storetest.Clock) {
	t.Helper()
	db, logins := CopyDemo(t)
	clock := storetest.NewClock(time.Time{})
	return OpenDemo(t, DemoConfig(db), clock), logins, clock
}

// SignIn signs in on the page at base with email and password in the browser tab ctx.
func SignIn(t *testing.T, ctx context.Context, base, email, password string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-email]`), email),
		chromedp.SendKeys(chromedp.CSS(`[data-testid=field-password]`), password),
		chromedp.Click(chromedp.CSS(`[data-testid=login-submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=viewer]`)),
	)
	if err != nil {
		t.Fatalf("sign in as %s: %v", email, err)
	}
}

// SignOut signs out in the browser tab ctx, on a page of the market, and waits for
// the sign-in page: the next SignIn in the tab is a new session of its own, without
// the cost of a new browser context (a renderer process or two).
func SignOut(t *testing.T, ctx context.Context) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Submit(chromedp.CSS(`form[action="/logout"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=login-submit]`)),
	)
	if err != nil {
		t.Fatalf("sign out: %v", err)
	}
}

// Text is the text of the element sel selects in the browser tab ctx.
func Text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("%s: %v", sel, err)
	}
	return s
}
