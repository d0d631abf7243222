package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestTeamAndUserCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.db")
	if code, _, errOut := runCLI(t, "", "team", "add", "--id", "search", "--db", db); code == 0 || !strings.Contains(errOut, "clearhouse migrate") {
		t.Fatalf("team add on an unmigrated database: code %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "migrate", "--db", db); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI(t, "", "team", "add", "--id", "search", "--name", "Search", "--budget", "1,000", "--db", db)
	if code != 0 || !strings.Contains(out, "added team search (Search) with a budget of $1,000.00") {
		t.Fatalf("team add: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = runCLI(t, "", "team", "add", "--id", "search", "--db", db); code == 0 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("duplicate team: %d %q", code, errOut)
	}
	code, out, _ = runCLI(t, "", "team", "list", "--db", db)
	if code != 0 || !strings.Contains(out, "search") {
		t.Fatalf("team list: %d %q", code, out)
	}
	code, out, errOut = runCLI(t, "long enough password\n", "user", "add", "--email", "ana@x.io", "--role", "owner", "--team", "search", "--password-stdin", "--db", db)
	if code != 0 || !strings.Contains(out, "added ana@x.io (owner of team search)") || strings.Contains(out, "password:") {
		t.Fatalf("user add: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "", "user", "add", "--email", "fin@x.io", "--role", "finance", "--db", db)
	if code != 0 || !strings.Contains(out, "password: ") {
		t.Fatalf("user add with a generated password: %d %q", code, out)
	}
	if code, _, errOut = runCLI(t, "", "user", "add", "--email", "bob@x.io", "--role", "member", "--db", db); code == 0 || !strings.Contains(errOut, "team") {
		t.Fatalf("member without a team: %d %q", code, errOut)
	}
	code, out, _ = runCLI(t, "", "user", "token", "--email", "ana@x.io", "--db", db)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasPrefix(lines[len(lines)-1], "chu_") {
		t.Fatalf("user token: %d %q", code, out)
	}
	if code, _, _ = runCLI(t, "", "user", "token", "--email", "nobody@x.io", "--db", db); code == 0 {
		t.Fatal("a token for an unknown user")
	}
}
