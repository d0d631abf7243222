package browser

import "testing"

// TestBrowserEveryPageForEveryRole opens every page of the demo market as each
// role (a member, an owner, finance, an operator) at 1400 and 400 px: none may
// print templ source as text, none may show an amount its unit prices do not
// give (pagesFitScreens multiplies out every derivation shown), and none may scroll
// the whole page sideways.
func TestBrowserEveryPageForEveryRole(t *testing.T) {
	t.Parallel()
	everyone := []string{"/", "/auctions", "/auctions/1", "/auctions/7", "/auctions/8", "/search?q.cpu=8", "/search?q.cpu=lots", "/help", "/notifications"}
	team := []string{"/orders", "/orders/new", "/orders/new?q.cpu=10&cluster=us-east&cluster=eu-west&step=2", "/orders/new?q.cpu=10&cluster=us-east&cluster=eu-west&step=2&limit_mode=each",
		"/orders/offer", "/orders/move", "/team", "/team?from=2026-12-01&to=2026-01-01", "/reservations", "/best-effort", "/spend"}
	pagesFitScreens(t, []pagesOf{
		{"member@search.example.com", append(append([]string{}, everyone...), team...)},
		{"owner@search.example.com", append(append(append([]string{}, everyone...), team...), "/approvals")},
		{"finance@example.com", append(append([]string{}, everyone...), "/finance", "/finance/teams/search", "/finance/teams/ml", "/finance/best-effort", "/finance/auctions/1", "/finance/auctions/7", "/spend", "/spend?from=2026-03&to=2025-01", "/audit", "/audit?action=budget.")},
		{"operator@example.com", append(append([]string{}, everyone...), "/operate", "/operate/pools/us-east/cpu", "/operate/curves/standard", "/operate/trades",
			"/operate/stats", "/operate/schedule", "/operate/shapes", "/operate/access", "/operate/idle", "/operate/auctions/8/close", "/audit")},
	}, false)
}
