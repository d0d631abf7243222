package e2etest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// sharedBrowser is the one headless Chromium a test binary's browser tests share:
// the first NewBrowser starts it, Main stops it after the tests.
// Starting Chromium took about 8 s a test; a browser context is cheap.
var sharedBrowser struct {
	once   sync.Once
	ctx    context.Context // the browser's first tab; tests open their own browser contexts from it
	cancel func()
	dir    string // its user data directory
	err    error
}

// NewBrowser opens a tab in a browser context of its own (cookies, storage and cache
// of its own, disposed when the test ends) in the test binary's shared headless Chromium.
// Chromium is required in CI (.ci/run installs it); elsewhere a missing browser skips
// the browser tests, and so does -short. Tabs of the shared browser are safe to use
// in parallel: the browser tests call t.Parallel, each with its own app, copy of the
// demo and clock.
func NewBrowser(t *testing.T) context.Context {
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
	quietTab(t, ctx)
	return ctx
}

// quietTab opens the tab ctx and turns off the protocol domains chromedp enables on
// every tab that the browser tests never read: Network (an event for each request,
// response and chunk of data, with its headers), CSS (the renderer tracks every
// style sheet for the inspector and reports each) and Log. chromedp's own waits
// read only the Page, Runtime and DOM domains' events; only its RunResponse and
// NavigateResponse, which the tests do not use, read the Network domain's.
func quietTab(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, domain := range []cdp.Command[cdp.Empty, cdp.Empty]{network.Disable, css.Disable, cdplog.Disable} {
		if _, err := chromedp.Call(ctx, domain, cdp.Empty{}); err != nil {
			t.Fatalf("%s: %v", domain.Method, err)
		}
	}
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
		// No spare renderer: Chromium keeps one process started ahead for the browser
		// context that navigated last, so with the tests' contexts navigating in turn it
		// started and killed one about every second (160 to 200 renderer processes in
		// a run of e2e/browser, 38 without). Chromium adds its own PaintHolding to the list.
		// No omnibox popups: each browser context's (headless, never shown) window
		// loaded two WebUI pages for its address bar's popup,
		// chrome://omnibox-popup.top-chrome/ and its AI-mode variant, in a renderer of
		// their own: about 1.3 CPU-s a context, more than the app's pages in the tours
		// with three logins. The tests' pages render the same (screenshots byte for byte).
		// No new document host for each navigation (RenderDocument) and no
		// back-forward cache (the tests never go back): each page load in a tab
		// reuses its frame instead of building a new one and keeping the old page
		// alive. A throwaway probe, 40 loads of four demo pages in one tab, 5 and 3
		// runs alternated at a load of 16 to 25: Chromium's median 0.136 CPU-s a
		// load with both, 0.092 without (0.121 with the cache alone off).
		chromedp.Flag("disable-features", "SpareRendererForSitePerProcess,WebUIOmniboxPopup,WebUIOmniboxAimPopup,RenderDocument"),
		chromedp.Flag("disable-back-forward-cache", true),
		// The GPU process's work (software compositing: --disable-gpu) on a thread of
		// the browser process instead of a process of its own: less IPC, the same pixels.
		chromedp.Flag("in-process-gpu", true),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	b.ctx, b.cancel = ctx, func() { cancelC(); cancelA() }
	return chromedp.Do(ctx) // starts the browser
}

// closeBrowser stops the shared browser, if a test started it.
func closeBrowser() {
	if b := &sharedBrowser; b.cancel != nil {
		b.cancel()
		os.RemoveAll(b.dir)
	}
}

// CloseTab closes the tab ctx that NewBrowser opened, and its browser context, when
// the test is done with it before it ends: an open tab keeps its renderer ticking.
func CloseTab(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Cancel(ctx); err != nil {
		t.Fatalf("closing a tab: %v", err)
	}
}

// Screenshot saves a full-page PNG under $CLEARHOUSE_SCREENSHOTS, when it is set.
func Screenshot(t *testing.T, ctx context.Context, name string) {
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
