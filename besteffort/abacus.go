package besteffort

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/sharing"
	"github.com/clearhouse/clearhouse/sharing/abacus"
)

// The abacus policy (issue 14) in the product. At every decision the cluster's
// jobs with waiting tasks bid in one Abacus auction (package sharing/abacus) over
// the cluster's pools: each job's budget (in dollars) and utility (linear or log,
// its weights per pool of its configuration, 1 by default) give it a share s_ij
// of each pool j. Each task start is then a seeded draw: among the jobs with a task
// that fits now, job i is drawn with probability proportional to its share of the
// pools its task needs (the mean over them; for a one-pool job exactly s_ij). The
// draw, not a deterministic rotation, because a decision sees only the units free
// at that poll: a rotation's credits would have to persist across polls and job
// arrivals, while independent draws seeded by (the service's seed, the cluster's
// decision number) give the auction's shares in the long run and the same starts
// for the same history. Per pool draws would split one start's units between jobs
// (a task needs every pool of its configuration at once): README, "Abacus in the
// product", says what the mean keeps and what it does not. Preemption stops the task of the team with the smallest
// total share first, most recently started first.
//
// The SLO variant (paper section 6): a job may state a minimum utility. When a job
// of the auction has one, the auction is abacus.SolveSLO: greedily by budget, the set
// of jobs whose SLOs the auction among them meets is served; they draw by their
// shares in that auction and come first (a unit goes to a job of another tier only
// when no served job's task fits now); the others draw by their shares in the
// auction among themselves. A job with an SLO pays its budget only if its SLO was
// met: when it is done, its utility at its mean guaranteed share of each pool over
// the auctions it bid in must reach the minimum less a relative 1e-9; otherwise the
// hold is released. Its guaranteed share in an auction is its share there when it
// was served, and 0 when it was not (it then had only what the served left, which no
// auction promises); every decision at which it had waiting tasks counts once
// (Job.MeanShares). Without the SLO variant every job is served.

// AuctionView is the last auction of a cluster, as operators see it.
type AuctionView struct {
	Alpha      float64
	Iterations int
	Outcome    string
	SLO        bool    // the SLO variant ran (some job has a minimum utility)
	Revenue    float64 // SLO variant: the served jobs' budgets
	Jobs       []AuctionJob
}

// AuctionJob is one bidder of an auction.
type AuctionJob struct {
	Job        string
	Team       string
	Budget     float64
	Utility    string
	Shares     map[string]float64
	MinUtility *float64 `json:",omitempty"`
	Served     bool     // SLO variant: in the served set (without it every job is)
	Value      float64  // the job's utility at Shares
}

