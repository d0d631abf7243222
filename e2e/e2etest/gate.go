package e2etest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/clearhouse/clearhouse/agent"
)

// ReportGate stands between the agent and the real server: it passes every request on
// and counts the best-effort start events that reached the server; armed with a task
// (or with AnyTask), it holds the first report carrying that task's start instead (the agent waits for
// the answer as it would for a slow network) and never passes it on. A test kills the
// agent while its report is held: the poll made in Slurm what it made, and the server
// never heard of it.
type ReportGate struct {
	*httptest.Server
	mu      sync.Mutex
	hold    int64         // the task whose start is held (0: none, AnyTask: the first)
	held    bool          // a report was held
	heldFor int64         // the task whose start was held
	started map[int64]int // task -> reports with its start the server accepted
	reports int           // reports the server accepted
}

// NewReportGate starts a ReportGate in front of the server at the URL server; it
// stops when the test ends.
func NewReportGate(t *testing.T, server string) *ReportGate {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	g := &ReportGate{started: map[int64]int{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/updates") {
			proxy.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var up agent.Updates
		_ = json.Unmarshal(body, &up)
		g.mu.Lock()
		hold := g.hold
		for _, e := range up.BestEffort {
			if hold != 0 && (e.Task == hold || hold == AnyTask) && e.Event == agent.TaskStarted {
				g.hold, g.held, g.heldFor = 0, true, e.Task
				g.mu.Unlock()
				<-r.Context().Done() // the agent is gone: nothing reaches the server
				return
			}
		}
		g.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w}
		proxy.ServeHTTP(rec, r)
		if rec.status == 0 || rec.status/100 == 2 {
			g.mu.Lock()
			g.reports++
			for _, e := range up.BestEffort {
				if e.Event == agent.TaskStarted {
					g.started[e.Task]++
				}
			}
			g.mu.Unlock()
		}
	}))
	t.Cleanup(g.Close)
	return g
}

// AnyTask arms a ReportGate for the first task's start it sees.
const AnyTask = -1

// HoldStart arms the gate for task's start; IsHeld says whether it held it yet, and
// HeldTask whose start it held.
func (g *ReportGate) HoldStart(task int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.held = task, false
}

func (g *ReportGate) IsHeld() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

func (g *ReportGate) HeldTask() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.heldFor
}

// Counts is the reports with task's start the server accepted, and all reports.
func (g *ReportGate) Counts(task int64) (started, reports int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.started[task], g.reports
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
