package scheduler

// Use is what an accepted reservation used, reported to learners once, when it
// leaves the plan (Retire or Cancel): per request, the unit-slots it reserved
// (its units over all pools, overhead included, times its duration) and those
// it used (its run up to its end, early ends included, less the units its
// cluster reported unused in slots it ran). Requests and Now are those the
// learners observed in the bid's Demand; Value is the bid's value.
type Use struct {
	Reservation int64
	Requests    []Request
	Now         Slot
	Value       float64
	Reserved    []int64
	Used        []int64
}

// UseLearner is implemented by algorithms and predictors that learn from what
// jobs used as well as from what they reserved (ERA section 5.3).
type UseLearner interface {
	ObserveUse(u Use)
}

// observe tells a learning algorithm about a decided bid.
func (e *Engine) observe(d Demand) {
	if l, ok := e.algo.(Learner); ok {
		l.Observe(d)
	}
}

// observeUse tells an algorithm that learns from use what a reservation leaving
// the plan used.
func (e *Engine) observeUse(r *Reservation) {
	l, ok := e.algo.(UseLearner)
	if !ok {
		return
	}
	u := Use{Reservation: r.ID, Requests: r.Requests, Now: r.Decided, Value: r.Value,
		Reserved: make([]int64, len(r.Requests)), Used: make([]int64, len(r.Requests))}
	for i, q := range r.Requests {
		u.Reserved[i] = units(q) * int64(q.Duration)
		u.Used[i] = units(q) * int64(max(r.End(i)-r.Starts[i], 0))
		if r.Unused != nil {
			u.Used[i] = max(u.Used[i]-r.Unused[i], 0)
		}
	}
	l.ObserveUse(u)
}
