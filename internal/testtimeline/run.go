package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// pass is one go test command and its name in the timeline.
type pass struct {
	name string
	cmd  []string
}

// parsePasses reads `-- NAME COMMAND... [-- NAME COMMAND...]`; each command must
// have a "test" word (where -json and -exec go).
func parsePasses(args []string) ([]pass, error) {
	if len(args) == 0 || args[0] != "--" {
		return nil, errors.New("want -- NAME go test ARGS... [-- NAME go test ARGS...]")
	}
	var out []pass
	for _, a := range args {
		if a == "--" {
			out = append(out, pass{})
			continue
		}
		p := &out[len(out)-1]
		if p.name == "" {
			p.name = a
			continue
		}
		p.cmd = append(p.cmd, a)
	}
	for _, p := range out {
		if p.name == "" || !slices.Contains(p.cmd, "test") {
			return nil, fmt.Errorf("pass %q: want NAME and a go test command, got %q", p.name, p.cmd)
		}
	}
	return out, nil
}

// withJSON returns the command with -json and the exec wrapper added after its
// first "test" word.
func withJSON(cmd []string, self string) []string {
	i := slices.Index(cmd, "test")
	out := slices.Clone(cmd[:i+1])
	out = append(out, "-json", "-exec", quoteArg(self)+" exec")
	return append(out, cmd[i+1:]...)
}

// quoteArg quotes a path for the go command's -exec, which splits its value into
// words (cmd/internal/quoted).
func quoteArg(s string) string {
	for _, c := range s {
		if c == ' ' || c == '\t' || c == '\'' || c == '"' {
			b, _ := json.Marshal(s)
			return string(b)
		}
	}
	return s
}

// passOutcome is a pass's command's result.
type passOutcome struct {
	name       string
	start, end time.Time
	err        error
	results    []pkgResult
	failed     bool
}

// runPasses runs the passes at once, prints their packages' results as they come and
// the timeline at the end, and returns the exit status.
func runPasses(passes []pass, self string, every time.Duration, record string, stdout, stderr io.Writer) int {
	began := time.Now()
	sampler := startSampler(time.Second)
	var mu sync.Mutex // one package's lines at a time
	out := &lockedWriter{mu: &mu, w: stdout}
	outcomes := make([]passOutcome, len(passes))
	var wg sync.WaitGroup
	for i, p := range passes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = runPass(p, self, out, stderr)
		}()
	}
	wg.Wait()
	samples := sampler.stop()

	status := 0
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			status = 1
			fmt.Fprintf(stdout, "testtimeline: pass %s: %v\n", o.name, o.err)
		case o.failed:
			status = 1
		}
	}
	tl := timeline{began: began, passes: outcomes, samples: samples, module: modulePath()}
	tl.write(stdout, every)
	if record != "" {
		if err := tl.save(record); err != nil {
			fmt.Fprintln(stderr, "testtimeline:", err)
		}
	}
	if status != 0 {
		fmt.Fprintln(stdout, "testtimeline: FAIL")
	}
	return status
}

func runPass(p pass, self string, out io.Writer, stderr io.Writer) passOutcome {
	o := passOutcome{name: p.name, start: time.Now()}
	args := withJSON(p.cmd, self)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		o.err = err
		return o
	}
	if err := cmd.Start(); err != nil {
		o.err = err
		return o
	}
	r := newReader(p.name, out)
	readErr := r.read(pipe)
	o.err = cmd.Wait()
	if o.err == nil {
		o.err = readErr
	}
	o.end = time.Now()
	o.results, o.failed = r.results, r.failed
	if o.err != nil && !r.failed && !r.sawEvent {
		o.err = fmt.Errorf("%v, and it reported no package", o.err)
	}
	return o
}

// lockedWriter serialises the passes' writes.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
