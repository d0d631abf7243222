package main

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
