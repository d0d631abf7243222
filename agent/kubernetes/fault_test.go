package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/agent/kubernetes"
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
