package main

import (
	"strings"
	"testing"
)

// `clearhouse capacity override` sets an override with a reason and an expiry (a
// bad one is refused naming the field), `show` lists it as the effective capacity,
// and --clear ends it.
func TestCapacityCommands(t *testing.T) {
	m := newAgentMarket(t)
	code, _, errOut := runCLI(t, "", "capacity", "override", "--db", m.dsn, "--pool", "us-east/cpu", "--units", "80", "--reason", " ")
	if code == 0 || !strings.Contains(errOut, "reason: say why") {
		t.Fatalf("override without a reason: %d %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "capacity", "override", "--db", m.dsn, "--pool", "us-east/cpu", "--units", "401", "--reason", "x")
	if code == 0 || !strings.Contains(errOut, "units: 401 is more than 4 times") {
		t.Fatalf("override beyond 4 times the configured capacity: %d %q", code, errOut)
	}
	code, out, errOut := runCLI(t, "", "capacity", "override", "--db", m.dsn, "--pool", "us-east/cpu", "--units", "80", "--reason", "rack 3 down", "--by", "op@x.io")
	if code != 0 || !strings.Contains(out, "us-east/cpu: capacity 80 until") {
		t.Fatalf("override: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "", "capacity", "show", "--db", m.dsn)
	if code != 0 || !strings.Contains(out, "us-east/cpu  80         override  100") || !strings.Contains(out, "by op@x.io (rack 3 down)") {
		t.Fatalf("show: %d\n%s", code, out)
	}
	code, _, _ = runCLI(t, "", "capacity", "override", "--db", m.dsn, "--pool", "us-east/cpu", "--clear", "--by", "op@x.io")
	if code != 0 {
		t.Fatalf("clear: %d", code)
	}
	if _, out, _ = runCLI(t, "", "capacity", "show", "--db", m.dsn); !strings.Contains(out, "configured") || strings.Contains(out, "override  ") {
		t.Fatalf("show after clearing:\n%s", out)
	}
}
