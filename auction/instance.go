// Package auction is Clearhouse's ascending clock auction: XOR bundle bids and
// offers in, uniform linear prices and allocations out. It is pure computation: no
// database, HTTP or templates, so the web application, the command line and the
// benchmarks run the very same code. Instances and results follow
// docs/formats/auction.md.
package auction

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/clearhouse/clearhouse"
)

// Instance is one auction to solve: the pools for sale, the bidders, and the
// clock's parameters.
type Instance struct {
	Pools   []Pool   `json:"pools"`
	Bidders []Bidder `json:"bidders"`
	Params  Params   `json:"params"`
}

// Pool is one resource type in one cluster. The operator offers Supply units at any
// price at or above ReservePrice.
type Pool struct {
	ID           string  `json:"id"`
	Supply       float64 `json:"supply"`
	ReservePrice float64 `json:"reserve_price"`
}

// Bidder is one order: an XOR list of bundles and either one Limit for whichever
// bundle it gets or one entry of Limits per bundle. A positive limit is the most the
// bidder pays; a negative one the least it must receive.
type Bidder struct {
	ID      string    `json:"id"`
	Limit   *float64  `json:"limit,omitempty"`
	Limits  []float64 `json:"limits,omitempty"`
	Bundles []Bundle  `json:"bundles"`
}

// LimitOf returns the limit that applies to bundle k.
func (b Bidder) LimitOf(k int) float64 {
	if b.Limits != nil {
		return b.Limits[k]
	}
	return *b.Limit
}

// Bundle maps pool ids to signed whole quantities: positive buys, negative sells.
type Bundle map[string]float64

// Params are the clock's parameters. Missing values take the defaults.
type Params struct {
	Alpha     float64 `json:"alpha"`
	Delta     float64 `json:"delta"`
	MinStep   float64 `json:"min_step"`
	MaxRounds int     `json:"max_rounds"`
	// FinalRound sets the final round after the clock; nil runs it with defaults.
	FinalRound *FinalParams `json:"final_round,omitempty"`
}

// DefaultParams are the parameters the format document names.
var DefaultParams = Params{Alpha: 1.0, Delta: 0.05, MinStep: 0.001, MaxRounds: 100000}

// Limits on what an instance may hold.
const (
	MaxQuantity  = 1e12       // the largest |quantity| in a bundle, and the largest supply
	MaxMoney     = 1e15       // the largest |limit| and reserve price, in dollars
	MaxRoundsCap = 10_000_000 // the largest max_rounds
)

// withDefaults fills the zero fields of p from DefaultParams.
func (p Params) withDefaults() Params {
	if p.Alpha == 0 {
		p.Alpha = DefaultParams.Alpha
	}
	if p.Delta == 0 {
		p.Delta = DefaultParams.Delta
	}
	if p.MinStep == 0 {
		p.MinStep = DefaultParams.MinStep
	}
	if p.MaxRounds == 0 {
		p.MaxRounds = DefaultParams.MaxRounds
	}
	return p
}

// DecodeInstance reads one JSON instance from r, refusing unknown fields and
// trailing data, and validates it. Absent or partial params take the defaults.
func DecodeInstance(r io.Reader) (Instance, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Instance{}, clearhouse.Errorf(clearhouse.EINVALID, "instance: %v", err)
	}
	inst, err := decodeFast(data)
	if err != nil {
		if inst, err = decodeJSON(data); err != nil {
			return Instance{}, err
		}
	}
	inst.Params = inst.Params.withDefaults()
	if err := inst.Validate(); err != nil {
		return Instance{}, err
	}
	return inst, nil
}

