package abacus

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// Sample is one finished job of a team's kind, as its cluster agent measured it: its
// utility (for instance the inverse of its run time, on the scale the team's budgets
// are meant for) and its average share of each resource of the kind while it ran.
type Sample struct {
	Utility float64
	Shares  []float64 // one per resource, in [0, 1]
}

// FitOutcome says whether a fit may be used.
type FitOutcome uint8

const (
	// FitOK: the weights are the least-squares estimate, all positive; use them.
	FitOK FitOutcome = iota
	// FitTooFewSamples: fewer samples than FitOptions.MinSamples; keep the job's
	// current weights (equal weights at first).
	FitTooFewSamples
	// FitIllConditioned: the samples do not tell the resources apart (the design
	// matrix is singular or its condition number exceeds MaxCondition: for instance
	// every job ran with the same mix of shares); keep the current weights.
	FitIllConditioned
	// FitNonPositive: the estimate has a weight that is zero or negative, which no
	// utility of the mechanism can have (the model does not fit the measurements);
	// Weights shows the estimate, but keep the current weights.
	FitNonPositive
)

// String returns "ok", "too-few-samples", "ill-conditioned" or "non-positive".
func (o FitOutcome) String() string {
	switch o {
	case FitOK:
		return "ok"
	case FitTooFewSamples:
		return "too-few-samples"
	case FitIllConditioned:
		return "ill-conditioned"
	}
	return "non-positive"
}

// Fit is the result of FitWeights.
type Fit struct {
	Outcome FitOutcome
	// Weights is the least-squares estimate (FitOK and FitNonPositive), nil otherwise.
	Weights []float64
	// RMSE is the root mean square of the residuals at Weights (0 without a fit).
	RMSE float64
	// Condition is the 2-norm condition number of the design matrix (+Inf when it is
	// singular; 0 when not computed for lack of samples).
	Condition float64
	Samples   int
}

// FitOptions bound what FitWeights accepts as a usable fit.
type FitOptions struct {
	MinSamples   int     // at least the number of resources; 0 means twice that number
	MaxCondition float64 // 0 means DefaultMaxCondition
}

// DefaultMaxCondition is the largest condition number of a usable fit: beyond it a
// relative error of 1e-6 in the measurements can move the weights by 100%.
const DefaultMaxCondition = 1e6

// FitWeights estimates the weights of a utility of the given kind from a team's
// finished jobs of one kind (paper section 5): the least-squares solution w of
// sum_j w_j x_kj = Utility_k over the samples k, with x_kj = Shares_kj for a linear
// utility and log Shares_kj for a log one (the model has no constant term: it is the
// utility the auction uses). resources is the number of resources of the kind.
//
// It returns EINVALID for resources < 1, bad options (MinSamples below resources,
// MaxCondition not above 1), a sample with the wrong number of shares, a share
// outside [0, 1] (or 0 for a log utility), or a utility that is not finite. Otherwise
// the Outcome says whether the weights may be used; the fit is computed by a thin SVD
// (gonum), which also gives the condition number.
func FitWeights(kind Utility, resources int, samples []Sample, opt FitOptions) (Fit, error) {
	if err := validateFit(kind, resources, samples, &opt); err != nil {
		return Fit{}, err
	}
	fit := Fit{Samples: len(samples)}
	if len(samples) < opt.MinSamples {
		fit.Outcome = FitTooFewSamples
		return fit, nil
	}
	x := mat.NewDense(len(samples), resources, nil)
	y := mat.NewVecDense(len(samples), nil)
	for k, s := range samples {
		y.SetVec(k, s.Utility)
		for j, share := range s.Shares {
			if kind == Log {
				share = math.Log(share)
			}
			x.Set(k, j, share)
		}
	}
	var svd mat.SVD
	if !svd.Factorize(x, mat.SVDThin) {
		fit.Outcome, fit.Condition = FitIllConditioned, math.Inf(1)
		return fit, nil
	}
	fit.Condition = svd.Cond()
	if math.IsNaN(fit.Condition) || fit.Condition > opt.MaxCondition {
		if math.IsNaN(fit.Condition) {
			fit.Condition = math.Inf(1)
		}
		fit.Outcome = FitIllConditioned
		return fit, nil
	}
	var w, residual mat.VecDense
	svd.SolveVecTo(&w, y, resources)
	residual.MulVec(x, &w)
	residual.SubVec(&residual, y)
	fit.RMSE = math.Sqrt(mat.Dot(&residual, &residual) / float64(len(samples)))
	fit.Weights = make([]float64, resources)
	for j := range fit.Weights {
		fit.Weights[j] = w.AtVec(j)
		if !(fit.Weights[j] > 0) {
			fit.Outcome = FitNonPositive
		}
	}
	return fit, nil
}

func validateFit(kind Utility, resources int, samples []Sample, opt *FitOptions) error {
	switch {
	case resources < 1:
		return invalid("resources: at least one, got %d", resources)
	case kind != Linear && kind != Log:
		return invalid("utility: must be linear or log, got %v", kind)
	case opt.MinSamples == 0:
		opt.MinSamples = 2 * resources
	case opt.MinSamples < resources:
		return invalid("min_samples: must be at least the number of resources (%d), got %d", resources, opt.MinSamples)
	}
	if opt.MaxCondition == 0 {
		opt.MaxCondition = DefaultMaxCondition
	} else if !(opt.MaxCondition > 1) || math.IsInf(opt.MaxCondition, 0) {
		return invalid("max_condition: must be a finite number above 1, got %v", opt.MaxCondition)
	}
	for k, s := range samples {
		if !finite(s.Utility) {
			return invalid("samples[%d].utility: must be a finite number, got %v", k, s.Utility)
		}
		if len(s.Shares) != resources {
			return invalid("samples[%d].shares: must have one entry per resource (%d), got %d", k, resources, len(s.Shares))
		}
		for j, share := range s.Shares {
			if !(share >= 0 && share <= 1) || kind == Log && share == 0 {
				return invalid("samples[%d].shares[%d]: must be in [0, 1] (above 0 for a log utility), got %v", k, j, share)
			}
		}
	}
	return nil
}
