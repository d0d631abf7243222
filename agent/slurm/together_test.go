package slurm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// pairedRunner holds each of the first two commands it runs until the other has
// started: a backend that runs them one after the other never gets past the first,
// which fails after a minute (a guard against a hung test, not a measure of speed).
type pairedRunner struct {
	*fakeSlurm
	mu      sync.Mutex
	started []string
	both    chan struct{}
}

func (p *pairedRunner) Run(ctx context.Context, stdin, name string, args ...string) (string, error) {
	p.mu.Lock()
	p.started = append(p.started, name+" "+strings.Join(args, " "))
	n := len(p.started)
	p.mu.Unlock()
	if n == 2 {
		close(p.both)
	}
	if n <= 2 {
		select {
		case <-p.both:
		case <-time.After(time.Minute):
			return "", errors.New(name + " waited a minute for a second command: the reads ran one after the other")
		}
	}
	return p.fakeSlurm.Run(ctx, stdin, name, args...)
}

// Each poll method sends its two independent reads of Slurm together (ApplyQuotas has
// one since best-effort jobs run under accounts of their own) (they wait on
// slurmctld's locks once, not twice), and answers as it does with the reads made one
// after the other (the other tests on the captured cluster check the answers).
func TestPollReadsGoTogether(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		method string
		poll   func(*Backend) error
		reads  []string // what the first two commands start with
	}{
		{"Measure", func(b *Backend) error { _, err := b.Measure(ctx, time.Now()); return err },
			[]string{"scontrol --oneliner show nodes", "squeue --noheader --all --states=RUNNING "}},
		{"FollowReservations", func(b *Backend) error { _, err := b.FollowReservations(ctx, agent.Plan{}); return err },
			[]string{"scontrol --oneliner show reservations", "squeue --noheader --all --states=PENDING,RUNNING,CONFIGURING,COMPLETING "}},
	} {
		t.Run(c.method, func(t *testing.T) {
			b, f := openFake(t)
			p := &pairedRunner{fakeSlurm: f, both: make(chan struct{})}
			b.run = p
			if err := c.poll(b); err != nil {
				t.Fatal(err)
			}
			if len(p.started) < 2 {
				t.Fatalf("commands %q: want at least the two reads", p.started)
			}
			for _, prefix := range c.reads {
				if !slices.ContainsFunc(p.started[:2], func(s string) bool { return strings.HasPrefix(s, prefix) }) {
					t.Errorf("first two commands %q: want one starting %q", p.started[:2], prefix)
				}
			}
		})
	}
}

// together runs every read, even after one fails, and returns the first error in the
// order the reads were given, whichever finished first.
func TestTogetherRunsAllAndReturnsTheFirstError(t *testing.T) {
	first, second := errors.New("first"), errors.New("second")
	secondDone := make(chan struct{})
	var ran [3]bool
	err := together(
		func() error { <-secondDone; ran[0] = true; return first },
		func() error { ran[1] = true; close(secondDone); return second },
		func() error { ran[2] = true; return nil },
	)
	if err != first || ran != [3]bool{true, true, true} {
		t.Errorf("error %v, ran %v: want %v and all three run", err, ran, first)
	}
	if err := together(func() error { return nil }, func() error { return second }); err != second {
		t.Errorf("error %v, want %v", err, second)
	}
	if err := together(func() error { return nil }, func() error { return nil }); err != nil {
		t.Errorf("error %v, want none", err)
	}
}
