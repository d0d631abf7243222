// Package migrations embeds Clearhouse's versioned SQL migrations, one folder per
// dialect. The two folders hold the same versions with the same tables and columns;
// only the SQL types differ. A migration, once released, is never edited: add a new one.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// FS returns the migrations for dialect ("sqlite" or "postgres").
func FS(dialect string) (fs.FS, error) {
	switch dialect {
	case "sqlite", "postgres":
		return fs.Sub(files, dialect)
	}
	return nil, fmt.Errorf("migrations: no migrations for dialect %q", dialect)
}
