package besteffort

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/sharing/abacus"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Utility learning (paper section 5) in the product. An abacus job may come with a
// budget only (no weights): it then bids with the weights its team's finished jobs
// of the same kind taught, when a usable fit exists, and with equal weights (1 per
// pool) until then. A job's kind is the set of pools of its configuration (their
// sorted names; the units per task do not matter) with its utility's shape (linear
// or log). Once a job is done its cluster's agent reports its measured utility (the
// reference agent: the inverse of its run time in hours, first start to last end)
// and, optionally, its average share of each pool; without them the server uses
// the job's mean share over the auctions it bid in. Each measurement refits the
// team's weights for the kind by least squares (abacus.FitWeights over the team's
// newest MaxFitSamples measured jobs of the kind): a fit is used only when its
// outcome is ok (at least twice as many jobs as pools, well conditioned, every
// weight positive). The weights a job bids with are fixed when it is queued.

// MaxFitSamples is how many of a team's newest measured jobs of a kind a fit uses.
const MaxFitSamples = 200

// The range of a measured utility an agent may report: 0, or from
// MinMeasuredUtility to MaxMeasuredUtility (the reference agent's inverse run
// time in hours spans a job of 3.6 ms to one of 114 years). Anything else (a
// non-finite number, 1e308, a subnormal 5e-324) is refused at the edge: one such
// measurement would teach the team weights no auction can take.
const (
	MinMeasuredUtility = 1e-6
	MaxMeasuredUtility = 1e6
)

// The range of a learned weight: a fit's weights are clamped into [MinWeight,
// MaxWeight], the range a team may give by hand, so no measurement within range
// (a utility of 1e6 over a share of 1e-300) and no stored value can make a job
// whose bid every decision of its cluster refuses.
const (
	MinWeight = 1e-6
	MaxWeight = 1e6
)

// clampWeight puts w into [MinWeight, MaxWeight] (MinWeight for NaN).
func clampWeight(w float64) float64 {
	if !(w >= MinWeight) {
		return MinWeight
	}
	return min(w, MaxWeight)
}

// WeightFit is the last fit of a team's weights for one kind of job: a row of
// best_effort_fits. Weights is JSON pool -> weight (empty without an estimate);
// Condition is 0 when not computed or infinite.
type WeightFit struct {
	TeamID    string `gorm:"primaryKey"`
	Kind      string `gorm:"primaryKey"`
	Utility   string `gorm:"primaryKey"`
	Outcome   string
	Weights   string
	Samples   int
	RMSE      float64 `gorm:"column:rmse"`
	Condition float64
	FittedAt  time.Time
}

// TableName implements gorm's tabler.
func (WeightFit) TableName() string { return "best_effort_fits" }

// WeightsByPool decodes the fit's weights (nil without an estimate).
func (f WeightFit) WeightsByPool() map[string]float64 { return decodeFloats(f.Weights) }

// Pools lists the pools of the fit's kind.
func (f WeightFit) Pools() []string { return strings.Split(f.Kind, ",") }

// JobMeasurement is what a cluster's agent measured of a finished job: its utility
// (for instance the inverse of its run time in hours; the scale must be the one the
// team's budgets and SLOs use) and, optionally, its average share of each pool.
type JobMeasurement struct {
	Job     int64
	Utility float64
	Shares  map[string]float64 // nil: the server's mean auction shares
}

// kindOf names a configuration's kind: its pools, sorted, joined by commas.
func kindOf(config map[string]int64) string { return strings.Join(sortedPools(config), ",") }

func shapeOf(utility string) string {
	if utility == "log" {
		return "log"
	}
	return "linear"
}

// weightsFor returns the weights an abacus job of spec bids with and where they come
// from: the spec's own (given), its team's usable fit for the kind (fitted), or none,
// meaning 1 for each pool (equal).
func (s *Service) weightsFor(db *gorm.DB, spec JobSpec) (map[string]float64, string, error) {
	if len(spec.Weights) > 0 {
		return spec.Weights, "given", nil
	}
	var f WeightFit
	err := db.Limit(1).Find(&f, "team_id = ? AND kind = ? AND utility = ?", spec.Team, kindOf(spec.Configuration), shapeOf(spec.Utility)).Error
	if err != nil {
		return nil, "", err
	}
	if f.Outcome == abacus.FitOK.String() {
		w := f.WeightsByPool()
		for p, x := range w { // a fit stored before weights were clamped
			w[p] = clampWeight(x)
		}
		return w, "fitted", nil
	}
	return nil, "equal", nil
}

