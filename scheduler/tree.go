package scheduler

// tree is a segment tree over slots [0, n) holding free units per slot, with range
// add and range minimum in O(log n).
type tree struct {
	n    int
	min  []int64
	lazy []int64
}

func newTree(n int, free int64) *tree {
	t := &tree{n: n, min: make([]int64, 4*n), lazy: make([]int64, 4*n)}
	t.build(1, 0, n, free)
	return t
}

func (t *tree) build(node, lo, hi int, v int64) {
	t.min[node] = v
	if hi-lo > 1 {
		mid := (lo + hi) / 2
		t.build(2*node, lo, mid, v)
		t.build(2*node+1, mid, hi, v)
	}
}

// add adds d to every slot in [from, to).
func (t *tree) add(from, to int, d int64) { t.addAt(1, 0, t.n, from, to, d) }

func (t *tree) addAt(node, lo, hi, from, to int, d int64) {
	if to <= lo || hi <= from {
		return
	}
	if from <= lo && hi <= to {
		t.min[node] += d
		t.lazy[node] += d
		return
	}
	mid := (lo + hi) / 2
	t.addAt(2*node, lo, mid, from, to, d)
	t.addAt(2*node+1, mid, hi, from, to, d)
	t.min[node] = min(t.min[2*node], t.min[2*node+1]) + t.lazy[node]
}

// minimum returns the least free units over [from, to).
func (t *tree) minimum(from, to int) int64 { return t.minAt(1, 0, t.n, from, to) }

func (t *tree) minAt(node, lo, hi, from, to int) int64 {
	if from <= lo && hi <= to {
		return t.min[node]
	}
	mid := (lo + hi) / 2
	const inf = int64(1) << 62
	m := inf
	if from < mid {
		m = min(m, t.minAt(2*node, lo, mid, from, to))
	}
	if to > mid {
		m = min(m, t.minAt(2*node+1, mid, hi, from, to))
	}
	return m + t.lazy[node]
}

// values appends the free units of every slot in [from, to) to dst, in O(k + log n).
func (t *tree) values(from, to int, dst []int64) []int64 {
	return t.valuesAt(1, 0, t.n, from, to, 0, dst)
}

func (t *tree) valuesAt(node, lo, hi, from, to int, acc int64, dst []int64) []int64 {
	if to <= lo || hi <= from {
		return dst
	}
	if hi-lo == 1 {
		return append(dst, t.min[node]+acc)
	}
	acc += t.lazy[node]
	mid := (lo + hi) / 2
	dst = t.valuesAt(2*node, lo, mid, from, to, acc, dst)
	return t.valuesAt(2*node+1, mid, hi, from, to, acc, dst)
}
