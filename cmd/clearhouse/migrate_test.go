package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrateAnEmptySQLiteFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "new.db")
	code, out, errOut := runCLI(t, "", "migrate", "--db", db, "--status")
	if code != 0 || !strings.Contains(out, "00001_identity.sql") || !strings.Contains(out, "pending") {
		t.Fatalf("status before: code %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "migrate", "--db", db)
	if code != 0 || !strings.Contains(out, "applied 00001_identity.sql") {
		t.Fatalf("migrate: code %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "", "migrate", "--db", db)
	if code != 0 || !strings.Contains(out, "up to date") {
		t.Fatalf("second migrate: code %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "migrate", "--db", db, "--status")
	if code != 0 || strings.Contains(out, "pending") {
		t.Fatalf("status after: code %d\n%s", code, out)
	}
}

func TestMigrateRefusesABadAddress(t *testing.T) {
	code, _, errOut := runCLI(t, "", "migrate", "--db", "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if code == 0 || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

func TestTheScheduledJobRunsOnceFromTheCommandLine(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tick.db")
	if code, out, errOut := runCLI(t, "", "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, "", "auction", "tick", "--db", db, "--auction-every", "0")
	if code != 0 || !strings.Contains(out, "closed []") || !strings.Contains(out, "reservations charged 0.00, ended []") {
		t.Fatalf("tick: code %d\n%s%s", code, out, errOut)
	}
}