// validateMeasurements checks measurements against the jobs of cluster: each an
// abacus job (with a budget) of the cluster, a finite utility, shares only of its
// pools, each in [0, 1] (above 0 for a log utility).
func validateMeasurements(tx *gorm.DB, cluster string, ms []JobMeasurement) error {
	bad := func(i int, format string, args ...any) error {
		return clearhouse.Errorf(clearhouse.EINVALID, "best_effort_jobs[%d]: %s", i, fmt.Sprintf(format, args...))
	}
	for i, m := range ms {
		var j Job
		if err := tx.Limit(1).Find(&j, "id = ? AND cluster_id = ?", m.Job, cluster).Error; err != nil {
			return err
		}
		switch {
		case j.ID == 0:
			return bad(i, "cluster %s has no best-effort job %d", cluster, m.Job)
		case j.Budget == 0:
			return bad(i, "job %d has no budget: only abacus jobs learn their weights", m.Job)
		case !(m.Utility == 0 || m.Utility >= MinMeasuredUtility && m.Utility <= MaxMeasuredUtility):
			return bad(i, "utility: must be a number, 0 or from %g to %g, got %g", MinMeasuredUtility, MaxMeasuredUtility, m.Utility)
		}
		config := j.Config()
		for pool, x := range m.Shares {
			if _, ok := config[pool]; !ok {
				return bad(i, "shares: job %d does not use pool %q", m.Job, pool)
			}
			if !(x >= 0 && x <= 1) || j.Utility == "log" && x == 0 {
				return bad(i, "shares: %q must be from 0 to 1 (above 0 for a log utility), got %v", pool, x)
			}
		}
	}
	return nil
}

// recordMeasurement stores a done job's measurement (a repeat of the same one
// changes nothing; another is ECONFLICT) and refits its team's weights for its
// kind. The measurement of a job not done (after the report's task events) is
// ignored: its agent measured too early, and may report it again once it is done.
func recordMeasurement(tx *gorm.DB, m JobMeasurement, now time.Time) error {
	var j Job
	if err := tx.Take(&j, "id = ?", m.Job).Error; err != nil {
		return err
	}
	if j.Status != JobDone {
		return nil
	}
	shares := ""
	if len(m.Shares) > 0 {
		b, _ := json.Marshal(m.Shares)
		shares = string(b)
	}
	if j.MeasuredUtility != nil {
		if *j.MeasuredUtility == m.Utility && j.MeasuredShares == shares {
			return nil
		}
		return clearhouse.Errorf(clearhouse.ECONFLICT, "best_effort_jobs: job %d was measured before with utility %g; a measurement is reported once", j.ID, *j.MeasuredUtility)
	}
	if err := tx.Model(&Job{}).Where("id = ?", j.ID).Updates(map[string]any{"measured_utility": m.Utility, "measured_shares": shares}).Error; err != nil {
		return err
	}
	return refit(tx, j.TeamID, j.ClusterID, kindOf(j.Config()), shapeOf(j.Utility), now)
}

// refit fits a team's weights for a kind from its newest measured jobs of the kind
// and saves the fit, whatever its outcome.
func refit(tx *gorm.DB, team, cluster, kind, shape string, now time.Time) error {
	var js []Job
	err := tx.Where("team_id = ? AND cluster_id = ? AND measured_utility IS NOT NULL", team, cluster).Order("id DESC").Limit(20 * MaxFitSamples).Find(&js).Error
	if err != nil {
		return err
	}
	pools := strings.Split(kind, ",")
	var samples []abacus.Sample
	for _, j := range js {
		if kindOf(j.Config()) != kind || shapeOf(j.Utility) != shape {
			continue
		}
		shares := decodeFloats(j.MeasuredShares)
		if shares == nil {
			shares = j.MeanShares()
		}
		x := make([]float64, len(pools))
		usable := true
		for k, p := range pools {
			x[k] = shares[p]
			usable = usable && x[k] >= 0 && x[k] <= 1 && (shape != "log" || x[k] > 0)
		}
		if usable {
			samples = append(samples, abacus.Sample{Utility: *j.MeasuredUtility, Shares: x})
		}
		if len(samples) == MaxFitSamples {
			break
		}
	}
	u := abacus.Linear
	if shape == "log" {
		u = abacus.Log
	}
	fit, err := abacus.FitWeights(u, len(pools), samples, abacus.FitOptions{})
	if err != nil {
		return err
	}
	row := WeightFit{TeamID: team, Kind: kind, Utility: shape, Outcome: fit.Outcome.String(), Samples: fit.Samples, RMSE: fit.RMSE, FittedAt: now}
	if !math.IsInf(fit.Condition, 0) { // stored as 0 when singular: the outcome says so
		row.Condition = fit.Condition
	}
	if fit.Weights != nil {
		w := map[string]float64{}
		for k, p := range pools {
			w[p] = clampWeight(fit.Weights[k])
		}
		b, _ := json.Marshal(w)
		row.Weights = string(b)
	}
	return tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error
}

// Fits lists a team's weight fits, by kind and utility.
func (s *Service) Fits(ctx context.Context, team string) ([]WeightFit, error) {
	var fs []WeightFit
	err := s.db.Read.WithContext(ctx).Where("team_id = ?", team).Order("kind, utility").Find(&fs).Error
	return fs, err
}
