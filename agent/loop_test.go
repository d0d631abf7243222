package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

var epoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// fakeServer answers the agent API with the allocation it holds, keeps the reports it
// takes, and answers each report with the next status in statuses (200 when none).
type fakeServer struct {
	mu       sync.Mutex
	alloc    Allocation
	reports  []Updates
	raw      []string // the reports' bodies as sent
	statuses []int
	answer   Answer
	allocErr int // the status of GET allocation (0: 200)
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(status int) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"code":"x","message":"no way"}}`)
	}
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/allocation"):
		if f.allocErr != 0 {
			fail(f.allocErr)
			return
		}
		_ = json.NewEncoder(w).Encode(f.alloc)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/updates"):
		var u Updates
		body, _ := io.ReadAll(r.Body)
		f.raw = append(f.raw, string(body))
		if err := json.Unmarshal(body, &u); err != nil {
			fail(400)
			return
		}
		f.reports = append(f.reports, u)
		if len(f.statuses) > 0 {
			status := f.statuses[0]
			f.statuses = f.statuses[1:]
			if status != 200 {
				fail(status)
				return
			}
		}
		_ = json.NewEncoder(w).Encode(f.answer)
	default:
		fail(404)
	}
}

// fakeBackend records what the loop asked and returns what the test set.
type fakeBackend struct {
	quotas      [][]Quota
	plans       []Plan
	corrections []Correction
	starts      []JobStart
	events      []TaskEvent
	measure     Measurement
	err         error
}

func (b *fakeBackend) Name() string { return "fake" }
func (b *fakeBackend) ApplyQuotas(_ context.Context, want []Quota) ([]Correction, error) {
	b.quotas = append(b.quotas, want)
	c := b.corrections
	b.corrections = nil
	return c, b.err
}
func (b *fakeBackend) FollowReservations(_ context.Context, p Plan) (JobReport, error) {
	b.plans = append(b.plans, p)
	s := b.starts
	b.starts = nil
	return JobReport{Starts: s}, nil
}
func (b *fakeBackend) SyncTasks(_ context.Context, run, stop []Task) ([]TaskEvent, error) {
	e := b.events
	b.events = nil
	return e, nil
}
func (b *fakeBackend) Measure(context.Context, time.Time) (Measurement, error) {
	return b.measure, nil
}
func (b *fakeBackend) Close() error { return nil }

// newTestClient is a client of cluster us-east for the fake server f.
func newTestClient(t *testing.T, f *fakeServer) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, "us-east", "cha_x")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newTestLoop(t *testing.T, f *fakeServer, b Backend) (*Loop, *bytes.Buffer) {
	t.Helper()
	var errOut bytes.Buffer
	return &Loop{Client: newTestClient(t, f), Backend: b, Out: io.Discard, ErrOut: &errOut, Every: time.Millisecond, MaxBackoff: 4 * time.Millisecond}, &errOut
}

// Each team's quota is its holdings plus its reservations running now; with a config,
// every team and pool it maps is listed (0 where nothing is held) and a team it does
// not map is left out and reported once, in the report's agent errors.
func TestLoopAppliesHoldingsPlusRunningReservations(t *testing.T) {
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch,
		Quotas: []HeldQuota{{Team: "ads", Pool: "us-east/cpu", Units: 40}, {Team: "ghost", Pool: "us-east/cpu", Units: 5}},
		Running: []Job{{Reservation: 1, Team: "ads", Configuration: map[string]int64{"us-east/cpu": 2, "us-east/ram": 8}, Units: 3},
			{Reservation: 2, Team: "search", Configuration: map[string]int64{"us-east/cpu": 1}, Units: 0}}}}
	b := &fakeBackend{}
	l, _ := newTestLoop(t, f, b)
	l.Config = &Config{File: "us-east.yaml", Cluster: "us-east",
		Teams: map[string]Team{"ads": {}, "search": {}}, Pools: map[string]Pool{"us-east/cpu": {Unit: "1"}, "us-east/ram": {Unit: "1Gi"}}}
	for range 2 {
		if err := l.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []Quota{{Team: "ads", Pool: "us-east/cpu", Units: 40 + 6}, {Team: "ads", Pool: "us-east/ram", Units: 24}, {Team: "search", Pool: "us-east/cpu"}, {Team: "search", Pool: "us-east/ram"}}
	if !slices.Equal(b.quotas[0], want) || !slices.Equal(b.quotas[1], want) {
		t.Fatalf("quotas %+v, want %+v", b.quotas, want)
	}
	if got := f.reports[0].Agent; got == nil || got.Backend != "fake" || len(got.Errors) != 1 || !strings.Contains(got.Errors[0], "team ghost is not in us-east.yaml") {
		t.Fatalf("first report's agent status %+v", got)
	}
	if got := f.reports[1].Agent; got == nil || len(got.Errors) != 0 {
		t.Fatalf("second report's agent status %+v: the unknown team is reported once", got)
	}
}

// Corrections and errors ride the next report; a report that fails on the way keeps
// them (and the early starts and task events) for the next poll, and a report the
// server refuses drops them and tells the backend its early starts did not happen.
func TestLoopResendsAfterAFailedReportAndDropsARefusedOne(t *testing.T) {
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch}, statuses: []int{503, 200, 422, 200}}
	b := &fakeBackend{corrections: []Correction{{Team: "ads", Pool: "us-east/cpu", Object: "ResourceQuota ads/clearhouse", Was: "10", Now: "46"}},
		starts: []JobStart{{Reservation: 4, At: epoch}}, events: []TaskEvent{{Task: 9, Event: TaskStarted, At: epoch}}, err: errors.New("quota API down")}
	l, errOut := newTestLoop(t, f, b)
	ctx := context.Background()
	if err := l.Poll(ctx); err == nil {
		t.Fatal("a 503 answer did not fail the poll")
	}
	b.err = nil
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	first, second := f.reports[0], f.reports[1]
	if !slices.Equal(second.Starts, first.Starts) || !slices.Equal(second.BestEffort, first.BestEffort) ||
		len(second.Agent.Corrections) != 1 || second.Agent.Corrections[0].Now != "46" || len(second.Agent.Errors) != 1 {
		t.Fatalf("after a 503 the next report carries %+v, want the first's %+v", second, first)
	}
	if !strings.Contains(errOut.String(), "apply quotas: quota API down") {
		t.Fatalf("the backend's error was not printed: %q", errOut.String())
	}
	b.starts = []JobStart{{Reservation: 5, At: epoch}}
	if err := l.Poll(ctx); err == nil || !Rejected(err) {
		t.Fatalf("a 422 answer: %v", err)
	}
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if last := f.reports[3]; len(last.Starts)+len(last.BestEffort) != 0 || len(last.Agent.Corrections) != 0 {
		t.Fatalf("after a refused report the next carries %+v", last)
	}
	if got := b.plans[3].Refused; !slices.Equal(got, []JobKey{{Reservation: 5}}) {
		t.Fatalf("the plan after a refused report says refused %v, want reservation 5", got)
	}
}

// A refused token stops the loop at once; other errors are retried after a backoff
// from Every to MaxBackoff, and a poll that works again reports. The test moves on
// what the loop writes (each retry's line, the server's answer), never on a timer.
func TestLoopStopsOnARefusedTokenAndRetriesOtherErrors(t *testing.T) {
	f := &fakeServer{allocErr: 401}
	l, _ := newTestLoop(t, f, &fakeBackend{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.Run(ctx, nil); !Refused(err) || ctx.Err() != nil {
		t.Fatalf("a 401: %v (context %v)", err, ctx.Err())
	}
	f.allocErr = 503
	f.answer = Answer{Moved: []int64{7}} // printed: the loop's sign that the report went through
	stop := make(chan time.Time)
	var errOut, out bytes.Buffer
	retries := 0
	// Run writes from this goroutine: after the third retry the server answers
	// again, and the first answer of the server stops the loop.
	l.ErrOut = writeHook{&errOut, func(line string) {
		if strings.Contains(line, "retrying") {
			if retries++; retries == 3 {
				f.mu.Lock()
				f.allocErr = 0
				f.mu.Unlock()
			}
		}
	}}
	l.Out = writeHook{&out, func(line string) {
		if strings.Contains(line, "server:") {
			close(stop)
		}
	}}
	if err := l.Run(ctx, stop); err != nil || ctx.Err() != nil {
		t.Fatalf("503s: %v (context %v)\n%s", err, ctx.Err(), errOut.String())
	}
	if retries != 3 {
		t.Fatalf("retried %d times, want 3 before the server answered:\n%s", retries, errOut.String())
	}
	waits := regexp.MustCompile(`retrying at the next poll, in ([^)\s]+)\)\n`).FindAllStringSubmatch(errOut.String(), -1)
	if len(waits) != 3 {
		t.Fatalf("%d retry lines with a wait:\n%s", len(waits), errOut.String())
	}
	for _, w := range waits {
		d, err := time.ParseDuration(w[1])
		if err != nil || d < l.Every || d > l.MaxBackoff {
			t.Errorf("a retry waits %s, want %s to %s", w[1], l.Every, l.MaxBackoff)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reports) != 1 {
		t.Fatalf("%d reports after the server answered again, want 1", len(f.reports))
	}
}

// writeHook writes to w and then calls on with what was written.
type writeHook struct {
	w  io.Writer
	on func(string)
}

func (h writeHook) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	h.on(string(p))
	return n, err
}

func TestBackoffDoublesUpToTheLimitWithJitter(t *testing.T) {
	const every, limit = time.Second, 30 * time.Second
	for _, tc := range []struct {
		n      int
		j      float64
		lo, hi time.Duration
	}{
		{1, 0, every, every}, {1, 0.999, every, 2 * every},
		{2, 0, 2 * every, 2 * every}, {3, 0.5, 6 * every, 6 * every},
		{10, 0, limit / 2, limit / 2}, {10, 0.9999, limit - 2*time.Millisecond, limit}, {1000, 0.5, limit * 3 / 4, limit * 3 / 4},
	} {
		if got := Backoff(every, limit, tc.n, tc.j); got < tc.lo || got > tc.hi {
			t.Errorf("Backoff(%s, %s, %d, %g) = %s, want %s to %s", every, limit, tc.n, tc.j, got, tc.lo, tc.hi)
		}
	}
	if got := Backoff(every, every/2, 3, 0); got != every {
		t.Errorf("a limit below every: %s, want every", got)
	}
}

// A backend's long error and a flood of corrections still make a report the server
// takes: each text at most 500 characters, at most 100 corrections (the latest).
func TestLoopClipsTheStatusToWhatTheServerTakes(t *testing.T) {
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch}}
	long := strings.Repeat("é", 700) // two bytes a character: clipping counts both
	var many []Correction
	for i := range 150 {
		many = append(many, Correction{Team: "ads", Pool: "us-east/cpu", Object: fmt.Sprintf("quota %d %s", i, long), Was: long, Now: "46"})
	}
	b := &fakeBackend{corrections: many, err: errors.New("task 1: " + long)}
	l, _ := newTestLoop(t, f, b)
	if err := l.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := f.reports[0].Agent
	if len(st.Corrections) != 100 || !strings.HasPrefix(st.Corrections[99].Object, "quota 149 ") {
		t.Fatalf("the report carries %d corrections, the last %.20q; want the latest 100", len(st.Corrections), st.Corrections[len(st.Corrections)-1].Object)
	}
	texts := append([]string{}, st.Errors...)
	for _, c := range st.Corrections {
		texts = append(texts, c.Team, c.Pool, c.Object, c.Was, c.Now)
	}
	for _, s := range texts {
		if n := utf8.RuneCountInString(s); n > 500 || !utf8.ValidString(s) {
			t.Fatalf("a status text of %d characters (valid UTF-8: %v): the server refuses it", n, utf8.ValidString(s))
		}
	}
	if len(st.Errors) != 1 || !strings.HasPrefix(st.Errors[0], "apply quotas: task 1: é") {
		t.Fatalf("errors %q", st.Errors)
	}
}

// The report carries each pool's measured capacity (pools[].capacity) beside its usage,
// and leaves it out for a pool whose capacity the backend did not measure.
func TestLoopSendsMeasuredCapacity(t *testing.T) {
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch}}
	b := &fakeBackend{measure: Measurement{Pools: []PoolMeasure{{Pool: "us-east/cpu", Used: 7, Capacity: 128}, {Pool: "us-east/gpu", Used: 1}}}}
	l, _ := newTestLoop(t, f, b)
	if err := l.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Pools []map[string]any `json:"pools"`
	}
	if len(f.raw) != 1 || json.Unmarshal([]byte(f.raw[0]), &body) != nil {
		t.Fatalf("reports %q", f.raw)
	}
	if len(body.Pools) != 2 || body.Pools[0]["capacity"] != 128.0 || body.Pools[0]["used"] != 7.0 {
		t.Fatalf("pools sent %v, want us-east/cpu with capacity 128", body.Pools)
	}
	if _, sent := body.Pools[1]["capacity"]; sent {
		t.Fatalf("an unmeasured capacity was sent: %v", body.Pools[1])
	}
}

// sharingBackend is a fakeBackend that takes the pools' sharing settings.
type sharingBackend struct {
	fakeBackend
	got [][]PoolSharing
}

func (b *sharingBackend) SetPoolSharing(ps []PoolSharing) { b.got = append(b.got, ps) }

// A backend that maps idle-sharing settings gets the allocation's pools before it
// applies the quotas.
func TestLoopHandsThePoolsSharingToTheBackend(t *testing.T) {
	want := []PoolSharing{{Pool: "us-east/cpu", Policy: "fairshare", MinRuntimeSeconds: 600, Exposure: 0.25}}
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch, Pools: want}}
	b := &sharingBackend{}
	l, _ := newTestLoop(t, f, b)
	if err := l.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(b.got) != 1 || !slices.Equal(b.got[0], want) || len(b.quotas) != 1 {
		t.Fatalf("sharing %+v, quotas applied %d times", b.got, len(b.quotas))
	}
}

// PollErrors holds the backend's errors of the last poll only (which the poll reported
// and did not fail on), never the config's notes of unmapped teams.
func TestLoopPollErrorsAreTheLastPollsBackendErrors(t *testing.T) {
	f := &fakeServer{alloc: Allocation{Cluster: "us-east", Now: epoch, Quotas: []HeldQuota{{Team: "ghost", Pool: "us-east/cpu", Units: 5}}}}
	b := &fakeBackend{err: errors.New("quota API down")}
	l, _ := newTestLoop(t, f, b)
	l.Config = &Config{File: "us-east.yaml", Cluster: "us-east", Teams: map[string]Team{"ads": {}}, Pools: map[string]Pool{"us-east/cpu": {Unit: "1"}}}
	ctx := context.Background()
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.PollErrors(); len(got) != 1 || got[0] != "apply quotas: quota API down" || len(f.reports[0].Agent.Errors) != 2 {
		t.Fatalf("poll errors %q (reported %q), want the backend's one", got, f.reports[0].Agent.Errors)
	}
	b.err = nil
	if err := l.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.PollErrors(); got != nil {
		t.Fatalf("after a clean poll: %q", got)
	}
	l.unknown = nil // the unmapped team noted again: not the backend's error
	if err := l.Poll(ctx); err != nil || l.PollErrors() != nil || len(f.reports[2].Agent.Errors) != 1 {
		t.Fatalf("a poll with only a config note: %v, poll errors %q, reported %q", err, l.PollErrors(), f.reports[2].Agent.Errors)
	}
}
