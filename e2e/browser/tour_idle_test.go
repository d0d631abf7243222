package browser

import "testing"

// TestBrowserIdlePagesFitNarrowScreens opens the idle-capacity pages of the demo
// market (operators' settings, auctions and fairness reports; a member's jobs and
// team accounts) at 1400 and 400 px: none may scroll sideways, not even inside a
// table's frame, since every table there stacks into labelled rows.
func TestBrowserIdlePagesFitNarrowScreens(t *testing.T) {
	t.Parallel()
	pagesFitScreens(t, []pagesOf{
		{"operator@example.com", []string{"/operate/idle"}},
		{"member@search.example.com", []string{"/best-effort", "/team"}},
	}, true)
}
