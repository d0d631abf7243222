package auction_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
)

func lim(v float64) *float64 { return &v }

func solve(t *testing.T, inst auction.Instance) auction.Result {
	t.Helper()
	res, err := auction.Solve(inst, auction.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Converged {
		if err := auction.Check(inst, res); err != nil {
			t.Fatalf("result fails the format's conditions: %v", err)
		}
	}
	return res
}

func winner(res auction.Result, id string) (auction.Winner, bool) {
	for _, w := range res.Winners {
		if w.ID == id {
			return w, true
		}
	}
	return auction.Winner{}, false
}

// One pool of 10 units, two buyers of 10: the price rises until the weaker drops
// out, which happens between its limit per unit and one step above it. The final
// round keeps that allocation and charges the core payment, here the VCG (second
// price) payment: the weak bidder's limit, 20, where the clock's price asks a
// little more.
func TestOnePoolTwoBuyers(t *testing.T) {
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "p", Supply: 10, ReservePrice: 1}},
		Bidders: []auction.Bidder{
			{ID: "strong", Limit: lim(30), Bundles: []auction.Bundle{{"p": 10}}},
			{ID: "weak", Limit: lim(20), Bundles: []auction.Bundle{{"p": 10}}},
		},
	}
	res := solve(t, inst)
	if !res.Converged || len(res.Winners) != 1 || res.Winners[0].ID != "strong" {
		t.Fatalf("winners %+v, want only strong", res.Winners)
	}
	if p := res.Prices["p"]; p <= 2 || p > 2*1.05+1e-9 {
		t.Fatalf("price %v, want just above the weak bidder's 2.00 per unit (within one 5%% step)", p)
	}
	if w := res.Winners[0]; math.Abs(w.AtPrices-10*res.Prices["p"]) > 1e-9 || math.Abs(w.Payment-20) > 1e-9 || !w.Core || math.Abs(w.VCG-20) > 1e-9 {
		t.Fatalf("winner %+v, want a core payment of 20 (VCG 20) against 10 x price", w)
	}
	if res.OperatorSold["p"] != 10 || res.ExcessDemand["p"] != 0 {
		t.Fatalf("sold %v excess %v", res.OperatorSold["p"], res.ExcessDemand["p"])
	}
}

// A buyer that accepts either cluster takes the cheaper one, and moves when its
// first choice gets dear.
func TestBuyerSwitchesCluster(t *testing.T) {
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "east/cpu", Supply: 100, ReservePrice: 1}, {ID: "west/cpu", Supply: 100, ReservePrice: 1.2}},
		Bidders: []auction.Bidder{
			{ID: "local", Limit: lim(300), Bundles: []auction.Bundle{{"east/cpu": 100}}},
			{ID: "flexible", Limit: lim(400), Bundles: []auction.Bundle{{"east/cpu": 100}, {"west/cpu": 100}}},
		},
	}
	res := solve(t, inst)
	f, ok := winner(res, "flexible")
	if !ok || f.BundleIndex != 1 {
		t.Fatalf("flexible got %+v, want the west bundle", f)
	}
	if l, ok := winner(res, "local"); !ok || l.BundleIndex != 0 {
		t.Fatalf("local got %+v", l)
	}
	// At the start east is cheaper, so flexible first demanded east.
	traced, _ := auction.Solve(inst, auction.Options{Trajectory: true})
	if len(traced.Trajectory) < 2 || traced.Trajectory[0].Prices["east/cpu"] != 1 {
		t.Fatalf("trajectory %+v", traced.Trajectory)
	}
	if !reflect.DeepEqual(traced.Prices, res.Prices) {
		t.Fatal("asking for the trajectory changed the prices")
	}
}

// A seller joins when the price reaches its limit per unit, and the buyer gets the
// units it sells.
func TestSellerJoinsAtItsLimit(t *testing.T) {
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "p", Supply: 0, ReservePrice: 1}},
		Bidders: []auction.Bidder{
			{ID: "buyer", Limit: lim(500), Bundles: []auction.Bundle{{"p": 50}}},
			{ID: "seller", Limit: lim(-150), Bundles: []auction.Bundle{{"p": -60}}},
		},
	}
	res := solve(t, inst)
	s, sold := winner(res, "seller")
	b, bought := winner(res, "buyer")
	if !sold || !bought {
		t.Fatalf("winners %+v, want both", res.Winners)
	}
	if p := res.Prices["p"]; p < 2.5 || p > 2.5*1.05+1e-9 {
		t.Fatalf("price %v, want the seller's 2.50 per unit (within one step)", p)
	}
	if s.Payment >= 0 || b.Payment <= 0 || s.Payment > -150+1e-9 {
		t.Fatalf("seller %+v buyer %+v", s, b)
	}
}

