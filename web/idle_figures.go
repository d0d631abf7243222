package web

import (
	"strconv"

	"github.com/clearhouse/clearhouse/besteffort"
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
	"direct-orig":           "DirectContr (contribution minus use); earlier work counts more",
	"direct-rel":            "DirectContr (contribution minus use); work counts less the longer it waited after release, less and less as time passes",
	"direct-simpl":          "DirectContr (contribution minus use), in unit-hours",
	"fairshare":             "use in proportion to quota held",
	"round-robin":           "teams take turns",
	besteffort.PolicyAbacus: "budget auction",
}

// idleUnits is what a pool's contribution and utility, and a team's priority, are
// measured in under policy (package sharing, "Time and units"): the executed
// surface in unit-hours (REL too: each unit-hour weighted by a fraction), or under
// ORIG unit-hours times hours; a DirectContr or fairshare priority is per unit of the
// pool's capacity, so in hours (hours squared under ORIG). Round robin's priority is an order (minus
// the number of the team's last start) and abacus's a share: no unit here.
func idleUnits(policy string) (amount, priority string) {
	switch policy {
	case "direct-orig":
		return "unit-hours × hours", "h²"
	case "direct-rel", "direct-simpl", "fairshare":
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
func idleAccountRow(t besteffort.TeamPool, unit string) templates.IdleAccountRow {
	amount, prio := idleUnits(t.Policy)
	r := templates.IdleAccountRow{Pool: t.Pool, Policy: t.Policy, PolicyWords: idlePolicyWords[t.Policy], PolicyTitle: idlePolicyWords[t.Policy],
		Lent: idleFigure(t.Lent, 1, moneyfmt.Unit(unit, t.Lent == 1)), Borrowed: idleFigure(t.Borrowed, 0, moneyfmt.Unit(unit, t.Borrowed == 1)),
		Contribution: idleFigure(t.Contribution, 1, amount), Utility: idleFigure(t.Utility, 1, amount)}
	switch t.Policy {
	case "round-robin": // minus the sequence number of the team's last start: a whole number
		r.Priority = idleFigure(t.Priority, 0, "")
	case besteffort.PolicyAbacus: // the team's jobs' share of the units that free up
		r.Priority = templates.Figure{Text: fmtDecimal(100*t.Priority, 1) + "% share", Exact: strconv.FormatFloat(100*t.Priority, 'f', -1, 64) + "%"}
	default:
		r.Priority = idleFigure(t.Priority, 2, prio)
	}
	r.Words = idleWords(t, unit)
	return r
}

// idleWords says what a team's account in one pool means, in its members' words:
// what it lends and borrows now, and whether its tasks go ahead of others' there.
// Empty when the team has neither lent nor used anything in the pool.
func idleWords(t besteffort.TeamPool, unit string) string {
	if t.Lent == 0 && t.Borrowed == 0 && t.Contribution == 0 && t.Utility == 0 {
		return ""
	}
	amount := func(x float64, places int) string {
		return fmtDecimal(x, places) + " " + moneyfmt.Unit(unit, x == 1)
	}
	var now string
	switch {
	case t.Lent > 0 && t.Borrowed > 0:
		now = "Your team lends " + amount(t.Lent, 1) + " of its quota to other teams' jobs now, and its own jobs borrow " + amount(t.Borrowed, 0) + "."
	case t.Lent > 0:
		now = "Other teams' jobs run on " + amount(t.Lent, 1) + " of your team's quota now."
	case t.Borrowed > 0:
		now = "Your team's jobs borrow " + amount(t.Borrowed, 0) + " of idle capacity now."
	default:
		now = "Nothing is lent or borrowed now."
	}
	var turn string
	switch t.Policy {
	case "round-robin":
		turn = "Teams take turns here: your next task waits only for the teams served before it."
	case besteffort.PolicyAbacus:
		turn = "Here idle units go by budget: your jobs' bids won " + fmtDecimal(100*t.Priority, 0) + "% of the units that free up."
	default:
		switch {
		case t.Contribution > t.Utility:
			turn = "Others' work on what you lent is worth more than your own jobs' use so far, so your tasks go ahead of teams that used more than they lent."
		case t.Contribution < t.Utility:
			turn = "Your jobs have used more than your team lent so far, so teams that lent more go first; lending idle quota moves your tasks up."
		default:
			turn = "What your team lent and used so far balance out."
		}
	}
	return now + " " + turn
}
