package fleet

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/sharing"
	"github.com/clearhouse/clearhouse/sharing/abacus"
	"gorm.io/gorm"
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
// for the same history. Preemption stops the task of the team with the smallest
// total share first, most recently started first.

// AuctionView is the last auction of a cluster, as operators see it.
type AuctionView struct {
	Alpha      float64
	Iterations int
	Outcome    string
	Jobs       []AuctionJob
}

// AuctionJob is one bidder of an auction.
type AuctionJob struct {
	Job     string
	Team    string
	Budget  float64
	Utility string
	Shares  map[string]float64
}

// auctionOf runs the auction over jobs on pools (sorted names).
func auctionOf(jobs []sharing.Job, pools []string, alpha float64) (AuctionView, error) {
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
					w[r] = x
				}
			}
		}
		inst.Jobs = append(inst.Jobs, abacus.Job{ID: j.ID, Budget: j.Budget, Utility: u, Weights: w})
		most = max(most, j.Budget)
	}
	opt := abacus.DefaultOptions()
	opt.Alpha, opt.Epsilon = alpha, max(opt.Epsilon, most*1e-9)
	res, err := abacus.Solve(inst, opt)
	if err != nil {
		return out, err
	}
	out.Iterations, out.Outcome = res.Iterations, res.Outcome.String()
	for i, j := range jobs {
		aj := AuctionJob{Job: j.ID, Team: j.Team, Budget: j.Budget, Utility: j.Utility, Shares: map[string]float64{}}
		if aj.Utility == "" {
			aj.Utility = "linear"
		}
		for r, pool := range pools {
			if inst.Jobs[i].Weights[r] > 0 {
				aj.Shares[pool] = res.Shares[i][r]
			}
		}
		out.Jobs = append(out.Jobs, aj)
	}
	return out, nil
}

// abacusPolicy is sharing.Policy over one auction's shares.
type abacusPolicy struct{ share map[string]map[string]float64 } // job -> pool -> share

func newAbacusPolicy(a AuctionView) *abacusPolicy {
	p := &abacusPolicy{share: map[string]map[string]float64{}}
	for _, j := range a.Jobs {
		p.share[j.Job] = j.Shares
	}
	return p
}

// Name implements sharing.Policy.
func (*abacusPolicy) Name() string { return PolicyAbacus }

// weight is job j's draw weight: its mean share of the pools its task needs.
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

// Choose implements sharing.Policy: a draw among the jobs that fit, by weight (the
// longest waiting when every weight is zero).
func (p *abacusPolicy) Choose(v *sharing.View, _ *sharing.Accounts, rng *rand.Rand) int {
	total, first := 0.0, -1
	for j := range v.Jobs {
		if v.Fits(j) {
			if first < 0 {
				first = j
			}
			total += p.weight(v, j)
		}
	}
	if first < 0 || total <= 0 {
		return first
	}
	x := rng.Float64() * total
	last := first
	for j := range v.Jobs {
		if v.Fits(j) {
			if w := p.weight(v, j); w > 0 {
				last = j
				if x -= w; x < 0 {
					return j
				}
			}
		}
	}
	return last
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
// and the jobs, and returns the policy.
func abacusFor(tx *gorm.DB, ic *IdleCluster, snap sharing.Snapshot) (sharing.Policy, error) {
	pools := make([]string, len(snap.Pools))
	for i, p := range snap.Pools {
		pools[i] = p.Name
	}
	slices.Sort(pools)
	a, err := auctionOf(snap.Jobs, pools, ic.Alpha)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(a)
	ic.Auction = string(b)
	for _, j := range a.Jobs {
		s, _ := json.Marshal(j.Shares)
		if err := tx.Model(&Job{}).Where("id = ?", j.Job).Update("shares", string(s)).Error; err != nil {
			return nil, err
		}
	}
	return newAbacusPolicy(a), nil
}

// Auction returns the last auction of a cluster (empty when it has none).
func (s *BestEffort) Auction(ctx context.Context, cluster string) (AuctionView, error) {
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
// spec or a cluster that is not under the abacus policy.
func (s *BestEffort) Quote(ctx context.Context, by exchange.User, spec JobSpec) (map[string]float64, error) {
	if spec.Team == "" {
		spec.Team = by.TeamID
	}
	if err := actFor(by, spec.Team); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	db := s.db.Read.WithContext(ctx)
	cluster, err := clusterOf(db, spec.Configuration)
	if err != nil {
		return nil, err
	}
	var ic IdleCluster
	if err := db.Limit(1).Find(&ic, "cluster_id = ?", cluster).Error; err != nil {
		return nil, err
	}
	if ic.Policy != PolicyAbacus {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "budget: cluster %s does not share idle capacity by the abacus policy; there is nothing to quote", cluster)
	}
	var rows []Job
	if err := db.Where("cluster_id = ? AND status IN ? AND queued > 0", cluster, []JobStatus{JobQueued, JobRunning}).Find(&rows).Error; err != nil {
		return nil, err
	}
	jobs := make([]sharing.Job, 0, len(rows)+1)
	for _, j := range rows {
		jobs = append(jobs, sharing.Job{ID: strconv.FormatInt(j.ID, 10), Team: j.TeamID, Configuration: j.Config(), Budget: j.Budget.Dollars(), Utility: j.Utility, Weights: j.WeightsByPool()})
	}
	jobs = append(jobs, sharing.Job{ID: "quote", Team: spec.Team, Configuration: spec.Configuration, Budget: spec.Budget.Dollars(), Utility: spec.Utility, Weights: spec.Weights})
	var pools []string
	if err := db.Model(&exchange.Pool{}).Where("cluster_id = ?", cluster).Order("id").Pluck("id", &pools).Error; err != nil {
		return nil, err
	}
	a, err := auctionOf(jobs, pools, ic.Alpha)
	if err != nil {
		return nil, err
	}
	return a.Jobs[len(a.Jobs)-1].Shares, nil
}
