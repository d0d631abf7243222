package store

import (
	"context"
	"fmt"
	"sync"

	"gorm.io/gorm"
)

// maxGroup bounds how many writes share one commit.
const maxGroup = 128

// group commits concurrent writes together: the first caller to find no batch
// running starts one, and every write that arrives meanwhile joins the next
// transaction, each in its own savepoint, so that one commit (one fsync) serves
// many callers while a failing write still changes nothing. A caller returns only
// after the transaction holding its write has committed.
type group struct {
	mu      sync.Mutex
	pending []*groupReq
	running bool
	paused  bool // PauseGroup: no batch starts
}

type groupReq struct {
	fn    func(tx *gorm.DB) error
	batch *Batcher // with item: a write the batcher may make together with others
	item  any
	err   error
	done  chan struct{}
}

// A Batcher makes several grouped writes of one kind at once (GroupedBatch): on
// SQLite, the writes of one group commit that its Run takes are checked together
// and written in a few multi-row statements instead of each in its own savepoint.
type Batcher struct {
	// Run is given the items of a batch's writes, in the order they arrived, inside
	// the batch's transaction (in a savepoint of its own). It returns, for each item,
	// whether it took the write, and the write's outcome when it did. A write it
	// takes and fails must have changed nothing: the others it took commit. A write
	// it does not take runs as its own function, in a savepoint, after Run. When Run
	// returns an error, everything it wrote is rolled back and every write of the
	// batch runs as its own function instead.
	Run func(tx *gorm.DB, items []any) ([]BatchOutcome, error)
}

// BatchOutcome is what a Batcher's Run did with one write.
type BatchOutcome struct {
	Done bool  // Run made (or refused) the write; otherwise it runs on its own
	Err  error // the write's error when Done: it changed nothing
}

// Grouped runs fn as one write transaction of its own, as far as the caller can
// tell: fn's changes commit together or not at all, and Grouped returns once they
// are durable. On SQLite, whose single writer makes every transaction wait for the
// one before, concurrent writes share one transaction (each in a savepoint) and
// one commit: many durable writes per fsync. On PostgreSQL each write is its own
// transaction: batching unrelated writes there would make them hold each other's
// row locks in no one order, and PostgreSQL already flushes concurrent commits
// together.
//
// If ctx ends while fn waits its turn, Grouped returns ctx.Err() and the write
// may still commit; callers learn the outcome by replaying their idempotency key.
func (db *DB) Grouped(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if db.Dialect == Postgres {
		return db.Write.WithContext(ctx).Transaction(fn)
	}
	return db.enqueue(ctx, &groupReq{fn: fn})
}

// GroupedBatch is Grouped for a write that b may make together with other writes
// of its kind in the same group commit (see Batcher): item describes the write to
// b, and fn makes it alone, as Grouped's fn does. On PostgreSQL it is Grouped(ctx,
// fn): each write its own transaction.
func (db *DB) GroupedBatch(ctx context.Context, b *Batcher, item any, fn func(tx *gorm.DB) error) error {
	if db.Dialect == Postgres {
		return db.Grouped(ctx, fn)
	}
	return db.enqueue(ctx, &groupReq{fn: fn, batch: b, item: item})
}

// enqueue queues req for the next batch, starting a drain if none runs, and returns
// req's outcome once its batch has committed, or ctx's error first.
func (db *DB) enqueue(ctx context.Context, req *groupReq) error {
	req.done = make(chan struct{})
	g := &db.grp
	g.mu.Lock()
	g.pending = append(g.pending, req)
	start := !g.running && !g.paused
	g.running = g.running || start
	g.mu.Unlock()
	if start {
		go db.drain()
	}
	select {
	case <-req.done:
		return req.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain commits batches until no write is waiting.
func (db *DB) drain() {
	g := &db.grp
	for {
		g.mu.Lock()
		n := min(len(g.pending), maxGroup)
		if n == 0 || g.paused {
			g.running = false
			g.mu.Unlock()
			return
		}
		batch := g.pending[:n:n]
		g.pending = g.pending[n:]
		g.mu.Unlock()

		if db.stmts != nil {
			db.stmts.prepareWanted(context.Background()) // between transactions: see stmtCache
		}
		err := db.Write.Transaction(func(tx *gorm.DB) error {
			for _, r := range runBatchers(tx, batch) {
				r.err = tx.Transaction(r.fn)
			}
			return nil
		})
		for _, r := range batch {
			if err != nil && r.err == nil {
				r.err = err // the commit failed: none of the batch was written
			}
			close(r.done)
		}
	}
}

// runBatchers gives each Batcher the writes of batch it may make, and returns the
// writes left to run one by one, in their order.
func runBatchers(tx *gorm.DB, batch []*groupReq) []*groupReq {
	var order []*Batcher
	byBatcher := map[*Batcher][]*groupReq{}
	for _, r := range batch {
		if r.batch == nil {
			continue
		}
		if byBatcher[r.batch] == nil {
			order = append(order, r.batch)
		}
		byBatcher[r.batch] = append(byBatcher[r.batch], r)
	}
	if len(order) == 0 {
		return batch
	}
	done := map[*groupReq]bool{}
	for _, b := range order {
		reqs := byBatcher[b]
		items := make([]any, len(reqs))
		for i, r := range reqs {
			items[i] = r.item
		}
		var outs []BatchOutcome
		err := tx.Transaction(func(tx *gorm.DB) error { // a savepoint: an error undoes all Run wrote
			var err error
			outs, err = b.Run(tx, items)
			if err == nil && len(outs) != len(items) {
				err = fmt.Errorf("store: a batcher answered %d of %d writes", len(outs), len(items))
			}
			return err
		})
		if err != nil {
			continue // each runs on its own
		}
		for i, r := range reqs {
			if outs[i].Done {
				r.err, done[r] = outs[i].Err, true
			}
		}
	}
	rest := make([]*groupReq, 0, len(batch)-len(done))
	for _, r := range batch {
		if !done[r] {
			rest = append(rest, r)
		}
	}
	return rest
}

// PauseGroup keeps SQLite's group commit from starting another batch until resume
// is called: writes arriving meanwhile wait, and then share batches (up to 128 a
// batch, in their order). It is for tests of writes made together; Pending says how
// many wait. A batch already running finishes.
func (db *DB) PauseGroup() (resume func()) {
	g := &db.grp
	g.mu.Lock()
	g.paused = true
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.paused = false
		start := !g.running && len(g.pending) > 0
		g.running = g.running || start
		g.mu.Unlock()
		if start {
			go db.drain()
		}
	}
}

// Pending is the number of writes waiting for a batch of the group commit.
func (db *DB) Pending() int {
	db.grp.mu.Lock()
	defer db.grp.mu.Unlock()
	return len(db.grp.pending)
}
