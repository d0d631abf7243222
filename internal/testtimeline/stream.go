package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's events and the go command's
// build events).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output, build-fail
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

// pkgResult is one package's run in one pass.
type pkgResult struct {
	Pass    string
	Package string
	Result  string // pass, fail, skip (no test files)
	Elapsed float64
	// Start and End come from the first and last event when the exec wrapper
	// reported nothing (the binary did not build or did not run).
	Start, End time.Time
	Binary     *binaryRun
}

// pkgState holds a package's output until its result decides what of it to print.
type pkgState struct {
	res   pkgResult
	lines []testLine
	done  map[string]string // test -> pass, fail, skip
}

type testLine struct {
	test, text string
}

// reader turns one pass's `go test -json` stream into go test's output without -v:
// the ok and FAIL lines, a failed package's output but for its passing and skipped
// tests and the === lines, build errors. Lines that are not JSON pass through.
type reader struct {
	pass     string
	out      io.Writer
	pkgs     map[string]*pkgState
	results  []pkgResult
	failed   bool // a package or build failed
	sawEvent bool
}

func newReader(pass string, out io.Writer) *reader {
	return &reader{pass: pass, out: out, pkgs: map[string]*pkgState{}}
}

// read consumes the stream to its end.
func (r *reader) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		r.line(sc.Bytes())
	}
	r.flushUnfinished()
	return sc.Err()
}

func (r *reader) line(b []byte) {
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
		fmt.Fprintf(r.out, "%s\n", b)
		return
	}
	r.sawEvent = true
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
		return
	case "build-fail":
		r.failed = true
		return
	}
	if e.Package == "" {
		if e.Output != "" {
			fmt.Fprint(r.out, e.Output)
		}
		return
	}
	st := r.pkgs[e.Package]
	if st == nil {
		st = &pkgState{res: pkgResult{Pass: r.pass, Package: e.Package, Start: e.Time}, done: map[string]string{}}
		r.pkgs[e.Package] = st
	}
	st.res.End = e.Time
	switch e.Action {
	case "output":
		text := e.Output
		if i := strings.Index(text, marker); i >= 0 {
			var br binaryRun
			if json.Unmarshal([]byte(strings.TrimSpace(text[i+len(marker):])), &br) == nil {
				st.res.Binary = &br
				text = text[:i]
				if text == "" {
					return
				}
				text += "\n"
			}
		}
		st.lines = append(st.lines, testLine{e.Test, text})
	case "pass", "fail", "skip":
		if e.Test != "" {
			st.done[e.Test] = e.Action
			return
		}
		st.res.Result, st.res.Elapsed = e.Action, e.Elapsed
		if e.Action == "fail" {
			r.failed = true
		}
		r.finish(st)
	}
}

// finish prints a package's result, in one write (passes run at once), and keeps
// its record.
func (r *reader) finish(st *pkgState) {
	delete(r.pkgs, st.res.Package)
	r.results = append(r.results, st.res)
	var b strings.Builder
	defer func() { _, _ = io.WriteString(r.out, b.String()) }()
	if st.res.Result != "fail" {
		// The last line is go test's own: "ok  \tpkg\t1.2s" or "?   \tpkg\t[no test files]".
		for i := len(st.lines) - 1; i >= 0; i-- {
			if l := st.lines[i]; l.test == "" && (strings.HasPrefix(l.text, "ok  ") || strings.HasPrefix(l.text, "?   ")) {
				b.WriteString(l.text)
				return
			}
		}
		fmt.Fprintf(&b, "ok  \t%s\t%.3fs\n", st.res.Package, st.res.Elapsed)
		return
	}
	for _, l := range st.lines {
		if res := st.done[l.test]; res == "pass" || res == "skip" {
			continue
		}
		if strings.HasPrefix(l.text, "=== ") {
			continue
		}
		b.WriteString(l.text)
	}
}

// flushUnfinished prints what is left of packages whose stream ended without a
// result (go test was killed): their output, and a line saying so.
func (r *reader) flushUnfinished() {
	for _, pkg := range slices.Sorted(maps.Keys(r.pkgs)) {
		st := r.pkgs[pkg]
		r.failed = true
		st.res.Result = "fail"
		st.lines = append(st.lines, testLine{"", fmt.Sprintf("FAIL\t%s\t[no result: the stream ended]\n", pkg)})
		r.finish(st)
	}
}
