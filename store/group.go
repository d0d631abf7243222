package store

import (
	"context"
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
}

type groupReq struct {
	fn   func(tx *gorm.DB) error
	err  error
	done chan struct{}
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
	req := &groupReq{fn: fn, done: make(chan struct{})}
	g := &db.grp
	g.mu.Lock()
	g.pending = append(g.pending, req)
	start := !g.running
	g.running = true
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
		if n == 0 {
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
			for _, r := range batch {
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
