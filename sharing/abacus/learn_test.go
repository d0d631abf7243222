package abacus

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
)

func samplesOf(rng *rand.Rand, kind Utility, weights []float64, n int, noise float64) []Sample {
	out := make([]Sample, n)
	for k := range out {
		shares := make([]float64, len(weights))
		for j := range shares {
			shares[j] = 0.01 + 0.99*rng.Float64()
		}
		job := Job{Utility: kind, Weights: weights}
		out[k] = Sample{Utility: job.Value(shares) + noise*rng.NormFloat64(), Shares: shares}
	}
	return out
}

func TestFitWeightsRecoversTheUtility(t *testing.T) {
	truth := []float64{0.7, 2.5, 1.2}
	for _, kind := range []Utility{Linear, Log} {
		rng := rand.New(rand.NewPCG(1, 2))
		fit, err := FitWeights(kind, 3, samplesOf(rng, kind, truth, 20, 0), FitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fit.Outcome != FitOK || fit.RMSE > 1e-9 || fit.Samples != 20 || !(fit.Condition >= 1) {
			t.Fatalf("%v: %+v", kind, fit)
		}
		for j, w := range truth {
			if !near(fit.Weights[j], w, 1e-9) {
				t.Errorf("%v: weights %v, want %v", kind, fit.Weights, truth)
			}
		}
		noisy, _ := FitWeights(kind, 3, samplesOf(rng, kind, truth, 400, 0.01), FitOptions{})
		if noisy.Outcome != FitOK || !(noisy.RMSE > 0.005 && noisy.RMSE < 0.02) {
			t.Errorf("%v with noise 0.01: %+v", kind, noisy)
		}
		for j, w := range truth {
			if math.Abs(noisy.Weights[j]-w) > 0.05 {
				t.Errorf("%v with noise: weights %v, want near %v", kind, noisy.Weights, truth)
			}
		}
	}
}

func TestFitWeightsSaysWhenNotToUseIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	few, _ := FitWeights(Linear, 3, samplesOf(rng, Linear, []float64{1, 1, 1}, 5, 0), FitOptions{})
	if few.Outcome != FitTooFewSamples || few.Weights != nil {
		t.Errorf("5 samples, 3 resources, default minimum 6: %+v", few)
	}
	// Every job ran with ram share twice its cpu share: the two cannot be told apart.
	var same []Sample
	for k := range 10 {
		s := 0.05 * float64(k+1)
		same = append(same, Sample{Utility: 3 * s, Shares: []float64{s, 2 * s}})
	}
	ill, _ := FitWeights(Linear, 2, same, FitOptions{})
	if ill.Outcome != FitIllConditioned || ill.Weights != nil || !(ill.Condition > DefaultMaxCondition) {
		t.Errorf("collinear shares: %+v", ill)
	}
	// Utility falls as the cpu share rises: no non-decreasing utility explains it.
	var falling []Sample
	for _, s := range samplesOf(rng, Linear, []float64{1, 1}, 10, 0) {
		falling = append(falling, Sample{Utility: -s.Shares[0] + 2*s.Shares[1], Shares: s.Shares})
	}
	neg, _ := FitWeights(Linear, 2, falling, FitOptions{})
	if neg.Outcome != FitNonPositive || !near(neg.Weights[0], -1, 1e-9) {
		t.Errorf("decreasing in cpu: %+v", neg)
	}
}

func TestFitWeightsRefusesBadInput(t *testing.T) {
	good := []Sample{{Utility: 1, Shares: []float64{0.5, 0.5}}}
	for _, c := range []struct {
		name    string
		kind    Utility
		samples []Sample
		opt     FitOptions
		want    string
	}{
		{"short shares", Linear, []Sample{{Utility: 1, Shares: []float64{0.5}}}, FitOptions{}, "samples[0].shares: must have one entry per resource"},
		{"share above 1", Linear, []Sample{{Utility: 1, Shares: []float64{0.5, 1.5}}}, FitOptions{}, "samples[0].shares[1]"},
		{"zero share for log", Log, []Sample{{Utility: 1, Shares: []float64{0, 0.5}}}, FitOptions{}, "samples[0].shares[0]"},
		{"infinite utility", Linear, []Sample{{Utility: math.Inf(1), Shares: []float64{0.5, 0.5}}}, FitOptions{}, "samples[0].utility"},
		{"minimum below resources", Linear, good, FitOptions{MinSamples: 1}, "min_samples"},
		{"condition bound", Linear, good, FitOptions{MaxCondition: 0.5}, "max_condition"},
	} {
		_, err := FitWeights(c.kind, 2, c.samples, c.opt)
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(clearhouse.ErrorMessage(err), c.want) {
			t.Errorf("%s: error %v, want EINVALID containing %q", c.name, err, c.want)
		}
	}
}
