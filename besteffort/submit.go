package besteffort

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// JobSpec is a best-effort job as a team enters it.
type JobSpec struct {
	Team            string           // empty: the submitting user's team
	Configuration   map[string]int64 // pool -> units per task, every pool in one cluster
	Tasks           int64
	MaxTaskDuration time.Duration // 0: none
	// The abacus policy's fields: a budget held at submission and captured when the
	// job is done, and a utility (linear or log, weights per pool, 1 by default).
	Budget  ledger.Money
	Utility string
	Weights map[string]float64
	// MinUtility is the job's SLO (abacus only): the least utility, at its mean share
	// of each pool over the auctions it bids in, for which it pays its budget. Nil:
	// none. With weights w over the pools of its configuration, a linear utility is
	// sum w_j s_j (from 0 to sum w_j) and a log one sum w_j log s_j (at most 0).
	MinUtility *float64
	// Workload is what its tasks run on a real cluster manager (nil: none; the
	// agent then only counts its tasks).
	Workload *Workload
	Key      string // the client's Idempotency-Key, optional
}

// Validate checks what the spec says of itself. EINVALID names the field and rule.
func (s JobSpec) Validate() error {
	bad := func(format string, args ...any) error { return clearhouse.Errorf(clearhouse.EINVALID, format, args...) }
	switch {
	case len(s.Configuration) == 0:
		return bad("configuration: name at least one pool and its units per task")
	case len(s.Configuration) > 32:
		return bad("configuration: at most 32 pools")
	case s.Tasks < 1 || s.Tasks > MaxTasks:
		return bad("tasks: must be from 1 to %d, got %d", MaxTasks, s.Tasks)
	case s.MaxTaskDuration < 0 || s.MaxTaskDuration > 0 && s.MaxTaskDuration < time.Minute || s.MaxTaskDuration > MaxTaskDuration:
		return bad("max_task_duration: must be empty (none) or from 1m to %s", MaxTaskDuration)
	case s.Budget < 0:
		return bad("budget: must not be negative")
	case s.Utility != "" && s.Utility != "linear" && s.Utility != "log":
		return bad("utility: %q is not linear or log", s.Utility)
	case len(s.Key) > 200:
		return bad("idempotency key: at most 200 characters")
	case s.MinUtility != nil && (math.IsNaN(*s.MinUtility) || math.IsInf(*s.MinUtility, 0)):
		return bad("min_utility: must be a number")
	}
	if s.Workload != nil {
		if err := s.Workload.Validate(); err != nil {
			return err
		}
		if len(workloadJSON(s.Workload)) > MaxWorkloadBytes {
			return bad("workload: at most %d bytes of JSON", MaxWorkloadBytes)
		}
	}
	for _, pool := range sortedPools(s.Configuration) {
		if u := s.Configuration[pool]; u < 1 || u > 1_000_000 {
			return bad("configuration: %q: units per task must be from 1 to 1,000,000, got %d", pool, u)
		}
	}
	for pool, w := range s.Weights {
		if _, ok := s.Configuration[pool]; !ok {
			return bad("weights: %q is not in the configuration", pool)
		}
		if !(w >= MinWeight) || w > MaxWeight {
			return bad("weights: %q must be a number from 0.000001 to 1,000,000", pool)
		}
	}
	return nil
}

