package agent

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func newTestOpener(t *testing.T, f *fakeServer, open func(context.Context) (Backend, error)) (*Opener, *bytes.Buffer, *[]time.Duration) {
	t.Helper()
	var errOut bytes.Buffer
	var waits []time.Duration
	o := &Opener{Name: "kubernetes", Open: open, Client: newTestClient(t, f), Version: "v1", ErrOut: &errOut, Every: time.Second, Max: 8 * time.Second,
		wait: func(ctx context.Context, d time.Duration) bool { waits = append(waits, d); return ctx.Err() == nil }}
	return o, &errOut, &waits
}

// A backend that cannot be opened at start is tried again, with a growing wait, and
// each failure reaches operators as the agent's status; the backend opened is returned.
func TestOpenRetriesAndReportsEachFailure(t *testing.T) {
	f := &fakeServer{}
	tries := 0
	want := &fakeBackend{}
	o, errOut, waits := newTestOpener(t, f, func(context.Context) (Backend, error) {
		if tries++; tries <= 3 {
			return nil, errors.New("the API server does not answer")
		}
		return want, nil
	})
	b, err := o.Run(context.Background())
	if err != nil || b != want {
		t.Fatalf("Run = %v, %v; want the backend of the fourth try", b, err)
	}
	if len(f.reports) != 3 {
		t.Fatalf("%d reports, want one for each of the 3 failures", len(f.reports))
	}
	for _, r := range f.reports {
		if r.Agent == nil || r.Agent.Backend != "kubernetes" || r.Agent.Version != "v1" || len(r.Agent.Errors) != 1 ||
			r.Agent.Errors[0] != "open the backend: the API server does not answer" || len(r.Starts)+len(r.Ends)+len(r.Pools) != 0 {
			t.Fatalf("a failure's report: %+v, agent %+v", r, r.Agent)
		}
	}
	if len(*waits) != 3 || (*waits)[0] < time.Second || (*waits)[2] < (*waits)[0] || (*waits)[2] > 8*time.Second {
		t.Fatalf("waits %v: want three, from 1 s, growing, at most 8 s", *waits)
	}
	if n := strings.Count(errOut.String(), "the API server does not answer (trying again in "); n != 3 {
		t.Fatalf("%d failures written, want 3:\n%s", n, errOut)
	}
}

// The attempts stop when the agent is stopped (the last error returned), and at once
// when the server refuses the agent's token.
func TestOpenStopsWithTheContextOrARefusedToken(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	o, _, _ := newTestOpener(t, &fakeServer{}, func(context.Context) (Backend, error) {
		cancel()
		return nil, errors.New("no answer")
	})
	if b, err := o.Run(ctx); b != nil || err == nil || err.Error() != "no answer" {
		t.Fatalf("Run after the context ended = %v, %v", b, err)
	}

	tries := 0
	o, _, waits := newTestOpener(t, &fakeServer{statuses: []int{401}}, func(context.Context) (Backend, error) {
		tries++
		return nil, errors.New("no answer")
	})
	if b, err := o.Run(context.Background()); b != nil || err == nil || !strings.Contains(err.Error(), "refused the agent's token") || tries != 1 || len(*waits) != 0 {
		t.Fatalf("Run with a refused token = %v, %v after %d tries and waits %v", b, err, tries, *waits)
	}
}