// auctionOf runs the auction over jobs on pools (sorted names); slo holds the
// minimum utility of the jobs that state one.
func auctionOf(jobs []sharing.Job, slo map[string]float64, pools []string, alpha float64) (AuctionView, error) {
	out := AuctionView{Alpha: alpha}
	if len(jobs) == 0 {
		return out, nil
	}
	inst := abacus.Instance{Resources: pools}
	most := 0.0
	for _, j := range jobs {
		u := abacus.Linear
		if j.Utility == "log" {
			u = abacus.Log
		}
		w := make([]float64, len(pools))
		for r, pool := range pools {
			if _, ok := j.Configuration[pool]; ok {
				w[r] = 1
				if x, ok := j.Weights[pool]; ok {
					w[r] = clampWeight(x) // a job's weights stored before they were clamped
				}
			}
		}
		aj := abacus.Job{ID: j.ID, Budget: j.Budget, Utility: u, Weights: w}
		if m, ok := slo[j.ID]; ok {
			aj.MinUtility = &m
		}
		inst.Jobs = append(inst.Jobs, aj)
		most = max(most, j.Budget)
	}
	opt := abacus.DefaultOptions()
	opt.Alpha, opt.Epsilon = alpha, max(opt.Epsilon, most*1e-9)
	var shares func(i int) []float64
	served := func(int) bool { return true }
	if len(slo) == 0 {
		res, err := abacus.Solve(inst, opt)
		if err != nil {
			return out, err
		}
		out.Iterations, out.Outcome = res.Iterations, res.Outcome.String()
		shares = func(i int) []float64 { return res.Shares[i] }
	} else {
		res, err := abacus.SolveSLO(inst, opt)
		if err != nil {
			return out, err
		}
		out.SLO, out.Revenue = true, res.Revenue
		out.Iterations = res.First.Iterations + res.Rest.Iterations
		out.Outcome = res.First.Outcome.String()
		if res.Rest.Outcome != abacus.OutcomeConverged {
			out.Outcome = res.Rest.Outcome.String()
		}
		served = func(i int) bool { return res.Served[i] }
		shares = func(i int) []float64 {
			if res.Served[i] {
				return res.First.Shares[i]
			}
			return res.Rest.Shares[i]
		}
	}
	for i, j := range jobs {
		aj := AuctionJob{Job: j.ID, Team: j.Team, Budget: j.Budget, Utility: j.Utility, Shares: map[string]float64{},
			MinUtility: inst.Jobs[i].MinUtility, Served: served(i), Value: inst.Jobs[i].Value(shares(i))}
		if aj.Utility == "" {
			aj.Utility = "linear"
		}
		for r, pool := range pools {
			if inst.Jobs[i].Weights[r] > 0 {
				aj.Shares[pool] = shares(i)[r]
			}
		}
		out.Jobs = append(out.Jobs, aj)
	}
	return out, nil
}

// abacusPolicy is sharing.Policy over one auction's shares (and, in the SLO
// variant, its served set, which comes first).
type abacusPolicy struct {
	share  map[string]map[string]float64 // job -> pool -> share
	served map[string]bool
}

func newAbacusPolicy(a AuctionView) *abacusPolicy {
	p := &abacusPolicy{share: map[string]map[string]float64{}, served: map[string]bool{}}
	for _, j := range a.Jobs {
		p.share[j.Job] = j.Shares
		p.served[j.Job] = j.Served || !a.SLO
	}
	return p
}

// Name implements sharing.Policy.
func (*abacusPolicy) Name() string { return PolicyAbacus }

// weight is job j's mean share of the pools its task needs: its team's priority
// (reports, and the victim of a preemption) sums it.
func (p *abacusPolicy) weight(v *sharing.View, j int) float64 {
	jv := v.Jobs[j]
	if len(jv.Units) == 0 {
		return 0
	}
	s := 0.0
	for _, u := range jv.Units {
		s += p.share[jv.Job.ID][v.Pools[u.Pool].Name]
	}
	return s / float64(len(jv.Units))
}

// Priorities implements sharing.Policy: a team's total weight over its waiting jobs.
func (p *abacusPolicy) Priorities(v *sharing.View, _ *sharing.Accounts, out []float64) {
	clear(out)
	for j := range v.Jobs {
		out[v.Jobs[j].Team] += p.weight(v, j)
	}
}

// Choose implements sharing.Policy with Abacus's scheduler: one queue per pool, and
// a freed unit of pool j goes to a job waiting for it with probability s_ij, its
// share of the pool (abacus.DrawForResource). The freed unit is one of the units free
// now, drawn uniformly (so a pool is drawn in proportion to its free units, among the
// pools some job that fits is waiting for); the job drawn for it takes its task's
// units of its other pools too. Served jobs (the SLO variant's) draw first, then the
// others. A job whose task needs one pool gets its share of that pool in the long
// run, exactly as the paper's; a task that needs several pools is drawn in each
// pool's queue by that pool's share.
func (p *abacusPolicy) Choose(v *sharing.View, _ *sharing.Accounts, rng *rand.Rand) int {
	if j := p.draw(v, rng, true); j >= 0 {
		return j
	}
	return p.draw(v, rng, false)
}

