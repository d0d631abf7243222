package auction_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
	"pgregory.net/rapid"
)

// genInstance draws a small market: a few pools, buyers, sellers and traders, with
// shared or per-bundle limits.
func genInstance(t *rapid.T) auction.Instance {
	np := rapid.IntRange(1, 5).Draw(t, "pools")
	inst := auction.Instance{Params: auction.Params{MaxRounds: 5000}}
	for i := range np {
		inst.Pools = append(inst.Pools, auction.Pool{ID: fmt.Sprintf("p%d", i),
			Supply: float64(rapid.IntRange(0, 20).Draw(t, "supply")), ReservePrice: float64(rapid.IntRange(0, 40).Draw(t, "reserve")) / 10})
	}
	nb := rapid.IntRange(0, 8).Draw(t, "bidders")
	for i := range nb {
		b := auction.Bidder{ID: fmt.Sprintf("b%d", i)}
		nbundles := rapid.IntRange(1, 3).Draw(t, "bundles")
		sign := 1.0
		if rapid.IntRange(0, 3).Draw(t, "seller") == 0 {
			sign = -1
		}
		for range nbundles {
			bundle := auction.Bundle{}
			for j := range np {
				if rapid.Bool().Draw(t, "in") {
					q := float64(rapid.IntRange(1, 10).Draw(t, "q")) * sign
					if rapid.IntRange(0, 5).Draw(t, "flip") == 0 {
						q = -q // traders
					}
					bundle[fmt.Sprintf("p%d", j)] = q
				}
			}
			if len(bundle) == 0 {
				bundle["p0"] = sign
			}
			b.Bundles = append(b.Bundles, bundle)
		}
		limit := func() float64 { return float64(rapid.IntRange(-100, 300).Draw(t, "limit")) }
		if rapid.Bool().Draw(t, "perBundle") {
			for range b.Bundles {
				b.Limits = append(b.Limits, limit())
			}
		} else {
			l := limit()
			b.Limit = &l
		}
		inst.Bidders = append(inst.Bidders, b)
	}
	return inst
}

// atCeiling says whether a pool with excess demand is at the clock's ceiling of 2^50
// micro-dollars per unit, where the clock stops before max_rounds.
func atCeiling(res auction.Result) bool {
	for id, z := range res.ExcessDemand {
		if z > 0 && math.Round(res.Prices[id]*1e6) >= 1<<50 {
			return true
		}
	}
	return false
}

func TestPropertiesOfResults(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t)
		res, err := auction.Solve(inst, auction.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range inst.Pools {
			if res.Prices[p.ID] < p.ReservePrice {
				t.Fatalf("pool %s below reserve: %v < %v", p.ID, res.Prices[p.ID], p.ReservePrice)
			}
		}
		if res.Converged {
			if err := auction.Check(inst, res); err != nil {
				t.Fatal(err)
			}
		} else if res.Rounds != inst.Params.MaxRounds && !atCeiling(res) {
			t.Fatalf("stopped after %d rounds without converging, no pool with excess demand at the ceiling", res.Rounds)
		}
		again, _ := auction.Solve(inst, auction.Options{})
		zeroSeconds(&res, &again)
		forgetSearchOrder(&res, &again)
		if !reflect.DeepEqual(res, again) {
			t.Fatal("two runs of one instance differ")
		}
	})
}

// Raising a winning buyer's limit never makes it lose. (For a bidder that also
// sells, the clock's path can change so that it ends at lower prices in the pools
// it sells in, where it no longer wants to trade: the property is about buyers.)
func TestRaisingAWinnersLimitKeepsItWinning(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		inst := genInstance(t)
		res, _ := auction.Solve(inst, auction.Options{})
		var buyers []auction.Winner
		for _, w := range res.Winners {
			if onlyBuys(inst, w.ID) {
				buyers = append(buyers, w)
			}
		}
		if !res.Converged || len(buyers) == 0 {
			return
		}
		w := rapid.SampledFrom(buyers).Draw(t, "winner")
		raise := float64(rapid.IntRange(1, 500).Draw(t, "raise"))
		for i := range inst.Bidders {
			b := &inst.Bidders[i]
			if b.ID != w.ID {
				continue
			}
			if b.Limit != nil {
				l := *b.Limit + raise
				b.Limit = &l
			} else {
				ls := append([]float64(nil), b.Limits...)
				for k := range ls {
					ls[k] += raise
				}
				b.Limits = ls
			}
		}
		res2, _ := auction.Solve(inst, auction.Options{})
		if !res2.Converged {
			return
		}
		for _, w2 := range res2.Winners {
			if w2.ID == w.ID {
				return
			}
		}
		t.Fatalf("%s won with its limit and lost with %v more", w.ID, raise)
	})
}

func FuzzDecodeInstance(f *testing.F) {
	f.Add([]byte(`{"pools":[{"id":"p","supply":1,"reserve_price":1}],"bidders":[{"id":"b","limit":3,"bundles":[{"p":1}]}]}`))
	f.Add([]byte(`{"pools":[{"id":"a","supply":0,"reserve_price":0}],"bidders":[{"id":"s","limits":[-5],"bundles":[{"a":-2}]}],"params":{"max_rounds":3}}`))
	f.Add([]byte(`{"pools":[{"id":"p","supply":1e300,"reserve_price":-0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		inst, err := auction.DecodeInstance(bytes.NewReader(data))
		if err != nil {
			return
		}
		inst.Params.MaxRounds = min(inst.Params.MaxRounds, 200)
		res, err := auction.Solve(inst, auction.Options{})
		if err != nil {
			t.Fatalf("a decoded, valid instance was refused by Solve: %v", err)
		}
		if res.Converged {
			if err := auction.Check(inst, res); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestResultJSONShape(t *testing.T) {
	res, _ := auction.Solve(auction.Instance{Pools: []auction.Pool{{ID: "p", Supply: 1, ReservePrice: 1}}}, auction.Options{})
	var buf bytes.Buffer
	if err := res.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"converged", "rounds", "prices", "winners", "operator_sold", "excess_demand", "seconds"} {
		if _, ok := m[k]; !ok {
			t.Errorf("result JSON lacks %q", k)
		}
	}
	if _, ok := m["trajectory"]; ok {
		t.Error("the trajectory is written without being asked for")
	}
}

func onlyBuys(inst auction.Instance, id string) bool {
	for _, b := range inst.Bidders {
		if b.ID != id {
			continue
		}
		for _, bundle := range b.Bundles {
			for _, q := range bundle {
				if q < 0 {
					return false
				}
			}
		}
	}
	return true
}
