package main

import (
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/store/storetest"
)

func TestUtilizationCommands(t *testing.T) {
	db := storetest.MigratedFile(t) // migrate then finds nothing pending
	if code, _, errOut := runCLI(t, "", "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	code, out, errOut := runCLI(t, "", "utilization", "refresh", "--db", db)
	if code != 0 || !strings.Contains(out, "measured 0 pools") {
		t.Fatalf("refresh: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "", "utilization", "show", "--db", db)
	if code != 0 || !strings.Contains(out, "POOL") {
		t.Fatalf("show: %d %q", code, out)
	}
	code, _, errOut = runCLI(t, "", "utilization", "override", "--db", db, "--pool", "us-east/cpu", "--psi", "0.5", "--reason", "drain")
	if code == 0 || !strings.Contains(errOut, `no pool "us-east/cpu"`) {
		t.Fatalf("override of an unknown pool: %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "utilization", "policy", "--db", db, "--pool", "us-east/cpu", "--percentile", "80")
	if code == 0 || !strings.Contains(errOut, "percentile: must be one of 50, 90, 95 or 99") {
		t.Fatalf("bad percentile: %d %q", code, errOut)
	}
}