// A trader moves quota from a cheap cluster to a dear one when the price gap is
// within its limit.
func TestTrader(t *testing.T) {
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "a", Supply: 0, ReservePrice: 1}, {ID: "b", Supply: 10, ReservePrice: 1}},
		Bidders: []auction.Bidder{
			{ID: "mover", Limit: lim(5), Bundles: []auction.Bundle{{"a": -10, "b": 10}}},
			{ID: "buyer-a", Limit: lim(40), Bundles: []auction.Bundle{{"a": 10}}},
		},
	}
	res := solve(t, inst)
	m, ok := winner(res, "mover")
	if !ok {
		t.Fatalf("the mover did not trade: %+v", res)
	}
	if _, ok := winner(res, "buyer-a"); !ok {
		t.Fatal("the buyer of a did not get the units the mover left")
	}
	if m.Payment > 5+1e-9 {
		t.Fatalf("mover pays %v, over its limit", m.Payment)
	}
}

// Ties go to the lowest bundle index, and the result does not depend on the order
// pools are listed in.
func TestTiesAndDeterminism(t *testing.T) {
	inst := auction.Instance{
		Pools:   []auction.Pool{{ID: "x", Supply: 10, ReservePrice: 2}, {ID: "y", Supply: 10, ReservePrice: 2}},
		Bidders: []auction.Bidder{{ID: "t", Limit: lim(100), Bundles: []auction.Bundle{{"y": 5}, {"x": 5}}}},
	}
	res := solve(t, inst)
	if w, _ := winner(res, "t"); w.BundleIndex != 0 {
		t.Fatalf("tie went to bundle %d, want 0", w.BundleIndex)
	}
	swapped := inst
	swapped.Pools = []auction.Pool{inst.Pools[1], inst.Pools[0]}
	res2 := solve(t, swapped)
	zeroSeconds(&res, &res2)
	if !reflect.DeepEqual(res, res2) {
		t.Fatalf("pool order changed the result:\n%+v\n%+v", res, res2)
	}
}

func TestNonConvergenceIsReported(t *testing.T) {
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "p", Supply: 1, ReservePrice: 1}},
		Bidders: []auction.Bidder{
			{ID: "a", Limit: lim(1e9), Bundles: []auction.Bundle{{"p": 1}}},
			{ID: "b", Limit: lim(1e9), Bundles: []auction.Bundle{{"p": 1}}},
		},
		Params: auction.Params{MaxRounds: 20},
	}
	res := solve(t, inst)
	if res.Converged || res.Rounds != 20 || res.ExcessDemand["p"] <= 0 {
		t.Fatalf("got %+v, want a non-converged run of 20 rounds with p over-demanded", res)
	}
}

