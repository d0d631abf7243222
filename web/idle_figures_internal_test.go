package web

import (
	"math"
	"testing"

	"github.com/clearhouse/clearhouse/besteffort"
)

func TestFmtDecimalRoundsAndGroups(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		x      float64
		places int
		want   string
	}{
		{536.5, 1, "536.5"},
		{17990.16, 1, "17,990.2"},
		{1234567.891, 2, "1,234,567.89"},
		{-5.8733, 2, "-5.87"},
		{-0.004, 2, "0.00"},
		{0.25, 1, "0.3"},
		{-0.25, 1, "-0.3"},
		{999.96, 1, "1,000.0"},
		{480, 0, "480"},
		{math.NaN(), 1, "—"},
		{math.Inf(-1), 1, "—"},
	} {
		if got := fmtDecimal(c.x, c.places); got != c.want {
			t.Errorf("fmtDecimal(%v, %d) = %q, want %q", c.x, c.places, got, c.want)
		}
	}
}

// Each policy's figures carry the unit of what it measures.
func TestIdleAccountRowUnits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy, contribution, priority string
	}{
		{"direct-orig", "536.5 unit-hours × hours", "1.23 h²"},
		{"direct-rel", "536.5 unit-hours", "1.23 h"},
		{"direct-simpl", "536.5 unit-hours", "1.23 h"},
		{"fairshare", "536.5 unit-hours", "1.23 h"},
		{"round-robin", "536.5 unit-hours", "1"},
		{besteffort.PolicyAbacus, "536.5 unit-hours", "123.5% share"},
	} {
		r := idleAccountRow(besteffort.TeamPool{Pool: "us-east/ram", Policy: c.policy, Lent: 1234.56, Borrowed: 2048, Contribution: 536.5, Priority: 1.2345}, "GiB")
		if r.Contribution.Text != c.contribution || r.Priority.Text != c.priority || r.Lent.Text != "1,234.6 GiB" || r.Borrowed.Text != "2,048 GiB" || r.PolicyWords == "" {
			t.Errorf("%s: %+v", c.policy, r)
		}
	}
}
