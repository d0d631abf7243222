package slurm

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// tres is a set of trackable resources as Slurm counts them: "cpu" in CPUs, "mem" in
// MiB (Slurm's megabytes), "gres/gpu" in devices, any other TRES in its own count.
type tres map[string]int64

// memMultiplier is how many MiB a memory suffix stands for; Slurm's K, M, G, T, P are
// powers of 1024 (a bare number is MiB).
var memMultiplier = map[string]float64{"": 1, "K": 1.0 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024, "P": 1024 * 1024 * 1024}

// parseTRES reads Slurm's TRES string ("cpu=2,mem=2G,node=1,billing=2,gres/gpu=1"), as
// squeue, sacct, sacctmgr and scontrol print it. Memory may carry a suffix; other
// counts may not. An empty string or "(null)" is no TRES.
func parseTRES(s string) (tres, error) {
	t := tres{}
	s = strings.TrimSpace(s)
	if s == "" || s == "(null)" || s == "N/A" {
		return t, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("TRES %q: %q is not name=count", s, part)
		}
		n, err := parseCount(name, val)
		if err != nil {
			return nil, fmt.Errorf("TRES %q: %w", s, err)
		}
		t[name] = n
	}
	return t, nil
}

// parseCount reads one TRES count; memory ("mem") may end in K, M, G, T or P.
func parseCount(name, val string) (int64, error) {
	num, suffix := val, ""
	if name == "mem" && val != "" {
		if last := strings.ToUpper(val[len(val)-1:]); last >= "A" && last <= "Z" {
			num, suffix = val[:len(val)-1], last
		}
	}
	m, ok := memMultiplier[suffix]
	if !ok {
		return 0, fmt.Errorf("%s=%s: unknown unit %q", name, val, suffix)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%s=%s: not a count", name, val)
	}
	return int64(f*m + 0.5), nil
}

// String writes the TRES as sacctmgr and scontrol take them, sorted by name, memory
// in MiB without suffix.
func (t tres) String() string {
	names := slices.Sorted(maps.Keys(t))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.FormatInt(t[n], 10)
	}
	return strings.Join(parts, ",")
}

func (t tres) add(o tres) {
	for k, v := range o {
		t[k] += v
	}
}

// parseUnit reads a pool's unit in the pool's TRES: how many of the TRES one unit of
// the pool is. Memory takes Slurm's suffixes ("1G", "512M") or Kubernetes' ("1Gi");
// other TRES a positive whole number ("1", "2").
func parseUnit(tresName, unit string) (int64, error) {
	u := strings.TrimSuffix(unit, "i")
	if tresName != "mem" && u != unit {
		return 0, fmt.Errorf("unit %q: only memory takes a suffix", unit)
	}
	n, err := parseCount(tresName, u)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("unit %q: want a positive count of %s (memory: 1G, 512M)", unit, tresName)
	}
	return n, nil
}