// draw deals one freed unit among the jobs that fit and are (or are not) served.
func (p *abacusPolicy) draw(v *sharing.View, rng *rand.Rand, served bool) int {
	fits := func(j int) bool { return v.Fits(j) && p.served[v.Jobs[j].Job.ID] == served }
	room := make([]float64, len(v.Pools)) // free units of the pools a fitting job waits for
	first := -1
	for j := range v.Jobs {
		if !fits(j) {
			continue
		}
		if first < 0 {
			first = j
		}
		for _, u := range v.Jobs[j].Units {
			if u.Units > 0 {
				room[u.Pool] = float64(v.Pools[u.Pool].Room)
			}
		}
	}
	pool := abacus.DrawForResource(room, func(int) bool { return true }, rng)
	if first < 0 || pool < 0 || room[pool] <= 0 {
		return first // no fitting job, or none needs a unit of any pool
	}
	name := v.Pools[pool].Name
	shares := make([]float64, len(v.Jobs))
	for j := range v.Jobs {
		shares[j] = p.share[v.Jobs[j].Job.ID][name]
	}
	return abacus.DrawForResource(shares, func(j int) bool { return fits(j) && needs(v, j, pool) }, rng)
}

// needs reports whether job j's task takes units of pool.
func needs(v *sharing.View, j, pool int) bool {
	for _, u := range v.Jobs[j].Units {
		if u.Pool == pool && u.Units > 0 {
			return true
		}
	}
	return false
}

// Victim implements sharing.Policy: the most recently started task of the team
// with the smallest total share.
func (p *abacusPolicy) Victim(v *sharing.View, acc *sharing.Accounts, c []int, _ *rand.Rand) int {
	prio := make([]float64, len(v.Teams))
	p.Priorities(v, acc, prio)
	best := 0
	for i, k := range c {
		r, b := v.Running[k], v.Running[c[best]]
		if prio[r.Team] < prio[b.Team] || prio[r.Team] == prio[b.Team] && r.Started >= b.Started {
			best = i
		}
	}
	return best
}

// abacusFor runs the cluster's auction for a decision, records it on the cluster
// and on each bidding job (its shares now, one more auction, the sums of its
// guaranteed shares), and returns the policy.
func abacusFor(tx *gorm.DB, ic *IdleCluster, snap sharing.Snapshot) (sharing.Policy, error) {
	pools := make([]string, len(snap.Pools))
	for i, p := range snap.Pools {
		pools[i] = p.Name
	}
	slices.Sort(pools)
	ids := make([]string, len(snap.Jobs))
	for i, j := range snap.Jobs {
		ids[i] = j.ID
	}
	var rows []Job
	if err := tx.Select("id", "min_utility", "share_sums").Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, err
	}
	byID := make(map[string]Job, len(rows))
	slo := map[string]float64{}
	for _, r := range rows {
		id := strconv.FormatInt(r.ID, 10)
		byID[id] = r
		if r.MinUtility != nil {
			slo[id] = *r.MinUtility
		}
	}
	a, err := auctionOf(snap.Jobs, slo, pools, ic.Alpha)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(a)
	ic.Auction = string(b)
	for _, j := range a.Jobs {
		sums := decodeFloats(byID[j.Job].ShareSums)
		if sums == nil {
			sums = map[string]float64{}
		}
		for pool, x := range j.Shares {
			if !j.Served { // what the served leave is no guaranteed share
				x = 0
			}
			sums[pool] += x
		}
		sh, _ := json.Marshal(j.Shares)
		su, _ := json.Marshal(sums)
		if err := tx.Model(&Job{}).Where("id = ?", j.Job).
			Updates(map[string]any{"shares": string(sh), "share_sums": string(su), "auctions": gorm.Expr("auctions + 1")}).Error; err != nil {
			return nil, err
		}
	}
	return newAbacusPolicy(a), nil
}