func sortedPools[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// digest identifies what the spec asks for, and for which team.
func (s JobSpec) digest() string {
	b, _ := json.Marshal(struct {
		T string
		C map[string]int64
		N int64
		D time.Duration
		B ledger.Money
		U string
		W map[string]float64
		M *float64  `json:",omitempty"`
		L *Workload `json:",omitempty"`
	}{s.Team, s.Configuration, s.Tasks, s.MaxTaskDuration, s.Budget, s.Utility, s.Weights, s.MinUtility, s.Workload})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// clusterOf checks the configuration's pools against the database: every pool must
// exist, all in one cluster, and a task must fit in each pool's capacity.
func clusterOf(tx *gorm.DB, c map[string]int64) (string, error) {
	names := sortedPools(c)
	var pools []exchange.Pool
	if err := tx.Where("id IN ?", names).Find(&pools).Error; err != nil {
		return "", err
	}
	byID := map[string]exchange.Pool{}
	for _, p := range pools {
		byID[p.ID] = p
	}
	cluster := ""
	for _, name := range names {
		p, ok := byID[name]
		if !ok {
			return "", clearhouse.Errorf(clearhouse.EINVALID, "configuration: no pool %q", name)
		}
		if cluster != "" && p.ClusterID != cluster {
			return "", clearhouse.Errorf(clearhouse.EINVALID, "configuration: pools %q and %q are in different clusters; a job runs in one cluster", names[0], name)
		}
		cluster = p.ClusterID
		if c[name] > p.Capacity {
			return "", clearhouse.Errorf(clearhouse.EINVALID, "configuration: %q: a task of %d units can never fit in the pool's %d", name, c[name], p.Capacity)
		}
	}
	return cluster, nil
}

// ensureIdleCluster creates cluster's best-effort row with the defaults if it has none.
func ensureIdleCluster(tx *gorm.DB, cluster string, now time.Time) error {
	row := IdleCluster{ClusterID: cluster, Policy: DefaultPolicy, Alpha: DefaultAlpha, AsOf: now, UpdatedAt: now}
	return tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error
}

// Submit queues a best-effort job for by's team. EINVALID names the field of a bad
// spec (unknown pools, pools of several clusters, a task larger than a pool, task
// counts outside 1..MaxTasks, a budget outside the abacus policy or missing under
// it); EFORBIDDEN for a user on no team or acting for another; EUNPROCESSABLE
// when the budget cannot cover the hold. Nothing is saved then. With spec.Key,
// submitting again returns the first job; another spec under the key is ECONFLICT.
func (s *Service) Submit(ctx context.Context, by identity.User, spec JobSpec) (JobView, error) {
	if spec.Team == "" {
		spec.Team = by.TeamID
	}
	if err := fleet.ActFor(by, spec.Team); err != nil {
		return JobView{}, err
	}
	if err := spec.Validate(); err != nil {
		return JobView{}, err
	}
	digest := spec.digest()
	var id int64
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if prior, ok, err := replayJob(tx, spec, digest); ok || err != nil {
			id = prior
			return err
		}
		cluster, err := clusterOf(tx, spec.Configuration)
		if err != nil {
			return err
		}
		now := s.now()
		if err := ensureIdleCluster(tx, cluster, now); err != nil {
			return err
		}
		var ic IdleCluster
		if err := tx.Take(&ic, "cluster_id = ?", cluster).Error; err != nil {
			return err
		}
		if err := checkBudget(ic, spec); err != nil {
			return err
		}
		j := Job{TeamID: spec.Team, ClusterID: cluster, CreatedBy: &by.ID, Configuration: configJSON(spec.Configuration),
			Tasks: spec.Tasks, MaxTaskDuration: int64(spec.MaxTaskDuration / time.Second), Status: JobQueued, Queued: spec.Tasks,
			Digest: digest, Budget: spec.Budget, Utility: spec.Utility, MinUtility: spec.MinUtility, Workload: workloadJSON(spec.Workload), EnqueuedAt: now, CreatedAt: now, UpdatedAt: now}
		if spec.Key != "" {
			k := scopedJobKey(spec.Team, spec.Key)
			j.IdemKey = &k
		}
		if ic.Policy == PolicyAbacus {
			weights, from, err := s.weightsFor(tx, spec)
			if err != nil {
				return err
			}
			if err := checkSLO(spec, weights); err != nil {
				return err
			}
			j.WeightsFrom = from
			if len(weights) > 0 {
				b, _ := json.Marshal(weights)
				j.Weights = string(b)
			}
		}
		if err := tx.Omit("ID").Create(&j).Error; err != nil {
			return err
		}
		id = j.ID
		if j.Budget > 0 {
			h, err := s.ledger.WithTx(tx).PlaceHold(ctx, fmt.Sprintf("best-effort/%d/hold", j.ID), ledger.TeamAccount(j.TeamID), j.Budget, fmt.Sprintf("best-effort:%d", j.ID))
			if err != nil {
				return err
			}
			return tx.Model(&Job{}).Where("id = ?", j.ID).Update("hold_id", h.ID).Error
		}
		return nil
	})
	if err != nil && spec.Key != "" && errors.Is(err, gorm.ErrDuplicatedKey) {
		// A concurrent request with the same key committed first: answer as it did.
		prior, ok, rerr := replayJob(s.db.Write.WithContext(ctx), spec, digest)
		if ok || rerr != nil {
			id, err = prior, rerr
		}
	}
	if err != nil {
		return JobView{}, err
	}
	return s.Job(ctx, id)
}

// checkBudget refuses a budget outside the abacus policy and a job without one under it.
func checkBudget(ic IdleCluster, spec JobSpec) error {
	if ic.Policy == PolicyAbacus {
		if spec.Budget <= 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "budget: cluster %s shares idle capacity by the abacus policy; a job needs a budget above zero", ic.ClusterID)
		}
		return nil
	}
	if spec.Budget > 0 || spec.Utility != "" || len(spec.Weights) > 0 || spec.MinUtility != nil {
		return clearhouse.Errorf(clearhouse.EINVALID, "budget: cluster %s shares idle capacity by the %s policy; budget, utility, weights and minimum utility are for the abacus policy", ic.ClusterID, ic.Policy)
	}
	return nil
}

// checkSLO refuses a minimum utility the job can never reach, or always reaches,
// with the weights it bids with (nil: 1 for each pool of its configuration): a
// linear utility must ask for more than 0 and at most the sum of the weights (every
// share 1); a log one for at most 0 (every share 1).
func checkSLO(spec JobSpec, weights map[string]float64) error {
	if spec.MinUtility == nil {
		return nil
	}
	m := *spec.MinUtility
	if spec.Utility == "log" {
		if m > 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "min_utility: a log utility (sum of weight x log share) is at most 0, reached only with every unit of every pool; give a number up to 0, got %g", m)
		}
		return nil
	}
	most := 0.0
	for pool := range spec.Configuration {
		w, ok := weights[pool]
		if !ok {
			w = 1
		}
		most += w
	}
	if !(m > 0) || m > most*(1+1e-12) {
		return clearhouse.Errorf(clearhouse.EINVALID, "min_utility: a linear utility (sum of weight x share) is from 0 to %g, the sum of the weights, with every unit of every pool; give a number above 0 and at most %g, got %g", most, most, m)
	}
	return nil
}

// PolicyAbacus names the monetary policy (issue 14).
const PolicyAbacus = "abacus"

func scopedJobKey(team, key string) string { return team + "/" + key }

// replayJob finds the job submitted before under spec's key: ok with its id when it
// asked for the same, ECONFLICT when it asked for something else.
func replayJob(tx *gorm.DB, spec JobSpec, digest string) (int64, bool, error) {
	if spec.Key == "" {
		return 0, false, nil
	}
	var prior Job
	err := tx.Where("idem_key = ?", scopedJobKey(spec.Team, spec.Key)).Take(&prior).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if prior.Digest != digest {
		return 0, false, clearhouse.Errorf(clearhouse.ECONFLICT, "idempotency key: %q was used for a different best-effort job", spec.Key)
	}
	return prior.ID, true, nil
}
