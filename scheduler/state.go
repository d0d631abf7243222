package scheduler

import (
	"maps"
	"math"
	"slices"

	"github.com/clearhouse/clearhouse"
)

// PredictorStateVersion is the version of PredictorState this package writes
// and reads.
const PredictorStateVersion = 1

// PredictorState is a predictor's learned state as a plain value that encodes
// to JSON and back without loss (floats round-trip exactly in encoding/json):
// what a server stores so that predictors survive restarts and every server
// sharing a database prices alike. Kind names the one field that is set:
// "seasonal", "fractional", "shifted" (Off and Inner) or "load-curve".
// Two predictors restored from equal states quote identical prices and, fed the
// same bids, stay equal.
type PredictorState struct {
	Version    int              `json:"version"`
	Kind       string           `json:"kind"`
	Seasonal   *SeasonalState   `json:"seasonal,omitempty"`
	Fractional *FractionalState `json:"fractional,omitempty"`
	LoadCurve  *LoadCurve       `json:"load_curve,omitempty"`
	Off        Slot             `json:"off,omitempty"`
	Inner      *PredictorState  `json:"inner,omitempty"`
}

// SeasonalState is a Seasonal's learned state: its settings, the first slot it
// saw demand from, demand by lead time, and per pool the nonzero cells of its
// daily and weekly demand tables.
type SeasonalState struct {
	SlotsPerDay int                    `json:"slots_per_day"`
	BucketSlots int                    `json:"bucket_slots"`
	Start       Slot                   `json:"start"`
	Seen        bool                   `json:"seen"`
	Lead        []float64              `json:"lead,omitempty"`
	Pools       map[string]SeasonState `json:"pools,omitempty"`
}

// SeasonState is one pool's demand: units by time bucket and density bucket.
type SeasonState struct {
	Daily  []SeasonCell `json:"daily,omitempty"`
	Weekly []SeasonCell `json:"weekly,omitempty"`
}

// SeasonCell is the units of demand learned for one time-of-day (or
// time-of-week) bucket and one value-density bucket.
type SeasonCell struct {
	Time    int     `json:"t"`
	Density int     `json:"d"`
	Units   float64 `json:"u"`
}

// FractionalState is a Fractional's learned state: its settings, the bids in
// its history (with what accepted ones used, when reported) and the model of
// its last refit.
type FractionalState struct {
	SlotSeconds int              `json:"slot_seconds"`
	History     Slot             `json:"history"`
	Inline      bool             `json:"inline"`
	Capacity    map[string]int64 `json:"capacity"`
	Past        []PastDemand     `json:"past,omitempty"`
	RefitAt     Slot             `json:"refit_at"`
	RefitN      int              `json:"refit_n"`
	Refitted    bool             `json:"refitted"`
	Model       *SeasonalState   `json:"model,omitempty"`
}

// PastDemand is a bid in a Fractional's history and, per request, the share of
// its reserved unit-slots it used (empty: all, or not reported).
type PastDemand struct {
	Demand Demand    `json:"demand"`
	Used   []float64 `json:"used,omitempty"`
}

// SavePredictor returns p's state. It is EINVALID for a predictor this
// package cannot save (one defined elsewhere, or a Shifted around one).
func SavePredictor(p Predictor) (PredictorState, error) {
	st := PredictorState{Version: PredictorStateVersion}
	switch x := p.(type) {
	case *Seasonal:
		s := x.State()
		st.Kind, st.Seasonal = "seasonal", &s
	case *Fractional:
		f := x.State()
		st.Kind, st.Fractional = "fractional", &f
	case LoadCurve:
		st.Kind, st.LoadCurve = "load-curve", &x
	case *Shifted:
		inner, err := SavePredictor(x.P)
		if err != nil {
			return PredictorState{}, err
		}
		st.Kind, st.Off, st.Inner = "shifted", x.Off, &inner
	default:
		return PredictorState{}, clearhouse.Errorf(clearhouse.EINVALID, "predictor: %T has no state this package can save", p)
	}
	return st, nil
}

// RestorePredictor builds the predictor a state describes. It is EINVALID,
// naming the field, for an unknown version or kind or a state that could not
// have been saved (a bucket out of range, a number that is not finite).
func RestorePredictor(st PredictorState) (Predictor, error) {
	if st.Version != PredictorStateVersion {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "version: %d is not %d", st.Version, PredictorStateVersion)
	}
	switch {
	case st.Kind == "seasonal" && st.Seasonal != nil:
		return RestoreSeasonal(*st.Seasonal)
	case st.Kind == "fractional" && st.Fractional != nil:
		return restoreFractional(*st.Fractional)
	case st.Kind == "load-curve" && st.LoadCurve != nil:
		return *st.LoadCurve, nil
	case st.Kind == "shifted" && st.Inner != nil:
		p, err := RestorePredictor(*st.Inner)
		if err != nil {
			return nil, err
		}
		return &Shifted{P: p, Off: st.Off}, nil
	}
	return nil, clearhouse.Errorf(clearhouse.EINVALID, "kind: %q with its field set is not seasonal, fractional, shifted or load-curve", st.Kind)
}

