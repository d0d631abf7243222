package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// marker starts the line the exec wrapper prints after its test binary ends.
const marker = "testtimeline-exec: "

// binaryRun is what the exec wrapper measured of one test binary.
type binaryRun struct {
	Start time.Time     `json:"start"`
	End   time.Time     `json:"end"`
	User  time.Duration `json:"user"`
	Sys   time.Duration `json:"sys"`
	// Left says some descendants were still running when the wrapper stopped
	// waiting for them: their CPU is not counted.
	Left bool `json:"left,omitempty"`
}

// CPU is the binary's user and system time, its descendants' included.
func (r binaryRun) CPU() time.Duration { return r.User + r.Sys }

// lingerFor is how long the wrapper waits, after the test binary ends, for its
// orphaned descendants (a browser's helpers) to end, so that their CPU is counted.
var lingerFor = 2 * time.Second

// execTest runs args (a test binary and its arguments) as go test's -exec wrapper and
// returns the exit status to leave with: the binary's, or 1 when it could not start
// or a signal ended it. Signals the wrapper gets are passed on to the binary.
func execTest(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "testtimeline exec: no test binary")
		return 2
	}
	becomeSubreaper()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP)
	defer signal.Stop(sigs)

	r := binaryRun{Start: time.Now()}
	p, err := os.StartProcess(args[0], args, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   childAttr(),
	})
	if err != nil {
		fmt.Fprintln(stderr, "testtimeline exec:", err)
		return 1
	}
	go func() {
		for s := range sigs {
			_ = p.Signal(s)
		}
	}()
	status, err := reapAll(p.Pid)
	r.End = time.Now()
	if errors.Is(err, errLeft) {
		r.Left = true
	} else if err != nil {
		fmt.Fprintln(stderr, "testtimeline exec:", err)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		r.User = time.Duration(ru.Utime.Nano())
		r.Sys = time.Duration(ru.Stime.Nano())
	}
	line, _ := json.Marshal(r)
	fmt.Fprintf(stdout, "%s%s\n", marker, line)
	switch {
	case status.Exited():
		return status.ExitStatus()
	case status.Signaled():
		fmt.Fprintf(stderr, "testtimeline exec: %s: %v\n", args[0], status.Signal())
	}
	return 1
}

var errLeft = errors.New("descendants still running")

// reapAll waits for every child (the test binary, and the orphans it left, whose
// subreaper this process is) and returns the test binary's status. Once the binary
// has ended it waits at most lingerFor for the rest, then returns errLeft.
func reapAll(pid int) (syscall.WaitStatus, error) {
	var status syscall.WaitStatus
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return status, err
		}
		if got == pid {
			status = ws
			break
		}
	}
	deadline := time.Now().Add(lingerFor)
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.ECHILD):
			return status, nil
		case errors.Is(err, syscall.EINTR) || got > 0:
			continue
		case err != nil:
			return status, err
		}
		if time.Now().After(deadline) {
			return status, errLeft
		}
		time.Sleep(20 * time.Millisecond)
	}
}
