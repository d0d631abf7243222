package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/store/storetest"
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

// The command line takes the same amounts as the web forms and the JSON API (one
// parser, ledger.ParseMoney; web's TestEverySurfaceTakesTheSameAmounts): "$1" and
// "1,000.00" are budgets, ".5" and "1." are refused naming the flag.
func TestTeamAddTakesTheSameAmountsAsEverySurface(t *testing.T) {
	db := storetest.MigratedFile(t) // migrate then finds nothing pending
	if code, out, errOut := runCLI(t, "", "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: %d %s%s", code, out, errOut)
	}
	i := 0
	for in, ok := range map[string]bool{"1000": true, "1,000.00": true, "$1": true, "$1,000.5": true, "0.5": true, "+3": true,
		".5": false, "1.": false, "$.5": false, "1,00": false, "1e3": false, "$-5": false} {
		i++
		code, _, errOut := runCLI(t, "", "team", "add", "--db", db, "--id", fmt.Sprintf("t%d", i), "--budget", in)
		if (code == 0) != ok || (!ok && (!strings.Contains(errOut, "--budget: ") || !strings.Contains(errOut, "is not an amount of dollars"))) {
			t.Errorf("team add --budget %q: exit %d %s, want accepted %v", in, code, errOut, ok)
		}
	}
}
