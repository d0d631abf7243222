package scheduler

// NewDefaultPredictor is the predictor Basic-Econ uses unless an operator
// chooses another: the one that did best in the simulator (docs/reproductions.md,
// ERA: every predictor on the MapReduce-like mix, seeds 1 to 3, and on HPC2N). It is the seasonal predictor, learned online; capacity is
// the pools' sizes, which the LP-based predictor (NewFractional) would need. The
// simulator's "econ" and a server's default pool policy both call this, so a
// change of default is made here once.
func NewDefaultPredictor(slotSeconds int, capacity map[string]int64) Predictor {
	_ = capacity
	return NewSeasonal(slotSeconds)
}
