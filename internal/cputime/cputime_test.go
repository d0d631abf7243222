//go:build unix

package cputime_test

import (
	"testing"

	"github.com/clearhouse/clearhouse/internal/cputime"
)

// Used grows with work done on the CPU and never falls.
func TestUsedGrowsWithWork(t *testing.T) {
	before := cputime.Used()
	if before <= 0 {
		t.Fatalf("CPU time used %v, want more than 0 after the test binary's start", before)
	}
	x := 0
	for after := before; after == before; after = cputime.Used() {
		for i := range 1_000_000 {
			x += i % 7
		}
	}
	if after := cputime.Used(); after < before {
		t.Fatalf("CPU time fell from %v to %v (%d)", before, after, x)
	}
}
