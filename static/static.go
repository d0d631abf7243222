// Package static embeds the CSS, JavaScript and images the web application serves.
package static

import "embed"

// FS holds every file of this folder but the Go sources.
//
//go:embed *.css *.svg *.js
var FS embed.FS
