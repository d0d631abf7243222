// Command testtimeline runs `make test`'s go test commands and says, after the usual
// output, when each test binary started and ended, how much CPU it used (its
// children included: Chromium, PostgreSQL clients, the crash tests' servers), and how
// busy the machine's processors were over the run, so that a CI log shows whether a
// pass is CPU-bound to its end or leaves a processor idle in its tail
// (docs/testing.md, "The CI timeline").
//
// Usage:
//
//	testtimeline [-every 30s] [-record FILE] -- NAME go test ARGS... [-- NAME go test ARGS...]
//
// Each `-- NAME COMMAND...` is a pass: its command, a go test command line, runs with
// -json and -exec added after its "test" word. The passes run at the same time. Every
// package's result prints as go test prints it without -v (the ok line; a failing
// test's output and the FAIL lines; build errors), then the timeline. The exit status
// is 1 if any pass's command failed or any package or build failed, else 0.
//
// `testtimeline exec BINARY ARGS...` is the -exec wrapper: it runs the test binary as
// its child, reaps every descendant (it is their subreaper on Linux) and prints one
// line with the binary's start, end and CPU time (user and system, descendants
// included), which the pass's reader takes out of the output.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "exec" {
		os.Exit(execTest(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("testtimeline", flag.ContinueOnError)
	every := fs.Duration("every", 30*time.Second, "the timeline's interval for the machine's busy processors")
	record := fs.String("record", "", "also write every package's record and the machine's samples as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// flag stops at the first "--" and drops it.
	passes, err := parsePasses(append([]string{"--"}, fs.Args()...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimeline:", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimeline:", err)
		return 2
	}
	return runPasses(passes, self, *every, *record, os.Stdout, os.Stderr)
}
