package web

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTheLoginLimiterHoldsAFixedNumberOfBuckets(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	l := newLoginLimiter(5, 15, 100, func() time.Time { return now })
	l.attempt("10.0.0.1", "kept@x.io")
	for i := range 10_000 {
		addr := fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
		l.attempt(addr, strings.Repeat("x", i%300)+"@x.io")
		if i%10 == 0 {
			l.attempt("10.0.0.1", "kept@x.io") // recently used: never evicted
		}
		if n := l.size(); n > 100 {
			t.Fatalf("after %d attempts the limiter holds %d buckets, more than its 100", i+1, n)
		}
	}
	if l.size() != 100 || len(l.buckets) != 100 {
		t.Fatalf("size %d, map %d, want 100", l.size(), len(l.buckets))
	}
	pair, addr := keysOf("10.0.0.1", "kept@x.io")
	if _, ok := l.buckets[pair]; !ok {
		t.Error("the most recently used pair was evicted")
	}
	if _, ok := l.buckets[addr]; !ok {
		t.Error("the most recently used address was evicted")
	}
}

func TestTheLoginLimiterCountsFailuresPerAddressAndEmailAndPerAddress(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	l := newLoginLimiter(3, 5, 1000, func() time.Time { return now })
	for i := range 3 {
		if !l.attempt("192.0.2.1", "ana@x.io") {
			t.Fatalf("attempt %d refused", i+1)
		}
	}
	if l.attempt("192.0.2.1", "ana@x.io") {
		t.Fatal("a 4th attempt on one email from one address within a minute")
	}
	if !l.attempt("192.0.2.2", "ana@x.io") {
		t.Fatal("another address is locked out of ana's account")
	}
	if !l.attempt("192.0.2.1", "bob@x.io") || !l.attempt("192.0.2.1", "cy@x.io") {
		t.Fatal("other emails from the address refused before its 5")
	}
	if l.attempt("192.0.2.1", "dee@x.io") {
		t.Fatal("a 6th attempt from one address within a minute")
	}
	l.succeeded("192.0.2.2", "ana@x.io")
	for range 3 {
		if !l.attempt("192.0.2.2", "ana@x.io") {
			t.Fatal("a success did not give its attempt back")
		}
	}
	now = now.Add(time.Minute)
	if !l.attempt("192.0.2.1", "ana@x.io") {
		t.Fatal("still refused a minute later")
	}
}

func TestClientIPComesFromTrustedProxiesOnly(t *testing.T) {
	t.Parallel()
	_, n, _ := net.ParseCIDR("10.0.0.0/8")
	s := &Server{cfg: Config{TrustedProxies: []*net.IPNet{n}}}
	cases := []struct {
		peer string
		xff  []string
		want string
	}{
		{"203.0.113.9:1234", nil, "203.0.113.9"},
		{"203.0.113.9:1234", []string{"198.51.100.1"}, "203.0.113.9"}, // not from a proxy: ignored
		{"10.0.0.2:1234", nil, "10.0.0.2"},
		{"10.0.0.2:1234", []string{"198.51.100.1"}, "198.51.100.1"},
		{"10.0.0.2:1234", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},  // the client made up the first
		{"10.0.0.2:1234", []string{"198.51.100.1, 10.0.0.3"}, "198.51.100.1"}, // two proxies
		{"10.0.0.2:1234", []string{"198.51.100.1", "10.0.0.3"}, "198.51.100.1"},
		{"10.0.0.2:1234", []string{"198.51.100.1:5555"}, "198.51.100.1"},
		{"10.0.0.2:1234", []string{"[2001:db8::1]:5555"}, "2001:db8::1"},
		{"10.0.0.2:1234", []string{"198.51.100.1, garbage"}, "10.0.0.2"},
		{"10.0.0.2:1234", []string{"10.0.0.4, 10.0.0.3"}, "10.0.0.4"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := s.clientIP(r); got.String() != tc.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %v, want %s", tc.peer, tc.xff, got, tc.want)
		}
	}
	if got := limiterAddr(net.ParseIP("2001:db8:1:2:3:4:5:6")); got != "2001:db8:1:2::/64" {
		t.Errorf("an IPv6 client counts as %s, want its /64", got)
	}
}

// syncBuffer is a log sink that tests can read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// lazyBody is n bytes of 'a' after a prefix, made as they are read.
type lazyBody struct {
	prefix string
	n      int64
}

func (r *lazyBody) Read(p []byte) (int, error) {
	if r.prefix != "" {
		k := copy(p, r.prefix)
		r.prefix = r.prefix[k:]
		return k, nil
	}
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n)
	for i := range k {
		p[i] = 'a'
	}
	r.n -= k
	return int(k), nil
}

// TestHugeEmailsTakeNoMemoryNorLog signs in 60 times with 5 MiB emails (declared and
// chunked) and 60 times with 300-byte ones, on a server with no identity service:
// each is refused before the limiter, the log and the accounts; memory and the log
// stay small.
func TestHugeEmailsTakeNoMemoryNorLog(t *testing.T) {
	t.Parallel()
	var logged syncBuffer
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	s := NewServer(Config{LoginRate: 5}, Services{}, slog.New(slog.NewTextHandler(&logged, nil)), func() time.Time { return now })
	csrf := strings.Repeat("c", 43)
	post := func(body io.Reader, length int64) int {
		r := httptest.NewRequest(http.MethodPost, "/login", body)
		r.ContentLength = length
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("X-CSRF-Token", csrf)
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: csrf})
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		return w.Code
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 60 {
		length := int64(-1)
		if i%2 == 0 {
			length = 5<<20 + int64(len("password=x&email="))
		}
		if code := post(&lazyBody{prefix: "password=x&email=", n: 5 << 20}, length); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("5 MiB email: %d, want 413", code)
		}
	}
	long := strings.Repeat("e", 290) + "@x.io"
	for range 60 {
		if code := post(strings.NewReader(url.Values{"email": {long}, "password": {"x"}}.Encode()), -1); code != http.StatusBadRequest {
			t.Fatalf("300-byte email: %d, want 400", code)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("the heap grew by %d MiB", grew>>20)
	}
	if n := s.limiter.size(); n != 0 {
		t.Errorf("the limiter holds %d buckets for refused emails", n)
	}
	if strings.Contains(logged.String(), "eeeeeeeeee") || strings.Contains(logged.String(), "aaaaaaaaaa") {
		t.Error("a log line carries the email")
	}
	if n := len(logged.String()); n > 120*400 {
		t.Errorf("120 refused sign-ins wrote %d bytes of log", n)
	}
}

// TestLogLinesAreBounded requests a 60 KiB path: the access log and the 404 page
// show at most maxLoggedPath bytes of it.
func TestLogLinesAreBounded(t *testing.T) {
	t.Parallel()
	var logged syncBuffer
	s := NewServer(Config{}, Services{}, slog.New(slog.NewTextHandler(&logged, nil)), time.Now)
	r := httptest.NewRequest(http.MethodGet, "/"+strings.Repeat("p", 60<<10), nil)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	if w.Code != http.StatusNotFound || w.Body.Len() > 20<<10 {
		t.Fatalf("a 60 KiB path: %d, %d bytes", w.Code, w.Body.Len())
	}
	if n := len(logged.String()); n == 0 || n > 1000 {
		t.Fatalf("a 60 KiB path logged %d bytes: %.200s", n, logged.String())
	}
}
