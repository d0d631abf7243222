package web

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// loginLimiter limits sign-in attempts per address and per email, in memory. Each
// replica keeps its own counts, which is enough to blunt password guessing.
type loginLimiter struct {
	mu      sync.Mutex
	perMin  int
	now     func() time.Time
	buckets map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newLoginLimiter(perMinute int, now func() time.Time) *loginLimiter {
	return &loginLimiter{perMin: perMinute, now: now, buckets: map[string]*bucket{}}
}

// allow takes one attempt from every key's bucket and reports whether all had one.
func (l *loginLimiter) allow(keys ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.buckets) > 10000 {
		for k, b := range l.buckets {
			if now.Sub(b.seen) > 10*time.Minute {
				delete(l.buckets, k)
			}
		}
	}
	ok := true
	for _, k := range keys {
		b := l.buckets[k]
		if b == nil {
			b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(l.perMin)/60), l.perMin)}
			l.buckets[k] = b
		}
		b.seen = now
		if !b.lim.AllowN(now, 1) {
			ok = false
		}
	}
	return ok
}