// decodeJSON decodes an instance with encoding/json, refusing unknown fields and
// trailing data: the reference decodeFast follows, and the decoder of every input
// decodeFast leaves to it.
func decodeJSON(data []byte) (Instance, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var inst Instance
	if err := dec.Decode(&inst); err != nil {
		return Instance{}, clearhouse.Errorf(clearhouse.EINVALID, "instance: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Instance{}, clearhouse.Errorf(clearhouse.EINVALID, "instance: unexpected data after the instance")
	}
	return inst, nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func invalid(format string, args ...any) error {
	return clearhouse.Errorf(clearhouse.EINVALID, format, args...)
}

// Validate checks the clock's parameters and returns EINVALID naming the one at
// fault. Zero params are taken as defaults. Every auction is scheduled through it
// (exchange.Market.ScheduleAuction), whoever sets the params.
func (p Params) Validate() error {
	p = p.withDefaults()
	if p.FinalRound != nil {
		if err := CheckFinalSeconds(p.FinalRound.Seconds); err != nil {
			return invalid("params.final_round.seconds: %s", clearhouse.ErrorMessage(err))
		}
	}
	switch {
	case !finite(p.Alpha) || p.Alpha <= 0 || p.Alpha > 1e6:
		return invalid("params.alpha: must be a positive number, got %v", p.Alpha)
	case !finite(p.Delta) || p.Delta <= 0 || p.Delta > 1:
		return invalid("params.delta: must be in (0, 1], got %v", p.Delta)
	case !finite(p.MinStep) || p.MinStep <= 0 || p.MinStep > p.Delta:
		return invalid("params.min_step: must be in (0, delta], got %v", p.MinStep)
	case p.MaxRounds < 1 || p.MaxRounds > MaxRoundsCap:
		return invalid("params.max_rounds: must be between 1 and %d, got %d", MaxRoundsCap, p.MaxRounds)
	}
	return nil
}

// Validate checks the instance against the format's rules and returns EINVALID
// naming the pool, bidder or parameter at fault. Zero params are taken as defaults.
func (inst Instance) Validate() error {
	if err := inst.Params.Validate(); err != nil {
		return err
	}
	if len(inst.Pools) == 0 {
		return invalid("pools: at least one pool is required")
	}
	pools := make(map[string]bool, len(inst.Pools))
	for i, pl := range inst.Pools {
		switch {
		case pl.ID == "":
			return invalid("pools[%d]: id is required", i)
		case pools[pl.ID]:
			return invalid("pool %q: listed twice", pl.ID)
		case !finite(pl.Supply) || pl.Supply < 0 || pl.Supply > MaxQuantity || pl.Supply != math.Trunc(pl.Supply):
			return invalid("pool %q: supply must be a whole number from 0 to %g, got %v", pl.ID, float64(MaxQuantity), pl.Supply)
		case !finite(pl.ReservePrice) || pl.ReservePrice < 0 || pl.ReservePrice > MaxMoney:
			return invalid("pool %q: reserve_price must be a number from 0 to %g, got %v", pl.ID, float64(MaxMoney), pl.ReservePrice)
		}
		pools[pl.ID] = true
	}
	bidders := make(map[string]bool, len(inst.Bidders))
	for i, b := range inst.Bidders {
		if b.ID == "" {
			return invalid("bidders[%d]: id is required", i)
		}
		if bidders[b.ID] {
			return invalid("bidder %q: listed twice", b.ID)
		}
		bidders[b.ID] = true
		if err := b.validate(pools); err != nil {
			return err
		}
	}
	return nil
}

func (b Bidder) validate(pools map[string]bool) error {
	if len(b.Bundles) == 0 {
		return invalid("bidder %q: at least one bundle is required", b.ID)
	}
	if (b.Limit == nil) == (b.Limits == nil) {
		return invalid("bidder %q: give exactly one of limit and limits", b.ID)
	}
	if b.Limits != nil && len(b.Limits) != len(b.Bundles) {
		return invalid("bidder %q: %d limits for %d bundles", b.ID, len(b.Limits), len(b.Bundles))
	}
	for k := range b.Bundles {
		if l := b.LimitOf(k); !finite(l) || math.Abs(l) > MaxMoney {
			return invalid("bidder %q: limit of bundle %d must be a number within ±%g, got %v", b.ID, k, float64(MaxMoney), l)
		}
	}
	for k, bundle := range b.Bundles {
		nonzero, faulty := false, false
		for id, q := range bundle {
			faulty = faulty || !pools[id] || !finite(q) || q != math.Trunc(q) || math.Abs(q) > MaxQuantity
			nonzero = nonzero || q != 0
		}
		if faulty { // name the first faulty pool in id order, so the message is stable
			ids := make([]string, 0, len(bundle))
			for id := range bundle {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				q := bundle[id]
				if !pools[id] {
					return invalid("bidder %q: bundle %d names unknown pool %q", b.ID, k, id)
				}
				if !finite(q) || q != math.Trunc(q) || math.Abs(q) > MaxQuantity {
					return invalid("bidder %q: bundle %d: quantity of %q must be a whole number within ±%g, got %v", b.ID, k, id, float64(MaxQuantity), q)
				}
			}
		}
		if !nonzero {
			return invalid("bidder %q: bundle %d is empty or all zero", b.ID, k)
		}
	}
	return nil
}

// Winner is a bidder that gets one of its bundles, what it pays for it (negative
// receives), and its bundle at the published prices (AtPrices). The two are equal
// unless the final round could not support its allocation with uniform prices.
type Winner struct {
	ID          string  `json:"id"`
	BundleIndex int     `json:"bundle_index"`
	Payment     float64 `json:"payment"`
	AtPrices    float64 `json:"at_prices"`
	// Core says the winner pays a core-selecting payment (its part of the market
	// was proved optimal), and VCG is then its VCG payment, never above Payment
	// (absent when zero). Both are absent where the capped-price rule applied.
	Core bool    `json:"core,omitempty"`
	VCG  float64 `json:"vcg,omitempty"`
	// LeastRevenue says the winner's part paid the least-revenue core point the
	// LP found, not the one nearest VCG, because the nearest-VCG step failed
	// (FinalRound.LeastRevenueParts counts those parts): the payment is still in
	// the core, at least VCG and at most the limit. Only with Core; absent when
	// false.
	LeastRevenue bool `json:"least_revenue,omitempty"`
}

// Round is the prices at the end of one round of the clock.
type Round struct {
	Round  int                `json:"round"`
	Prices map[string]float64 `json:"prices"`
}

// Result is a solved instance, as the format document defines it. Trajectory is
// filled only when asked for.
type Result struct {
	Converged    bool               `json:"converged"`
	Rounds       int                `json:"rounds"`
	Prices       map[string]float64 `json:"prices"`
	Winners      []Winner           `json:"winners"`
	OperatorSold map[string]float64 `json:"operator_sold"`
	ExcessDemand map[string]float64 `json:"excess_demand"`
	FinalRound   *FinalRound        `json:"final_round,omitempty"`
	// ClockWinners is the clock's own allocation and payments when the final round
	// ran (nil otherwise), so pages can show who the final round changed. It is not
	// part of the format.
	ClockWinners []Winner `json:"-"`
	Seconds      float64  `json:"seconds"`
	Trajectory   []Round  `json:"trajectory,omitempty"`
}

// Encode writes the result as indented JSON.
func (r Result) Encode(w io.Writer) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encoding result: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
