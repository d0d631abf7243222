package ledger

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

// grouped runs fn as one write of the ledger: in the caller's transaction when the
// ledger has one, else in a group commit.
func (l *Ledger) grouped(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if l.tx != nil {
		return l.tx.Transaction(fn)
	}
	req := &groupReq{fn: fn, done: make(chan struct{})}
	g := l.group
	g.mu.Lock()
	g.pending = append(g.pending, req)
	start := !g.running
	g.running = true
	g.mu.Unlock()
	if start {
		go l.drain()
	}
	select {
	case <-req.done:
		return req.err
	case <-ctx.Done():
		// The write may still commit; the caller learns its outcome by replaying
		// its idempotency key.
		return ctx.Err()
	}
}

// drain commits batches until no write is waiting.
func (l *Ledger) drain() {
	g := l.group
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

		err := l.db.Write.Transaction(func(tx *gorm.DB) error {
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
