package fleet

import "time"

// PlanObserver is told of every update of this server's reservation plan: each
// transaction that brought the plan up to date and applied a change, with whether
// it had to rebuild the whole plan from the database first and how long it took.
type PlanObserver interface {
	PlanUpdated(rebuilt bool, took time.Duration)
}

// ObservePlan makes o hear of every plan update of this service.
func (s *Reservations) ObservePlan(o PlanObserver) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observer = o
}
