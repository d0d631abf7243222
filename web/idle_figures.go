package web

import (
	"strconv"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
)

// fmtDecimal writes x rounded to places decimals (halves away from zero) with
// thousands separators, as groupDigits writes whole numbers: "17,990.2", "-5.87",
// "0.0"; never "-0.0". NaN and infinities are "—" (moneyfmt.Decimal).
func fmtDecimal(x float64, places int) string { return moneyfmt.Decimal(x, places) }

// idlePolicyWords says in plain words how each sharing policy picks the next team,
// beside the policy's name (the identifier operators select).
var idlePolicyWords = map[string]string{
	"direct-orig":      "DirectContr (contribution minus use); earlier work counts more",
	"direct-rel":       "DirectContr (contribution minus use); work counts less the longer it waited",
	"direct-simpl":     "DirectContr (contribution minus use), in unit-hours",
	"fairshare":        "use in proportion to quota held",
	"round-robin":      "teams take turns",
	fleet.PolicyAbacus: "budget auction",
}

// idleUnits is what a pool's contribution and utility, and a team's priority, are
// measured in under policy (package sharing, "Time and units"): the executed
// surface in unit-hours, or under ORIG and REL unit-hours times hours; a
// DirectContr or fairshare priority is per unit of the pool's capacity, so in hours
// (hours squared under ORIG and REL). Round robin's priority is an order (minus
// the number of the team's last start) and abacus's a share: no unit here.
func idleUnits(policy string) (amount, priority string) {
	switch policy {
	case "direct-orig", "direct-rel":
		return "unit-hours × hours", "h²"
	case "direct-simpl", "fairshare":
		return "unit-hours", "h"
	}
	return "unit-hours", ""
}

// idleFigure is x rounded to places with its unit, and every digit on hover.
func idleFigure(x float64, places int, unit string) templates.Figure {
	f := templates.Figure{Text: fmtDecimal(x, places), Exact: strconv.FormatFloat(x, 'f', -1, 64)}
	if unit != "" {
		f.Text += " " + unit
		f.Exact += " " + unit
	}
	return f
}

// idleAccountRow is a team's account in one pool as its pages show it; unit is the
// pool's unit ("core").
func idleAccountRow(t fleet.TeamPool, unit string) templates.IdleAccountRow {
	amount, prio := idleUnits(t.Policy)
	r := templates.IdleAccountRow{Pool: t.Pool, Policy: t.Policy, PolicyWords: idlePolicyWords[t.Policy], PolicyTitle: idlePolicyWords[t.Policy],
		Lent: idleFigure(t.Lent, 1, unit), Borrowed: idleFigure(t.Borrowed, 0, unit),
		Contribution: idleFigure(t.Contribution, 1, amount), Utility: idleFigure(t.Utility, 1, amount)}
	switch t.Policy {
	case "round-robin": // minus the sequence number of the team's last start: a whole number
		r.Priority = idleFigure(t.Priority, 0, "")
	case fleet.PolicyAbacus: // the team's jobs' share of the units that free up
		r.Priority = templates.Figure{Text: fmtDecimal(100*t.Priority, 1) + "% share", Exact: strconv.FormatFloat(100*t.Priority, 'f', -1, 64) + "%"}
	default:
		r.Priority = idleFigure(t.Priority, 2, prio)
	}
	return r
}
