package exchange

import (
	"testing"

	"github.com/clearhouse/clearhouse/ledger"
)

// whyUnsupported names the condition the prices fail, with the amounts at them:
// a winner whose bundle costs more than its limit, a winner with more surplus in
// another bundle, a loser with a bundle under its limit, a seller receiving less
// than it asks; and "" when, at the prices rounded to the micro-dollar, the order
// is supported after all.
func TestWhyUnsupported(t *testing.T) {
	prices := map[string]float64{"a": 2, "b": 5}
	view := func(limits []ledger.Money, bundles ...Bundle) OrderView {
		return OrderView{Order: Order{ID: 7, TeamID: "t"}, Spec: OrderSpec{Team: "t", Bundles: bundles, Limits: limits}}
	}
	d := ledger.Dollar
	for _, c := range []struct {
		name            string
		v               OrderView
		won             int
		why             string
		cost, otherCost ledger.Money
		other           bool
	}{
		{"winner too dear", view([]ledger.Money{15 * d}, Bundle{"a": 10}), 0, "too_dear", 20 * d, 0, false},
		{"winner prefers another", view([]ledger.Money{25 * d, 30 * d}, Bundle{"a": 10}, Bundle{"b": 2}), 0, "prefers_other", 20 * d, 10 * d, true},
		{"winner supported", view([]ledger.Money{25 * d, 10 * d}, Bundle{"a": 10}, Bundle{"b": 2}), 0, "", 20 * d, 0, false},
		{"loser wants", view([]ledger.Money{25 * d, 12 * d}, Bundle{"a": 10}, Bundle{"b": 2}), -1, "wants", 0, 20 * d, true},
		{"loser supported", view([]ledger.Money{19 * d}, Bundle{"a": 10}), -1, "", 0, 20 * d, true},
		{"seller receives too little", view([]ledger.Money{-25 * d}, Bundle{"a": -10}), 0, "too_dear", -20 * d, 0, false},
	} {
		u, err := whyUnsupported(c.v, c.won, prices)
		if err != nil {
			t.Fatal(err)
		}
		if u.Why != c.why || u.Won != (c.won >= 0) || u.Cost != c.cost || u.OtherCost != c.otherCost || (u.Other != nil) != c.other {
			t.Errorf("%s: %+v, want why %q, cost %s, other cost %s", c.name, u, c.why, c.cost, c.otherCost)
		}
	}
}
