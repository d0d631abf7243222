package sharing

// RelValue is the REL utility of one side of an account (a team's utility or its
// contribution in one pool) from the three numbers the accounts keep: the executed
// surface E = sum w (unit-hours), ORIG = sum w (t - tau) and the release-measured
// sum R = sum w (r - tau) (never positive: minus the surface-weighted wait between
// each part's job release r and its execution tau). ORIG measured from the release
// is sum w (t - r) = ORIG - R, and REL is the surface times ORIG's share of it:
//
//	REL = E * ORIG / (ORIG - R) = E * sum w (t - tau) / sum w (t - r)
//
// ORIG normalised by the time since release: for the parts of one job (one r) it is
// exactly the sum of each part's (t - tau) / (t - r), a value in (0, 1] per
// unit-hour, 1 for a part run at its job's release, and less the longer the part
// waited relative to the time since. It never exceeds E and tends to E (SIMPL) as
// t grows, so early decisions do not keep earning as under ORIG ("a slightly altered
// utility, where the release time neutralizes this effect"). Across jobs of several
// releases it normalises by the surface-weighted mean time since release, which the
// summaries keep exactly; normalising each job by its own release would need every
// job's history (docs/idle-capacity.md says what was tried). With ORIG - R not
// positive (no part has aged since its job's release) it is 0.
func RelValue(surface, orig, rel float64) float64 {
	den := orig - rel
	if !(den > 0) {
		return 0
	}
	return surface * orig / den
}

// relValue is RelValue of one side.
func (s side) relValue() float64 { return RelValue(s.surface, s.orig, s.rel) }
