package web

import (
	"container/list"
	"crypto/sha256"
	"net"
	"sync"
	"time"
)

// limiterCapacity is how many buckets the sign-in limiter keeps. Each takes a fixed
// ~150 bytes whatever the email's length (its key is a hash), so the limiter never
// holds more than about 10 MB.
const limiterCapacity = 1 << 16

// loginLimiter limits failed sign-in attempts with token buckets, in memory, on two
// keys: the client's address with the email tried, and the client's address alone
// (an IPv6 client's /64, which one client usually owns whole). Each replica keeps
// its own counts, which is enough to blunt password guessing.
//
// Memory is bounded by an LRU of at most capacity buckets keyed by a 16-byte hash:
// past that, the least recently used bucket is forgotten. Forgetting a bucket
// forgives its attempts, so an attacker who could make capacity fresh keys within a
// minute could reset a bucket; the per-address bucket makes that need at least
// capacity/perAddr distinct addresses.
type loginLimiter struct {
	mu               sync.Mutex
	now              func() time.Time
	capacity         int
	perPair, perAddr float64 // attempts per minute, also the burst
	buckets          map[limiterKey]*list.Element
	recent           *list.List // of *loginBucket, most recently used first
}

type limiterKey [16]byte

type loginBucket struct {
	key    limiterKey
	tokens float64
	at     time.Time
}

func newLoginLimiter(perPair, perAddr, capacity int, now func() time.Time) *loginLimiter {
	return &loginLimiter{now: now, capacity: capacity, perPair: float64(perPair), perAddr: float64(perAddr),
		buckets: map[limiterKey]*list.Element{}, recent: list.New()}
}

// keysOf hashes the two keys of an attempt.
func keysOf(addr, email string) (pair, byAddr limiterKey) {
	a := sha256.Sum256([]byte("addr\x00" + addr))
	p := sha256.Sum256([]byte("pair\x00" + addr + "\x00" + email))
	copy(byAddr[:], a[:])
	copy(pair[:], p[:])
	return pair, byAddr
}

// bucket returns the key's bucket, refilled to now, creating it full (and evicting
// the least recently used past capacity) when there is none.
func (l *loginLimiter) bucket(k limiterKey, rate float64, now time.Time) *loginBucket {
	if e, ok := l.buckets[k]; ok {
		l.recent.MoveToFront(e)
		b := e.Value.(*loginBucket)
		b.tokens = min(rate, b.tokens+now.Sub(b.at).Minutes()*rate)
		b.at = now
		return b
	}
	if l.recent.Len() >= l.capacity {
		old := l.recent.Back()
		l.recent.Remove(old)
		delete(l.buckets, old.Value.(*loginBucket).key)
	}
	b := &loginBucket{key: k, tokens: rate, at: now}
	l.buckets[k] = l.recent.PushFront(b)
	return b
}

// attempt takes one attempt from both of the attempt's buckets and reports whether
// both had one; when either is empty it takes nothing.
func (l *loginLimiter) attempt(addr, email string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	pk, ak := keysOf(addr, email)
	pair, byAddr := l.bucket(pk, l.perPair, now), l.bucket(ak, l.perAddr, now)
	if pair.tokens < 1 || byAddr.tokens < 1 {
		return false
	}
	pair.tokens--
	byAddr.tokens--
	return true
}

// succeeded gives back the attempt of a sign-in that succeeded, so that only
// failures count.
func (l *loginLimiter) succeeded(addr, email string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pk, ak := keysOf(addr, email)
	for k, rate := range map[limiterKey]float64{pk: l.perPair, ak: l.perAddr} {
		if e, ok := l.buckets[k]; ok {
			b := e.Value.(*loginBucket)
			b.tokens = min(rate, b.tokens+1)
		}
	}
}

// size is how many buckets the limiter holds.
func (l *loginLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recent.Len()
}

// limiterAddr is the part of a client's address the limiter counts by: an IPv4
// address, or an IPv6 address's /64.
func limiterAddr(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
