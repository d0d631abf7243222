package auction_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
)

func TestDefaultCurveHasTheFiveProperties(t *testing.T) {
	c, err := auction.DefaultCurve.Build()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(c.Phi(c.Threshold())-1) > 1e-12 {
		t.Errorf("phi(threshold) = %v, want 1", c.Phi(c.Threshold()))
	}
	if math.Abs(c.Phi(1)/c.Phi(0)-c.K()) > 1e-9 {
		t.Errorf("phi(1)/phi(0) = %v, want k = %v", c.Phi(1)/c.Phi(0), c.K())
	}
	if c.Phi(0.95) <= 1 || c.Phi(0.5) > 1 {
		t.Errorf("phi(0.95) = %v, phi(0.5) = %v", c.Phi(0.95), c.Phi(0.5))
	}
	pts := c.Sample(10)
	if len(pts) != 11 || pts[0].Psi != 0 || pts[10].Psi != 1 {
		t.Fatalf("Sample = %+v", pts)
	}
}

func TestCurvesRefuseWhatBreaksAProperty(t *testing.T) {
	for want, spec := range map[string]auction.CurveSpec{
		"k must be more than 1":                    {Kind: "parametric", K: 0.5, Threshold: 0.8, Gamma: 3},
		"threshold must be":                        {Kind: "parametric", K: 4, Threshold: 1.2, Gamma: 3},
		"pricier than moves out of congested ones": {Kind: "parametric", K: 4, Threshold: 0.8, Gamma: 0.2},
		"must be increasing":                       {Kind: "points", Points: []auction.CurvePoint{{0, 0.5}, {0.5, 0.4}, {1, 2}}},
		"from psi 0 to psi 1":                      {Kind: "points", Points: []auction.CurvePoint{{0.1, 0.5}, {1, 2}}},
		"at most 1 at psi 0":                       {Kind: "points", Points: []auction.CurvePoint{{0, 1.5}, {1, 3}}},
		"phi(0.99)/phi(0.80) = ":                   {Kind: "points", Points: []auction.CurvePoint{{0, 0.2}, {0.4, 0.95}, {1, 1.1}}},
		"kind must be":                             {Kind: "spline"},
	} {
		_, err := spec.Build()
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

// Property 4 is checked on relative spread. The curve k = 1e6, gamma = 0.5 is
// steeper on average between 80% and 99% (its absolute slope there is far
// larger) yet multiplies a price by about 30 from 15% to 40% and only by about 4
// from 80% to 99%: a team moving between two idle pools would pay more, relatively,
// than one moving out of a congested pool. It is refused, saying so.
func TestPropertyFourComparesRelativeSpread(t *testing.T) {
	spec := auction.CurveSpec{Kind: "parametric", K: 1e6, Threshold: 0.8, Gamma: 0.5}
	phi := func(psi float64) float64 {
		return math.Pow(spec.K, math.Pow(psi, spec.Gamma)-math.Pow(spec.Threshold, spec.Gamma))
	}
	if high, low := (phi(0.99)-phi(0.80))/0.19, (phi(0.40)-phi(0.15))/0.25; !(high > low) {
		t.Fatalf("the absolute slopes should pass the old check: %v vs %v", high, low)
	}
	if high, low := phi(0.99)/phi(0.80), phi(0.40)/phi(0.15); !(high < 5 && low > 25) {
		t.Fatalf("relative spreads %v and %v", high, low)
	}
	_, err := spec.Build()
	if clearhouse.ErrorCode(err) != clearhouse.EINVALID ||
		!strings.Contains(err.Error(), "moves between under-utilized pools would be pricier than moves out of congested ones") {
		t.Fatalf("k=1e6, gamma=0.5: %v", err)
	}
	// The same k with gamma = 3 (flat at low utilization) is accepted.
	if _, err := (auction.CurveSpec{Kind: "parametric", K: 1e6, Threshold: 0.8, Gamma: 3}).Build(); err != nil {
		t.Fatalf("k=1e6, gamma=3: %v", err)
	}
}

func TestPointsCurveInterpolatesAndFindsItsThreshold(t *testing.T) {
	spec := auction.CurveSpec{Kind: "points", Points: []auction.CurvePoint{{1, 3}, {0, 0.5}, {0.4, 0.6}, {0.8, 1}, {0.9, 1.6}}}
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(c.Threshold()-0.8) > 1e-12 || math.Abs(c.K()-6) > 1e-12 {
		t.Fatalf("threshold %v k %v", c.Threshold(), c.K())
	}
	if got := c.Phi(0.85); math.Abs(got-1.3) > 1e-12 {
		t.Fatalf("phi(0.85) = %v, want 1.3", got)
	}
	raw, _ := json.Marshal(c.Spec())
	var back auction.CurveSpec
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if c2, err := back.Build(); err != nil || c2.Phi(0.85) != c.Phi(0.85) {
		t.Fatalf("the spec does not round-trip through JSON: %v", err)
	}
}

func TestReservePrice(t *testing.T) {
	c, _ := auction.DefaultCurve.Build()
	r, err := auction.ReservePrice(c, 0.8, 2.5)
	if err != nil || math.Abs(r-2.5) > 1e-12 {
		t.Fatalf("reserve at the threshold = %v, %v; want the unit cost", r, err)
	}
	hi, _ := auction.ReservePrice(c, 0.97, 2.5)
	lo, _ := auction.ReservePrice(c, 0.2, 2.5)
	if !(hi > 2.5 && lo < 2.5) {
		t.Fatalf("congested %v, idle %v", hi, lo)
	}
	for _, bad := range [][2]float64{{-0.1, 1}, {1.1, 1}, {0.5, -1}, {math.NaN(), 1}} {
		if _, err := auction.ReservePrice(c, bad[0], bad[1]); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("ReservePrice(%v, %v) = %v", bad[0], bad[1], err)
		}
	}
	if _, err := auction.ReservePrice(auction.Curve{}, 0.5, 1); err == nil {
		t.Error("an unbuilt curve gave a price")
	}
}

func TestGenerateIsSeededAndValid(t *testing.T) {
	cfg := auction.GenConfig{Seed: 9, Clusters: 4, Resources: 3, Bidders: 200, Scarcity: 2}
	a, b := auction.Generate(cfg), auction.Generate(cfg)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatal("one seed gave two instances")
	}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	var sellers, traders, perBundle, multi int
	for _, bd := range a.Bidders {
		neg, pos := false, false
		for _, bundle := range bd.Bundles {
			for _, q := range bundle {
				neg, pos = neg || q < 0, pos || q > 0
			}
		}
		switch {
		case neg && pos:
			traders++
		case neg:
			sellers++
		}
		if bd.Limits != nil {
			perBundle++
		}
		if len(bd.Bundles) > 1 {
			multi++
		}
	}
	if sellers == 0 || traders == 0 || perBundle == 0 || multi == 0 {
		t.Fatalf("sellers %d traders %d per-bundle %d XOR %d: the market lacks a kind of order", sellers, traders, perBundle, multi)
	}
	c := auction.Generate(auction.GenConfig{Seed: 10, Clusters: 4, Resources: 3, Bidders: 200, Scarcity: 2})
	jc, _ := json.Marshal(c)
	if string(jc) == string(ja) {
		t.Fatal("two seeds gave one instance")
	}
}
