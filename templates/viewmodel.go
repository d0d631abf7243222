// Package templates holds the templ components of every page and the view models they
// render. Handlers in web build view models from domain results; components never see
// database rows.
package templates

// Page is what the layout needs on every page.
type Page struct {
	Title  string // the page's own title, shown in the tab and as the heading
	Active string // the nav item to highlight
	User   *Viewer
	CSRF   string // the session's CSRF token, put in every form
	Flash  *Flash
	Unread int64 // the viewer's unread notifications
}

// Viewer is the signed-in user as the layout shows them.
type Viewer struct {
	Email string
	Name  string
	Role  string // member, owner, finance, operator
	Team  string // team id, for members and owners
}

// Can reports whether the viewer has one of the roles.
func (v *Viewer) Can(roles ...string) bool {
	if v == nil {
		return false
	}
	for _, r := range roles {
		if v.Role == r {
			return true
		}
	}
	return false
}

// Flash is a one-time message shown at the top of a page after a redirect.
type Flash struct {
	Kind    string // ok, error, info
	Message string
}

// NavItem is one entry in the top navigation.
type NavItem struct {
	Key, Label, Href string
}

// Nav returns the navigation items the viewer may use.
func Nav(v *Viewer) []NavItem {
	items := []NavItem{{"market", "Market", "/"}, {"search", "Find resources", "/search"}}
	if v.Can("member", "owner") {
		items = append(items,
			NavItem{"orders", "Orders", "/orders"},
			NavItem{"reservations", "Reservations", "/reservations"},
			NavItem{"best-effort", "Best effort", "/best-effort"},
			NavItem{"team", "Team", "/team"})
	}
	if v.Can("owner") {
		items = append(items, NavItem{"approvals", "Approvals", "/approvals"})
	}
	if v.Can("finance") {
		items = append(items, NavItem{"finance", "Finance", "/finance"})
	}
	if v.Can("operator") {
		items = append(items, NavItem{"operate", "Operate", "/operate"}, NavItem{"schedule", "Scheduler", "/operate/schedule"},
			NavItem{"shapes", "Shapes", "/operate/shapes"},
			NavItem{"access", "Access", "/operate/access"}, NavItem{"idle", "Idle capacity", "/operate/idle"},
			NavItem{"spend", "Spend", "/spend"}) // finance reach it from the finance page
	}
	if v.Can("finance", "operator") {
		items = append(items, NavItem{"audit", "Audit trail", "/audit"})
	}
	return items
}

// FieldErrors maps a form field's name to the message about it.
type FieldErrors map[string]string
