package auction

import (
	"container/heap"
	"slices"
	"sync"
	"time"
)

// Parallel branch and bound for the core step's separations (core.go,
// separate): the VCG solves already run one per processor, but separation is
// one branch and bound after another, and on CATS matching 96x450 it was four
// fifths of the core step's CPU on one processor.
//
// The workers share the queue of open nodes, the incumbent (s) and the
// warm-start memory budget under one lock; each dives on its own. A node's LP
// is solved outside the lock, on a tableau only that worker holds: the dive's
// child on the tableau of the node the worker just solved, a queued node on the
// one it kept. Everything else a node does (rounding, which offers allocations
// to separation's q.seen, q.enough, branching) runs under the lock, so the
// callbacks need no locking of their own. The copy a queued child keeps of its
// parent's tableau is made before it is queued (outside the lock), so no other
// worker ever re-solves a tableau a dive still reads.
//
// The search order depends on timing, so the allocations met and the blocking
// coalitions found differ from run to run; every node is still pruned only
// against an incumbent, so a search that ends with no open node is a proof, as
// in branchAndBound. A search with a node cap (Options.MaxNodes) stays
// sequential, so that it is reproducible.

// bnbShared is the state the workers of branchAndBoundParallel share, under mu.
type bnbShared struct {
	mu   sync.Mutex
	wake *sync.Cond // a node was queued, a worker went idle, or the search stops
	t    bnbTree    // queue, seq, lost, kept, full, depthFirst (not dive, parent, shared: per worker)
	busy int        // workers between taking a node and queuing its children
	stop bool       // deadline, node cap or p.enough: every worker stops
}

// bnbWorker is one worker's own dive.
type bnbWorker struct {
	dive   *node      // the child to solve next
	parent relaxation // the LP it starts from, held by this worker only
}

// branchAndBoundParallel is branchAndBound with workers goroutines (see above).
func (p *problem) branchAndBoundParallel(s *solution, deadline time.Time, maxNodes, workers int) {
	sh := &bnbShared{t: p.newTree(s)}
	sh.wake = sync.NewCond(&sh.mu)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh.work(p, s, deadline, maxNodes)
		}()
	}
	wg.Wait()
	for _, n := range sh.t.queue {
		n.from.lp.recycle()
	}
	sh.t.close(s)
}

// work is one worker's loop: take a node, solve its LP, round and branch,
// until no node is left or the search stops.
func (sh *bnbShared) work(p *problem, s *solution, deadline time.Time, maxNodes int) {
	var w bnbWorker
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for {
		top, diving := sh.next(&w, s, deadline, maxNodes)
		if top == nil {
			return
		}
		s.nodes++
		sh.busy++
		sh.mu.Unlock()
		rel, ok := w.solve(p, top, diving, deadline)
		w.parent = relaxation{}
		sh.mu.Lock()
		if sh.node(p, &w, s, top, rel, ok, deadline) {
			sh.stop = true
		}
		sh.busy--
		sh.wake.Broadcast()
	}
}

// next takes, under the lock, the worker's next node: its dive's child, else
// the queued node bnbTree.next would take, waiting while the queue is empty and
// another worker may still queue nodes. It returns nil when no node is left or
// the search stops (the worker's pending dive then goes back to the queue, so
// that its bound stays open).
func (sh *bnbShared) next(w *bnbWorker, s *solution, deadline time.Time, maxNodes int) (*node, bool) {
	t := &sh.t
	for {
		if !sh.stop && (time.Now().After(deadline) || (maxNodes > 0 && s.nodes >= maxNodes)) {
			sh.stop = true
			sh.wake.Broadcast()
		}
		if sh.stop {
			if w.dive != nil {
				heap.Push(&t.queue, w.dive)
				w.parent.lp.recycle()
				w.dive, w.parent = nil, relaxation{}
			}
			return nil, false
		}
		if w.dive != nil {
			top := w.dive
			w.dive = nil
			return top, true
		}
		if t.queue.Len() > 0 {
			at := 0
			if t.full {
				for i, n := range t.queue {
					if n.seq > t.queue[at].seq {
						at = i
					}
				}
			}
			top := heap.Remove(&t.queue, at).(*node)
			t.release(top)
			if top.bound <= s.value+pruneTol(s.value) {
				top.from.lp.recycle()
				continue
			}
			return top, false
		}
		if sh.busy == 0 {
			sh.wake.Broadcast()
			return nil, false
		}
		sh.wake.Wait()
	}
}

// solve solves a node's LP outside the lock (solveNode): a dive's child in
// place on the worker's parent tableau, which no queued node shares (node
// copies it for the queued sibling).
func (w *bnbWorker) solve(p *problem, top *node, diving bool, deadline time.Time) (relaxation, bool) {
	var from relaxation
	if diving {
		from = w.parent
	}
	return p.solveNode(top, from, deadline)
}

// node finishes a solved node under the lock, as branchAndBound's loop does:
// prune, round, and branch (the queued child's copy of the tableau made with
// the lock released). It reports whether p.enough stops the search.
func (sh *bnbShared) node(p *problem, w *bnbWorker, s *solution, top *node, rel relaxation, ok bool, deadline time.Time) (stop bool) {
	t := &sh.t
	if !ok {
		t.lost = max(t.lost, top.bound)
		return false
	}
	if rel.x == nil || rel.bound <= s.value+pruneTol(s.value) {
		rel.lp.recycle()
		return false
	}
	p.round(s, top.ones, rel.x, deadline)
	if p.enough != nil && p.enough(s.value) {
		rel.lp.recycle()
		return true
	}
	br := branchColumn(rel.x)
	if p.proof {
		rel.fixByReducedCost(s.value + pruneTol(s.value))
		br = mostFractional(rel.x)
	}
	if br < 0 {
		rel.lp.recycle()
		return false
	}
	bound := min(rel.bound, top.bound)
	size := 8 * len(rel.lp.t)
	t.full = t.full || (t.depthFirst && t.kept+size > warmBudget)
	keep := t.kept+size <= warmBudget || t.full
	if keep {
		t.kept += size
	}
	t.seq++
	down := &node{bound: bound, ones: top.ones, zeros: append(slices.Clip(top.zeros), br), seq: t.seq}
	t.seq++
	w.dive = &node{bound: bound, ones: append(slices.Clip(top.ones), br), zeros: top.zeros, seq: t.seq}
	w.parent = rel
	if keep {
		sh.mu.Unlock()
		down.from = relaxation{lp: rel.lp.clone(), free: rel.free, fixed: rel.fixed}
		sh.mu.Lock()
	}
	heap.Push(&t.queue, down)
	return false
}
