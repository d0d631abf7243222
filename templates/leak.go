package templates

import (
	"regexp"
	"strings"
)

// templSource matches templ syntax that reached a page as text: a component call
// (`@LimitText(o.Kind, *b.Limit)`) or a Go expression in templ braces
// (`{ o.Created }`). An email address (ana@x.io) is not a call: a call's name is
// followed by "(" before any space or dot-less letter run ends.
var templSource = regexp.MustCompile(`@[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\(|\{ [A-Za-z_"][^{}<>\n]* \}`)

// scriptOrStyle is the content of script and style elements, which may hold braces.
var scriptOrStyle = regexp.MustCompile(`(?is)<(script|style)\b.*?</(script|style)>`)

// LeakedTemplateSource returns each piece of templ source in a rendered page or
// fragment (text or attribute values, outside script and style elements), or
// nothing when the page holds none. Tests run every page they fetch through it.
func LeakedTemplateSource(html string) []string {
	html = scriptOrStyle.ReplaceAllString(html, "")
	var leaks []string
	for _, m := range templSource.FindAllString(html, -1) {
		leaks = append(leaks, strings.TrimSpace(m))
	}
	return leaks
}
