package scheduler

import (
	"math"

	"github.com/clearhouse/clearhouse"
)

// BidLanguage says how a bid's requests combine, as YARN's reservation
// definition language does (ReservationRequestInterpreter). The zero value is
// BidAll.
type BidLanguage string

const (
	// BidAll grants every request, in any temporal order (requests may overlap).
	BidAll BidLanguage = "ALL"
	// BidAny grants exactly one of the requests: the engine chooses the one
	// the algorithm prices lowest (ties: the first), never looking at the
	// value, and the reservation holds only that one.
	BidAny BidLanguage = "ANY"
	// BidOrder grants every request, each starting no earlier than the one
	// before it ends ("map, then reduce"); gaps are allowed.
	BidOrder BidLanguage = "ORDER"
	// BidOrderNoGap is BidOrder with every request starting exactly when the
	// one before it ends: the train of requests moves as one.
	BidOrderNoGap BidLanguage = "ORDER_NO_GAP"
)

// Validate returns EINVALID naming the field when the language is not one of
// ALL (or empty), ANY, ORDER and ORDER_NO_GAP.
func (l BidLanguage) Validate() error {
	switch l {
	case "", BidAll, BidAny, BidOrder, BidOrderNoGap:
		return nil
	}
	return clearhouse.Errorf(clearhouse.EINVALID, "language: %q is not ALL, ANY, ORDER or ORDER_NO_GAP", string(l))
}

// or returns l, or BidAll for the zero value.
func (l BidLanguage) or() BidLanguage {
	if l == "" {
		return BidAll
	}
	return l
}

// QuoteBid returns the price and starts the algorithm would give the bid now,
// without committing anything and without reading its value. For an ANY bid
// Starts has the chosen request's start and Chosen its index; otherwise
// Starts has one start per request. ok is false when the bid cannot be placed;
// bad requests or an unknown language are EINVALID.
func (e *Engine) QuoteBid(now Slot, bid Bid) (Offer, bool, error) {
	if err := bid.Language.Validate(); err != nil {
		return Offer{}, false, err
	}
	if len(bid.Requests) == 0 {
		return Offer{}, false, clearhouse.Errorf(clearhouse.EINVALID, "requests: at least one is required")
	}
	for i, r := range bid.Requests {
		if err := e.validate(now, i, r); err != nil {
			return Offer{}, false, err
		}
	}
	switch bid.Language.or() {
	case BidAny:
		return e.quoteAny(now, bid.Owner, bid.Requests)
	case BidOrder:
		return e.quoteOrder(now, bid.Owner, bid.Requests)
	case BidOrderNoGap:
		return e.quoteTrain(now, bid.Owner, bid.Requests)
	}
	return e.quote(now, bid.Owner, bid.Requests)
}

// quoteAny prices each request alone and takes the cheapest (ties: the first).
func (e *Engine) quoteAny(now Slot, owner string, reqs []Request) (Offer, bool, error) {
	best, found := Offer{}, false
	for i := range reqs {
		o, ok, err := e.quote(now, owner, reqs[i:i+1])
		if err != nil {
			return Offer{}, false, err
		}
		if ok && (!found || o.Price < best.Price) {
			best, found = o, true
			best.Chosen = i
		}
	}
	return best, found, nil
}

// latestStarts are, per request of an ORDER bid, the latest start that leaves
// time for the requests after it before their deadlines.
func latestStarts(reqs []Request) []Slot {
	out := make([]Slot, len(reqs))
	next := Slot(math.MaxInt32)
	for k := len(reqs) - 1; k >= 0; k-- {
		out[k] = min(reqs[k].Deadline-reqs[k].Duration, next-reqs[k].Duration)
		next = out[k]
	}
	return out
}

// orderWindow is request k of an ORDER bid cut to the window it may start in:
// from the end of the request before it, and late enough that the ones after
// it still fit.
func orderWindow(r Request, prevEnd, latest Slot) Request {
	r.Arrival = max(r.Arrival, prevEnd)
	r.Deadline = min(r.Deadline, latest+r.Duration)
	return r
}

