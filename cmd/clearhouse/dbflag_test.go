package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The commands that open the database. Each reads it with dbFlag, from the root's
// one persistent --db.
var dbCommands = []string{
	"agent token", "auction preview", "auction close", "auction tick", "backup", "restore", "migrate",
	"notify send", "serve", "share fairness", "share history", "team add", "team list",
	"user add", "user password", "user disable", "user enable", "user token", "user token list", "user token revoke",
	"utilization refresh", "utilization show", "utilization policy", "utilization override", "verify",
}

// --db is declared once, on the root, with one default: no command declares its own.
func TestDBFlagIsOneRootFlag(t *testing.T) {
	root := newRootCmd()
	db := root.PersistentFlags().Lookup("db")
	if db == nil || db.DefValue != defaultDB || defaultDB != "clearhouse.db" {
		t.Fatalf("the root's --db: %+v", db)
	}
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		n++
		if c != root && c.LocalFlags().Lookup("db") != nil {
			t.Errorf("%s declares its own --db", c.CommandPath())
		}
		if c.Flag("db") != db {
			t.Errorf("%s: --db is not the root's", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if n < len(dbCommands) {
		t.Fatalf("walked %d commands", n)
	}
}

var errStop = errors.New("stop before running")

// dbSeen runs the command at path with args and returns the database it would
// open: its PreRunE (after flags are parsed and CLEARHOUSE_* bound, before required
// flags are checked) records dbFlag and stops it.
func dbSeen(t *testing.T, path string, args ...string) string {
	t.Helper()
	root := newRootCmd()
	c, _, err := root.Find(strings.Fields(path))
	if err != nil || c.CommandPath() != "clearhouse "+path {
		t.Fatalf("%s: %v (found %s)", path, err, c.CommandPath())
	}
	var seen string
	c.Args = cobra.ArbitraryArgs
	c.PreRunE = func(cmd *cobra.Command, _ []string) error {
		seen = dbFlag(cmd)
		return errStop
	}
	root.SetArgs(append(strings.Fields(path), args...))
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	if err := root.ExecuteContext(context.Background()); !errors.Is(err, errStop) {
		t.Fatalf("%s: %v", path, err)
	}
	return seen
}

// Every command that opens the database sees the same default, CLEARHOUSE_DB when
// set, and --db over both; each one's help shows --db.
func TestDBFlagEveryCommandSeesTheSameDefault(t *testing.T) {
	t.Setenv("CLEARHOUSE_DB", "")
	os.Unsetenv("CLEARHOUSE_DB")
	for _, path := range dbCommands {
		if got := dbSeen(t, path); got != defaultDB {
			t.Errorf("%s: default %q, want %q", path, got, defaultDB)
		}
		if got := dbSeen(t, path, "--db", "/tmp/x.db"); got != "/tmp/x.db" {
			t.Errorf("%s --db /tmp/x.db: %q", path, got)
		}
		code, out, errOut := runCLI(t, "", append(strings.Fields(path), "--help")...)
		if code != 0 || !strings.Contains(out, "--db string") || !strings.Contains(out, `(default "clearhouse.db")`) {
			t.Errorf("%s --help: %d, no --db with its default: %s %s", path, code, out, errOut)
		}
	}
	t.Setenv("CLEARHOUSE_DB", "postgres://db.internal/ch")
	for _, path := range dbCommands {
		if got := dbSeen(t, path); got != "postgres://db.internal/ch" {
			t.Errorf("%s with CLEARHOUSE_DB: %q", path, got)
		}
		if got := dbSeen(t, path, "--db", "flag.db"); got != "flag.db" {
			t.Errorf("%s: --db does not win over CLEARHOUSE_DB: %q", path, got)
		}
	}
	if got := dbSeen(t, "team list", "--db=before.db"); got != "before.db" {
		t.Errorf("--db= form: %q", got)
	}
}

// Without --db, migrate, team add and team list all use clearhouse.db in the working
// directory; CLEARHOUSE_DB names another file, and --db may precede the command.
func TestDBFlagDefaultIsOneFile(t *testing.T) {
	t.Setenv("CLEARHOUSE_DB", "")
	os.Unsetenv("CLEARHOUSE_DB")
	dir := t.TempDir()
	t.Chdir(dir)
	if code, out, errOut := runCLI(t, "", "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, defaultDB)); err != nil {
		t.Fatalf("migrate without --db: %v", err)
	}
	if code, out, errOut := runCLI(t, "", "team", "add", "--id", "search"); code != 0 {
		t.Fatalf("team add: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "", "team", "list"); code != 0 || !strings.Contains(out, "search") {
		t.Fatalf("team list: %d %s %s", code, out, errOut)
	}
	other := filepath.Join(dir, "other.db")
	t.Setenv("CLEARHOUSE_DB", other)
	if code, out, errOut := runCLI(t, "", "migrate"); code != 0 {
		t.Fatalf("migrate with CLEARHOUSE_DB: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runCLI(t, "", "team", "list"); code != 0 || strings.Contains(out, "search") {
		t.Fatalf("team list of %s: %d %s", other, code, out)
	}
	// A persistent flag may come before the command too.
	if code, out, errOut := runCLI(t, "", "--db", defaultDB, "team", "list"); code != 0 || !strings.Contains(out, "search") {
		t.Fatalf("--db before the command: %d %s %s", code, out, errOut)
	}
}
