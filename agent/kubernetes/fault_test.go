package kubernetes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// An API server that cannot be reached: opening the backend gives up when its context
// ends and says why, rather than hanging or running on empty informers.
func TestAnUnreachableAPIServerIsAnError(t *testing.T) {
	cfg, err := agent.ParseConfig("x.yaml", []byte("cluster: c\nteams:\n  a: {namespaces: [a]}\npools:\n  c/cpu: {resource: cpu, unit: \"1\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := kubernetes.New(ctx, &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}, cfg, nil)
	if err == nil {
		b.Close()
		t.Fatal("a backend opened on an API server that does not answer")
	}
	if !strings.Contains(err.Error(), "informers' first lists did not complete") {
		t.Fatalf("error %q", err)
	}
}

// proxy forwards TCP connections from a loopback port to the API server, and can be
// stopped (every connection cut, the port closed) and started again on the same port:
// an API server outage as the backend sees it, without stopping the shared one.
type proxy struct {
	t      *testing.T
	addr   string // host:port it listens on
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, addr: "127.0.0.1:0"}
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) start() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// An API server that stops answering after the backend opened: with nothing to write,
// Measure and FollowReservations return an error and nothing measured (the informers
// still hold the last state, which would be stale), and the loop reports the errors
// with no pools' or owners' usage; once the API server answers again, both measure.
func TestAnAPIServerOutageIsReportedNotAStaleMeasurement(t *testing.T) {
	cfg := kubetest.Config(t)
	cs := kubetest.Client(t)
	ns := kubetest.Namespace(t, cs)
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	through := rest.CopyConfig(cfg)
	through.Host = "https://" + p.addr
	if through.TLSClientConfig.ServerName == "" {
		through.TLSClientConfig.ServerName = u.Hostname()
	}
	class := "ch-fault-" + ns[len(ns)-5:]
	t.Cleanup(func() {
		_ = cs.SchedulingV1().PriorityClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	c, err := agent.ParseConfig("x.yaml", fmt.Appendf(nil, "cluster: c\nteams:\n  a: {namespaces: [%s]}\npools:\n  c/cpu: {resource: cpu, unit: \"1\"}\nkubernetes: {kueue: \"off\", priority_class: %s}\n", ns, class))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := kubernetes.New(ctx, through, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m, err := b.Measure(ctx, time.Now())
	if err != nil || len(m.Pools) != 1 || len(m.Owners) != 1 {
		t.Fatalf("while the API server answers: %+v %v", m, err)
	}
	srv := &reportServer{}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client, err := agent.NewClient(hs.URL, "c", "cha_x")
	if err != nil {
		t.Fatal(err)
	}
	loop := &agent.Loop{Client: client, Backend: b, Config: c, Out: io.Discard, ErrOut: io.Discard}
	// Polls until the quotas are written and the informer holds them: nothing to write.
	kubetest.Eventually(t, "a clean poll with the quotas in place", func() (bool, error) {
		if err := loop.Poll(ctx); err != nil {
			return false, err
		}
		qs, err := cs.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(qs.Items) == 2 && loop.PollErrors() == nil, err
	})
	kubetest.Eventually(t, "a poll that writes nothing", func() (bool, error) {
		cs, err := b.ApplyQuotas(ctx, []agent.Quota{{Team: "a", Pool: "c/cpu"}})
		return err == nil && len(cs) == 0, err
	})
	p.stop()
	m, err = b.Measure(ctx, time.Now())
	if err == nil || len(m.Pools)+len(m.Owners) != 0 || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("during the outage Measure gave %+v, %v; want an error and nothing measured", m, err)
	}
	if rep, err := b.FollowReservations(ctx, agent.Plan{Now: time.Now()}); err == nil || len(rep.Usage) != 0 {
		t.Fatalf("during the outage FollowReservations gave %+v, %v", rep, err)
	}
	// The loop, with nothing to write, reports the failure and no usage.
	if err := loop.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	r := srv.last()
	if len(r.Pools)+len(r.OwnerUsage) != 0 || r.Agent == nil || len(loop.PollErrors()) == 0 || !slices.ContainsFunc(r.Agent.Errors, func(e string) bool {
		return strings.HasPrefix(e, "measure: ") && strings.Contains(e, "does not answer")
	}) || slices.ContainsFunc(r.Agent.Errors, func(e string) bool { return strings.HasPrefix(e, "apply quotas") }) {
		t.Fatalf("the loop's report during the outage: pools %v, owners %v, status %+v; want the measure's error alone", r.Pools, r.OwnerUsage, r.Agent)
	}
	p.start()
	kubetest.Eventually(t, "measuring again after the outage", func() (bool, error) {
		m, err := b.Measure(ctx, time.Now())
		return err == nil && len(m.Pools) == 1, nil
	})
	if err := loop.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if r := srv.last(); len(r.Pools) != 1 || len(r.OwnerUsage) != 1 || len(r.Agent.Errors) != 0 || loop.PollErrors() != nil {
		t.Fatalf("the loop's report after the outage: pools %v, owners %v, status %+v", r.Pools, r.OwnerUsage, r.Agent)
	}
}

// reportServer answers the agent API with an empty allocation and keeps the reports.
type reportServer struct {
	mu      sync.Mutex
	reports []agent.Updates
}

func (s *reportServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodGet {
		_ = json.NewEncoder(w).Encode(agent.Allocation{Cluster: "c", Now: time.Now().UTC()})
		return
	}
	var u agent.Updates
	_ = json.NewDecoder(r.Body).Decode(&u)
	s.reports = append(s.reports, u)
	_, _ = io.WriteString(w, `{}`)
}

func (s *reportServer) last() agent.Updates {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reports) == 0 {
		return agent.Updates{}
	}
	return s.reports[len(s.reports)-1]
}