// Auction returns the last auction of a cluster (empty when it has none).
func (s *Service) Auction(ctx context.Context, cluster string) (AuctionView, error) {
	var ic IdleCluster
	if err := s.db.Read.WithContext(ctx).Limit(1).Find(&ic, "cluster_id = ?", cluster).Error; err != nil {
		return AuctionView{}, err
	}
	var a AuctionView
	if ic.Auction != "" {
		_ = json.Unmarshal([]byte(ic.Auction), &a)
	}
	return a, nil
}

// Quote returns the shares of each pool a job would get in its cluster's auction
// now, against the jobs waiting there, without saving anything. EINVALID for a bad
// spec, a cluster that is not under the abacus policy, or a budget of zero (as
// Submit would refuse it).
func (s *Service) Quote(ctx context.Context, by identity.User, spec JobSpec) (ShareQuote, error) {
	if spec.Team == "" {
		spec.Team = by.TeamID
	}
	if err := fleet.ActFor(by, spec.Team); err != nil {
		return ShareQuote{}, err
	}
	if err := spec.Validate(); err != nil {
		return ShareQuote{}, err
	}
	db := s.db.Read.WithContext(ctx)
	cluster, err := clusterOf(db, spec.Configuration)
	if err != nil {
		return ShareQuote{}, err
	}
	var ic IdleCluster
	if err := db.Limit(1).Find(&ic, "cluster_id = ?", cluster).Error; err != nil {
		return ShareQuote{}, err
	}
	if ic.Policy != PolicyAbacus {
		return ShareQuote{}, clearhouse.Errorf(clearhouse.EINVALID, "budget: cluster %s does not share idle capacity by the abacus policy; there is nothing to quote", cluster)
	}
	if err := checkBudget(ic, spec); err != nil {
		return ShareQuote{}, err
	}
	var rows []Job
	if err := db.Where("cluster_id = ? AND status IN ? AND queued > 0", cluster, []JobStatus{JobQueued, JobRunning}).Find(&rows).Error; err != nil {
		return ShareQuote{}, err
	}
	jobs := make([]sharing.Job, 0, len(rows)+1)
	slo := map[string]float64{}
	for _, j := range rows {
		id := strconv.FormatInt(j.ID, 10)
		jobs = append(jobs, sharing.Job{ID: id, Team: j.TeamID, Configuration: j.Config(), Budget: j.Budget.Dollars(), Utility: j.Utility, Weights: j.WeightsByPool()})
		if j.MinUtility != nil {
			slo[id] = *j.MinUtility
		}
	}
	weights, _, err := s.weightsFor(db, spec)
	if err != nil {
		return ShareQuote{}, err
	}
	jobs = append(jobs, sharing.Job{ID: "quote", Team: spec.Team, Configuration: spec.Configuration, Budget: spec.Budget.Dollars(), Utility: spec.Utility, Weights: weights})
	if spec.MinUtility != nil {
		slo["quote"] = *spec.MinUtility
	}
	var pools []string
	if err := db.Model(&exchange.Pool{}).Where("cluster_id = ?", cluster).Order("id").Pluck("id", &pools).Error; err != nil {
		return ShareQuote{}, err
	}
	a, err := auctionOf(jobs, slo, pools, ic.Alpha)
	if err != nil {
		return ShareQuote{}, err
	}
	q := a.Jobs[len(a.Jobs)-1]
	return ShareQuote{Shares: q.Shares, Weights: weights, Utility: q.Value, SLO: a.SLO, Served: q.Served}, nil
}

// ShareQuote is what a job would get in its cluster's auction now: its shares, the
// weights it would bid with (nil: 1 for each pool), its utility at those shares and,
// when the SLO variant runs, whether it would be served (its SLO met at the
// auction among the served; otherwise it takes what they leave).
type ShareQuote struct {
	Shares  map[string]float64
	Weights map[string]float64
	Utility float64
	SLO     bool
	Served  bool
}
