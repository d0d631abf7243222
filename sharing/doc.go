// Package sharing is the pure engine of idle capacity (DESIGN.md, "Idle capacity"):
// teams lend the quota they are not using, the operator lends the capacity it has
// neither sold nor reserved, and best-effort jobs of identical tasks (no deadline, no
// price, unknown durations) run on it, chosen by a pluggable sharing policy and
// preempted, after a minimum runtime, when the pool needs the units back.
//
// It holds the policies (DirectContr with three utility functions, FairShare, round
// robin; the monetary Abacus policy of package sharing/abacus plugs into the same
// interface), the accounts of contribution and utility per team and pool, the snapshot
// step a cluster-side service calls on every agent poll (Decide), the event-driven
// simulator of CloudShare's section 5 (Simulate), exact and sampled Shapley values,
// unfairness and the pairwise score (Evaluate, Scores). It imports no database, HTTP
// or template package; a test asserts that.
//
// # Time and units
//
// The engine's clock is hours as float64 (HoursOf converts a time.Time; the
// simulator counts hours from the start of its window). Utility and contribution are
// per pool, in unit-hours (SIMPL) or unit-hours times hours (ORIG, REL).
//
// # Utility functions (Skowron and Rzadca 2013; Pacholczyk and Rzadca 2018)
//
// A task of w units runs from its start; each unit-hour it executes is a "unit part".
// For a part executed at time tau of a job released (enqueued) at r, the utility at
// time t >= tau is:
//
//	ORIG:  t - tau                    psi_sp, the strategy-resilient utility of Skowron
//	                                  and Rzadca: a part executed earlier is worth more
//	REL:   (t - tau) / (t - r)        ORIG normalised by the time since release
//	SIMPL: 1                          the executed surface
//
// and a team's utility is the sum over the parts of its own best-effort tasks:
// psi(t) = sum over parts of the above (integrated continuously over each run). The
// paper's text (Pacholczyk and Rzadca, CloudShare) lost its formulas; its words and
// its Table 1 are the evidence. ORIG is psi_sp of Skowron and Rzadca (sum over
// executed unit parts of t - tau). REL is our reading of "a slightly altered utility,
// where the release time neutralizes this effect", the effect being that under ORIG a
// part done at tau keeps earning t - tau as t grows, so early decisions can never be
// made up: normalised by the time since its job's release, a part is worth at most 1
// and every part tends to 1 (SIMPL) in a long run. The accounts keep it per team and
// pool as E * ORIG / (ORIG - R) with R = sum w (r - tau) (RelValue): exact for the
// parts of one job, the surface-weighted mean release across jobs. Of the readings
// tried (docs/idle-capacity.md), it is the one whose results match Table 1 (REL near
// SIMPL, both above FairShare). SIMPL is the executed surface, as the paper says.
//
// # Contribution and the attribution rule
//
// A task's units in a pool are attributed to lenders: first the team's own idle quota
// (a team running its own best-effort work on its own idle quota lends to itself, so it
// adds equally to its utility and contribution and leaves its DirectContr priority
// unchanged), then the idle units of every other lender, the operator included, in
// proportion to their idle units at the start (fractions of a unit are kept). A
// lender's idle units in a pool are its quota less its own demand (the larger of what
// its agents report it uses and what its reservations hold now) less the best-effort
// units already attributed to it; the operator's quota is the capacity no team holds,
// and its demand is the demand of teams beyond their quota. A lender's contribution is
// the utility (same function) of the parts run on its attributed units. Every part
// counts once in some team's utility and once, split, in lenders' contributions, so
// contributions and utilities sum to the same total.
//
// Units of a pool are fungible: when a lender's demand rises, the tasks on its units
// are first re-attributed to lenders with idle units, and preempted only when the
// pool as a whole has no room left.
//
// # Accounts: summaries instead of history
//
// For each team and pool the accounts keep six numbers: the executed surface E, the
// ORIG utility and the release-measured sum R = sum w (r - tau) REL is computed from,
// and the same three for contribution. Over [t0, t1) ORIG grows
// by E(t0) (t1 - t0) plus, for each run [a, b) in the interval, w ((t1-a)^2 - (t1-b)^2)/2;
// R grows only by the runs, by -w ((b-r)^2 - (a-r)^2)/2 each; E grows by w (b - a). These are
// exact: the summary reproduces the value the whole history would give (up to float64
// rounding), so a policy decides the same from the summary as from the history. The
// summary is constant in size; its values grow with time (ORIG quadratically).
//
// # Policies
//
//   - direct-orig, direct-rel, direct-simpl (DirectContr): a team's priority is the sum
//     over the cluster's pools of (contribution - utility) / capacity under ORIG, REL
//     or SIMPL; the highest runs first.
//   - fairshare: a team's share is the mean over pools of its quota over all teams'
//     quota; usage is the sum over pools of E / capacity; the smallest usage / share
//     runs first.
//   - round-robin: the team served least recently runs first.
//
// Team-level policies pick the team, then its longest-waiting job that fits. Ties go to
// the team whose longest-waiting job waited longest, then to the team listed first in
// the view (Decide lists teams by name, Simulate in the order of its organizations).
// Preemption victims: the lowest-priority team's most recently started task first.
package sharing