func TestValidationNamesTheFault(t *testing.T) {
	good := func() auction.Instance {
		return auction.Instance{
			Pools:   []auction.Pool{{ID: "p", Supply: 1, ReservePrice: 1}},
			Bidders: []auction.Bidder{{ID: "b", Limit: lim(1), Bundles: []auction.Bundle{{"p": 1}}}},
		}
	}
	for want, mutate := range map[string]func(*auction.Instance){
		`unknown pool "q"`:     func(i *auction.Instance) { i.Bidders[0].Bundles[0]["q"] = 1 },
		"empty or all zero":    func(i *auction.Instance) { i.Bidders[0].Bundles[0] = auction.Bundle{"p": 0} },
		"whole number":         func(i *auction.Instance) { i.Bidders[0].Bundles[0]["p"] = 1.5 },
		"within ±":             func(i *auction.Instance) { i.Bidders[0].Bundles[0]["p"] = 1e15 },
		`pool "p": supply`:     func(i *auction.Instance) { i.Pools[0].Supply = -1 },
		"reserve_price":        func(i *auction.Instance) { i.Pools[0].ReservePrice = math.NaN() },
		"exactly one of limit": func(i *auction.Instance) { i.Bidders[0].Limits = []float64{1} },
		"listed twice":         func(i *auction.Instance) { i.Bidders = append(i.Bidders, i.Bidders[0]) },
		"limit of bundle":      func(i *auction.Instance) { i.Bidders[0].Limit = lim(math.Inf(1)) },
		"params.delta":         func(i *auction.Instance) { i.Params.Delta = 2 },
		"params.max_rounds":    func(i *auction.Instance) { i.Params.MaxRounds = -5 },
		"at least one bundle":  func(i *auction.Instance) { i.Bidders[0].Bundles = nil },
		"1 limits for 2": func(i *auction.Instance) {
			i.Bidders[0].Limit = nil
			i.Bidders[0].Limits = []float64{1}
			i.Bidders[0].Bundles = append(i.Bidders[0].Bundles, auction.Bundle{"p": 2})
		},
	} {
		inst := good()
		mutate(&inst)
		err := inst.Validate()
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
		if _, err := auction.Solve(inst, auction.Options{}); err == nil {
			t.Errorf("%s: Solve accepted an invalid instance", want)
		}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeInstance(t *testing.T) {
	inst, err := auction.DecodeInstance(strings.NewReader(`{"pools":[{"id":"p","supply":1,"reserve_price":1}],
		"bidders":[{"id":"b","limits":[3],"bundles":[{"p":1}]}],"params":{"delta":0.1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if inst.Params.Delta != 0.1 || inst.Params.Alpha != 1 || inst.Params.MaxRounds != 100000 {
		t.Fatalf("params %+v: partial params must take the defaults", inst.Params)
	}
	for _, bad := range []string{`{"pools":[],"bogus":1}`, `{"pools":[{"id":"p","supply":1,"reserve_price":1}],"bidders":[]} {}`, `[`, ``} {
		if _, err := auction.DecodeInstance(strings.NewReader(bad)); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}

// Demo auction #8's ap-south/cpu: the operator offers 200 units, and each buyer
// wants more than that in one all-or-nothing bundle, with another cluster as its
// alternative. The price must rise, since demand exceeds supply, until the last
// buyer prefers its other cluster; then nobody buys the pool, which ends well
// above reserve with all 200 units unsold. That is the clock working as designed
// (bundles are indivisible and prices never fall), not an overshooting step: the
// final price is within one step of where the last buyer switched.
func TestBuyersLargerThanSupplyLeaveThePoolUnsoldAboveReserve(t *testing.T) {
	inst := auction.Instance{
		Pools: []auction.Pool{{ID: "ap/cpu", Supply: 200, ReservePrice: 1.1}, {ID: "eu/cpu", Supply: 1000, ReservePrice: 2}, {ID: "us/cpu", Supply: 1000, ReservePrice: 3}},
		Bidders: []auction.Bidder{
			{ID: "search", Limit: lim(733), Bundles: []auction.Bundle{{"ap/cpu": 300}, {"eu/cpu": 300}}},
			{ID: "ml", Limit: lim(1585), Bundles: []auction.Bundle{{"ap/cpu": 400}, {"us/cpu": 400}}},
		},
	}
	res := solve(t, inst)
	if !res.Converged || len(res.Winners) != 2 {
		t.Fatalf("winners %+v, want both buyers, elsewhere", res.Winners)
	}
	for _, w := range res.Winners {
		if w.BundleIndex != 1 {
			t.Errorf("%s won bundle %d; ap/cpu cannot cover any bundle, want its other cluster", w.ID, w.BundleIndex)
		}
	}
	// ml leaves ap/cpu once 400 units there cost more than 400 in us/cpu ($3 each).
	if p := res.Prices["ap/cpu"]; p <= 3 || p > 3*1.05+1e-9 {
		t.Errorf("ap/cpu price %v, want just above $3.00, where the last buyer switched", p)
	}
	if res.ExcessDemand["ap/cpu"] != -200 || res.OperatorSold["ap/cpu"] != 0 {
		t.Errorf("ap/cpu excess %v sold %v, want all 200 unsold", res.ExcessDemand["ap/cpu"], res.OperatorSold["ap/cpu"])
	}
}
