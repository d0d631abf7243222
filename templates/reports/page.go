// Package reports renders the standalone HTML reports of the command line's
// experiments: `clearhouse simulate` (the reservation scheduler's algorithms against
// the offline upper bound) and `clearhouse share simulate` (sharing policies against
// the Shapley value). A report is one file with nothing external: its stylesheet is
// inlined and every chart is an inline SVG drawn by the pages' chart components
// (templates.Chart and templates.Bars), so the reports and the pages have one chart
// engine. The command builds a Simulation or a Share from its result and writes
// what RenderSimulation or RenderShare returns.
package reports

import (
	_ "embed"
	"io/fs"

	"github.com/clearhouse/clearhouse/static"
)

//go:embed report.css
var reportCSS string

// reportStyle is the application's stylesheet, so the charts look as on the pages,
// and the report's own layout after it: a report is one file with nothing external.
func reportStyle() string {
	app, err := fs.ReadFile(static.FS, "app.css")
	if err != nil {
		panic("the embedded application stylesheet is missing: " + err.Error())
	}
	return "<style>\n" + string(app) + "\n" + reportCSS + "</style>"
}
