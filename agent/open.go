package agent

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// Opener opens a backend; Open retries it.
type Opener struct {
	Name    string                                          // the backend's name, as reported
	Open    func(ctx context.Context) (Backend, error)      // one attempt
	Client  *Client                                         // where a failed attempt is reported
	Version string                                          // the agent's version, reported
	ErrOut  io.Writer                                       // each failed attempt, and the wait
	Now     func() time.Time                                // stamps ErrOut's lines
	Every   time.Duration                                   // the first wait after a failure
	Max     time.Duration                                   // the longest wait
	wait    func(ctx context.Context, d time.Duration) bool // sleeps; false when ctx ended (tests replace it)
}

// Run opens the backend, and keeps trying until it opens or ctx ends: a cluster
// manager that cannot be reached when the agent starts (an API server down, Slurm's
// controller restarting) is waited for, not a reason to exit. Each failed attempt is
// written to ErrOut and reported to the server as the agent's status, with the error,
// so that operators see on /operate why the cluster's agent reports nothing else; the
// next attempt follows after a backoff that doubles with each failure (from Every, at
// most Max, with jitter). A server that refuses the agent's token ends it at once.
// When ctx ends first, the last attempt's error is returned.
func (o Opener) Run(ctx context.Context) (Backend, error) {
	wait := o.wait
	if wait == nil {
		wait = sleep
	}
	for failures := 1; ; failures++ {
		b, err := o.Open(ctx)
		if err == nil {
			return b, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		msg := clipText("open the backend: "+err.Error(), maxStatusText)
		if _, rerr := o.Client.Report(ctx, Updates{Agent: &Status{Backend: o.Name, Version: o.Version, Errors: []string{msg}}}); Refused(rerr) {
			return nil, fmt.Errorf("%w (and the server refused the agent's token: %v)", err, rerr)
		}
		d := Backoff(o.Every, o.Max, failures, rand.Float64())
		now := time.Now
		if o.Now != nil {
			now = o.Now
		}
		fmt.Fprintf(o.ErrOut, "%s error: %s (trying again in %s)\n", Clock(now()), msg, d.Round(time.Millisecond))
		if !wait(ctx, d) {
			return nil, err
		}
	}
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