// State returns s's learned state; s is not changed.
func (s *Seasonal) State() SeasonalState {
	st := SeasonalState{SlotsPerDay: s.SlotsPerDay, BucketSlots: s.BucketSlots, Start: s.start, Seen: s.seen}
	end := len(s.lead)
	for end > 0 && s.lead[end-1] == 0 {
		end--
	}
	st.Lead = slices.Clone(s.lead[:end])
	if len(s.pools) > 0 {
		st.Pools = map[string]SeasonState{}
	}
	for p, m := range s.pools {
		st.Pools[p] = SeasonState{Daily: cells(m.daily), Weekly: cells(m.weekly)}
	}
	return st
}

func cells(table [][densityBuckets]float64) []SeasonCell {
	var out []SeasonCell
	for t, row := range table {
		for d, u := range row {
			if u != 0 {
				out = append(out, SeasonCell{Time: t, Density: d, Units: u})
			}
		}
	}
	return out
}

// RestoreSeasonal builds a Seasonal from a saved state. It is EINVALID when
// the state could not have been saved.
func RestoreSeasonal(st SeasonalState) (*Seasonal, error) {
	bad := func(field string) error {
		return clearhouse.Errorf(clearhouse.EINVALID, "seasonal.%s: out of range or not a finite number", field)
	}
	if st.SlotsPerDay < 1 || st.BucketSlots < 1 || st.BucketSlots > st.SlotsPerDay {
		return nil, bad("slots_per_day")
	}
	s := &Seasonal{SlotsPerDay: st.SlotsPerDay, BucketSlots: st.BucketSlots, start: st.Start, seen: st.Seen, dirty: true}
	if len(st.Lead) > 7*s.SlotsPerDay+1 || !finite(st.Lead...) {
		return nil, bad("lead")
	}
	if len(st.Lead) > 0 || len(st.Pools) > 0 {
		s.lead = make([]float64, 7*s.SlotsPerDay+1)
		copy(s.lead, st.Lead)
	}
	nd, nw := s.buckets()
	for _, p := range slices.Sorted(maps.Keys(st.Pools)) {
		m := &season{daily: make([][densityBuckets]float64, nd), weekly: make([][densityBuckets]float64, nw)}
		for _, tab := range []struct {
			cells []SeasonCell
			table [][densityBuckets]float64
		}{{st.Pools[p].Daily, m.daily}, {st.Pools[p].Weekly, m.weekly}} {
			for _, c := range tab.cells {
				if c.Time < 0 || c.Time >= len(tab.table) || c.Density < 0 || c.Density >= densityBuckets || !finite(c.Units) {
					return nil, bad("pools[" + p + "]")
				}
				tab.table[c.Time][c.Density] = c.Units
			}
		}
		if s.pools == nil {
			s.pools = map[string]*season{}
		}
		s.pools[p] = m
	}
	return s, nil
}

// State returns f's learned state; f is not changed.
func (f *Fractional) State() FractionalState {
	st := FractionalState{SlotSeconds: f.slotSecs, History: f.History, Inline: f.Inline, Capacity: maps.Clone(f.capacity),
		RefitAt: f.refitAt, RefitN: f.refitN, Refitted: f.refitted}
	for _, p := range f.past {
		st.Past = append(st.Past, PastDemand{Demand: cloneDemand(p.d), Used: slices.Clone(p.used)})
	}
	if f.model != nil {
		m := f.model.State()
		st.Model = &m
	}
	return st
}

// RestoreFractional builds a Fractional from a saved state. It is EINVALID
// when the state could not have been saved.
func RestoreFractional(st FractionalState) (*Fractional, error) { return restoreFractional(st) }

func restoreFractional(st FractionalState) (*Fractional, error) {
	if st.SlotSeconds < 1 || st.History < 0 {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "fractional.slot_seconds: must be positive (and history not negative)")
	}
	f := NewFractional(st.SlotSeconds, st.Capacity)
	f.Inline, f.History, f.refitAt, f.refitN, f.refitted = st.Inline, st.History, st.RefitAt, st.RefitN, st.Refitted
	if f.capacity == nil {
		f.capacity = map[string]int64{}
	}
	for i, p := range st.Past {
		if !finite(p.Demand.Value) || !finite(p.Used...) || (p.Used != nil && len(p.Used) != len(p.Demand.Requests)) {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "fractional.past[%d]: a value or use that is not a finite number, or one use per request", i)
		}
		f.past = append(f.past, pastDemand{d: cloneDemand(p.Demand), used: slices.Clone(p.Used)})
	}
	if st.Model != nil {
		m, err := RestoreSeasonal(*st.Model)
		if err != nil {
			return nil, err
		}
		f.model = m
	}
	return f, nil
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
