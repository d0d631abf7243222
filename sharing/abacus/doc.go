// Package abacus is the Abacus auction for idle capacity (Zhang, Ma, Ding and Yang,
// "Abacus: an auction-based approach to cloud service differentiation", IC2E 2013):
// each best-effort job carries a budget and a utility over the resource types (the
// pools of its cluster) it uses; a proportional-share auction turns budgets and
// utilities into each job's share of each resource, which is the probability (or the
// long-run fraction) of the freed units of that pool the job receives.
//
// The package is pure computation: value types in and out, no database, HTTP or
// templates, so the server, the command line and the benchmarks run the same code.
//
// # The mechanism
//
// Job i has a budget b_i >= 0 and a utility u_i(s_i) = sum_j f_ij(s_ij), a sum of
// non-decreasing concave functions of its shares: Linear (f = w_j s) or Log
// (f = w_j log s). The resources of job i are those with w_ij > 0. The job's budget is
// split into sub-budgets b_ij >= 0 with sum_j b_ij = b_i, and
//
//	s_ij = b_ij^alpha / sum_l b_lj^alpha,   alpha in [0, 1] (default 0.5).
//
// Algorithm 1 (Solve): start from even sub-budgets; in every round each job in turn
// takes its best response against the others' current sub-budgets, applying
// Algorithm 2 until its own sub-budgets stop moving (Options.OneStep: one
// application); stop after the first round in which no sub-budget moved by more than
// Epsilon (or, with Options.ShareEpsilon, no share by more than it). Since
// the jobs after a job move too, Solve then also checks, without moving anything,
// that one more application of Algorithm 2 would move no sub-budget by more than
// Epsilon, and runs on otherwise: the result is then Algorithm 2's fixed point within
// Epsilon for every job. Iterations counts rounds, the last included.
// Algorithm 2 sets b_ij proportional to g_ij = alpha f'_ij(s_ij) s_ij (1 - s_ij).
//
// Why that is the job's best response (derived here from the definitions above; the
// paper's Lemmas 1 and 2 state it, and its worked example of Figs. 2 to 4 is
// reproduced by the tests):
// with B = sum_{l != i} b_lj^alpha fixed, s(b) = b^alpha / (b^alpha + B) is concave in
// b for alpha <= 1 and ds/db = alpha s (1 - s) / b. The job maximizes the concave
// sum_j f_ij(s_ij(b_ij)) on the simplex sum_j b_ij = b_i, whose optimality (KKT)
// condition is f'_ij(s_ij) alpha s_ij (1 - s_ij) / b_ij = lambda for every b_ij > 0,
// that is b_ij = g_ij / lambda: b_ij proportional to g_ij. A split is therefore a best
// response exactly when it is a fixed point of Algorithm 2 (Lemma 2), and at a fixed
// point of every job no job can raise its utility by splitting its own budget
// differently (Lemma 3). Each application of Algorithm 2 is one step towards that
// fixed point: since d log(s (1 - s)) / d log b = alpha (1 - 2 s), a step shrinks a
// sub-budget's distance to it, in logarithms, by about alpha (1 - 2 s_ij) (the
// normalization aside; a heuristic reading, not the paper's proof, which covers
// alpha <= 1/2). Above 1/2, Solve stops after MaxIterations rounds and says so
// (OutcomeIterationLimit), never hanging.
//
// # Incentives
//
// With one job per user, a job's true utility never rises by misreporting (Theorem
// 2) in this exact sense: against the other jobs' sub-budgets at the truthful outcome,
// the split Algorithm 2 computes for a misreport (other weights, a lower budget) gives
// no more true utility than the split it computes for the truth. A lower budget never
// pays even after the others re-converge (utility is monotone in budget, Lemma 4), but
// other weights can: re-converging others move the equilibrium, and a job that shades
// its weights can gain a little (under 0.4% with 2 to 4 jobs, under 0.01% with 32, in
// the tests' random searches). The auction is truthful in that sense only.
//
// # Edge cases, exactly
//
//   - A job's resources are those with a positive weight. A weight of zero means the
//     job does not use the resource: its sub-budget and share there are 0.
//   - A resource used by exactly one job with a positive budget (whatever other
//     zero-budget jobs also list it) is uncontested: that job's share is 1 for any
//     positive sub-budget, so the supremum of its utility is reached as its
//     sub-budget there tends to 0. Solve gives it share 1 and (for alpha > 0)
//     sub-budget 0, and spends the budget on the job's contested resources. A job with no contested resource
//     (a single job, for instance) keeps the even split: every split gives it the
//     same shares.
//   - A job with a zero budget has zero sub-budgets and a zero share of every resource
//     some job with a positive budget uses (so its log utility is -Inf there).
//   - A resource that only zero-budget jobs use is split equally among them: nobody
//     bid on it, and an idle unit is better used than wasted.
//   - At alpha = 1 a linear job's best response may leave a contested resource
//     altogether; if every bidder's sub-budget there falls to 0, the bidders share
//     it equally (not 0/0).
//   - alpha = 0 gives every job that bids on a resource an equal share; every split
//     of the budget is then a best response, so sub-budgets stay even.
//   - Shares of every resource that at least one job uses sum to 1; a resource no job
//     uses has no shares.
package abacus