// quoteOrder places the requests one after another, each in its window cut by
// the request before it and by the time the ones after it need, as the
// algorithm chooses (econ: its cheapest start there). It can refuse a bid
// that another choice of earlier starts would have fitted, like YARN's greedy
// placement agents.
func (e *Engine) quoteOrder(now Slot, owner string, reqs []Request) (Offer, bool, error) {
	latest := latestStarts(reqs)
	cut := make([]Request, len(reqs))
	var o Offer
	var placed []*Reservation
	defer func() {
		for _, t := range placed {
			e.apply(t, 0, 1)
		}
	}()
	prevEnd := Slot(math.MinInt32)
	for k, r := range reqs {
		cut[k] = orderWindow(r, prevEnd, latest[k])
		if cut[k].Deadline-max(cut[k].Arrival, now) < r.Duration {
			return Offer{}, false, nil
		}
		one, ok := e.offerOne(now, owner, cut[k])
		if !ok {
			return Offer{}, false, nil
		}
		trial := &Reservation{Owner: owner, Requests: reqs[k : k+1], Starts: []Slot{one.Starts[0]}}
		if !e.place(trial) {
			return Offer{}, false, nil
		}
		placed = append(placed, trial)
		o.Price += one.Price
		o.Starts = append(o.Starts, one.Starts[0])
		prevEnd = one.Starts[0] + r.Duration
	}
	return o, true, nil
}

// offerOne asks the algorithm to place one request alone and checks the start
// it gives lies in the request's window from now.
func (e *Engine) offerOne(now Slot, owner string, r Request) (Offer, bool) {
	one, ok := e.algo.Offer(e, Ask{Owner: owner, Requests: []Request{r}, Now: now})
	if !ok || len(one.Starts) != 1 || one.Starts[0] < max(r.Arrival, now) || one.Starts[0]+r.Duration > r.Deadline {
		return Offer{}, false
	}
	return one, true
}

// trainStarts is the range of first starts [lo, hi] of an ORDER_NO_GAP bid
// from now, and each request's offset from the first start.
func trainStarts(reqs []Request, now Slot) (lo, hi Slot, off []Slot) {
	off = make([]Slot, len(reqs))
	lo, hi = now, Slot(math.MaxInt32)
	at := Slot(0)
	for k, r := range reqs {
		off[k] = at
		lo = max(lo, r.Arrival-at)
		hi = min(hi, r.Deadline-r.Duration-at)
		at += r.Duration
	}
	return lo, hi, off
}

// quoteTrain prices an ORDER_NO_GAP bid at every first start that fits, each
// request priced by the algorithm at exactly its slot in the train, and takes
// the cheapest train (ties: the earliest). Requests of a train never overlap
// in time, so their prices never count the same free capacity twice.
func (e *Engine) quoteTrain(now Slot, owner string, reqs []Request) (Offer, bool, error) {
	lo, hi, off := trainStarts(reqs, now)
	best, found := Offer{}, false
	for s := lo; s <= hi; s++ {
		o := Offer{Starts: make([]Slot, len(reqs))}
		fits := true
		for k, r := range reqs {
			at := r
			at.Arrival, at.Deadline = s+off[k], s+off[k]+r.Duration
			one, ok := e.offerOne(now, owner, at)
			if !ok {
				fits = false
				break
			}
			o.Price += one.Price
			o.Starts[k] = one.Starts[0]
		}
		if fits && (!found || o.Price < best.Price-1e-9*max(1, math.Abs(best.Price))) {
			best, found = o, true
		}
	}
	if !found {
		return Offer{}, false, nil
	}
	trial := &Reservation{Owner: owner, Requests: reqs, Starts: best.Starts}
	if !e.place(trial) {
		return Offer{}, false, nil
	}
	e.apply(trial, 0, 1)
	return best, true, nil
}

// keepsLanguage reports whether r's starts respect its language: inside each
// request's window, each starting no earlier than the one before it ends (its
// early end counts) for ORDER, exactly at the planned end of the one before it
// for ORDER_NO_GAP, and a single request for ANY.
func keepsLanguage(r *Reservation) bool {
	l := r.Language.or()
	if l == BidAny && len(r.Requests) != 1 {
		return false
	}
	for k, q := range r.Requests {
		if r.Starts[k] < q.Arrival || r.Starts[k]+q.Duration > q.Deadline {
			return false
		}
		if k == 0 {
			continue
		}
		switch l {
		case BidOrder:
			if r.Starts[k] < r.End(k-1) {
				return false
			}
		case BidOrderNoGap:
			if r.Starts[k] != r.Starts[k-1]+r.Requests[k-1].Duration {
				return false
			}
		}
	}
	return true
}
