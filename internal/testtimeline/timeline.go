package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// timeline is a run's record: every pass's packages and the machine's samples.
type timeline struct {
	began   time.Time
	passes  []passOutcome
	samples []cpuSample
	module  string // trimmed from package paths; "" keeps them whole
}

// row is one package's line of the table.
type row struct {
	pass, pkg  string
	start, end float64 // seconds from the run's start
	cpu        float64 // seconds; -1 when not measured
	result     string
}

func (tl timeline) rows() []row {
	var rows []row
	for _, p := range tl.passes {
		for _, r := range p.results {
			if r.Result == "skip" && r.Binary == nil {
				continue // no test files
			}
			w := row{pass: p.name, pkg: strings.TrimPrefix(strings.TrimPrefix(r.Package, tl.module), "/"), cpu: -1, result: r.Result}
			if w.pkg == "" {
				w.pkg = "."
			}
			start, end := r.Start, r.End
			if r.Binary != nil {
				start, end, w.cpu = r.Binary.Start, r.Binary.End, r.Binary.CPU().Seconds()
			}
			w.start, w.end = start.Sub(tl.began).Seconds(), end.Sub(tl.began).Seconds()
			rows = append(rows, w)
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		if a.start < b.start {
			return -1
		}
		if a.start > b.start {
			return 1
		}
		return 0
	})
	return rows
}

// busyBetween is the machine's busy processors and all its processors, on average
// from a to b seconds after the start; ok is false without two samples there.
func (tl timeline) busyBetween(a, b float64) (busy, all float64, ok bool) {
	var first, last *cpuSample
	for i := range tl.samples {
		s := &tl.samples[i]
		at := s.At.Sub(tl.began).Seconds()
		if at >= a-0.5 && first == nil {
			first = s
		}
		if at <= b+0.5 {
			last = s
		}
	}
	if first == nil || last == nil {
		return 0, 0, false
	}
	dt := last.At.Sub(first.At).Seconds()
	if dt <= 0 {
		return 0, 0, false
	}
	return (last.Busy - first.Busy) / dt, (last.Total - first.Total) / dt, true
}

// write prints the table of packages, each pass's totals, and the machine's busy
// processors every interval with the test binaries running in it.
func (tl timeline) write(w io.Writer, every time.Duration) {
	rows := tl.rows()
	fmt.Fprintf(w, "\ntesttimeline: seconds from the start; cpu: user + system of the test binary and its descendants\n")
	fmt.Fprintf(w, "%-8s %-28s %7s %7s %7s %8s %5s\n", "pass", "package", "start", "end", "wall", "cpu", "cores")
	for _, r := range rows {
		cpu, cores := "-", "-"
		if r.cpu >= 0 {
			cpu = fmt.Sprintf("%.1f", r.cpu)
			if r.end > r.start {
				cores = fmt.Sprintf("%.2f", r.cpu/(r.end-r.start))
			}
		}
		mark := ""
		if r.result == "fail" {
			mark = "  FAIL"
		}
		fmt.Fprintf(w, "%-8s %-28s %7.1f %7.1f %7.1f %8s %5s%s\n", r.pass, r.pkg, r.start, r.end, r.end-r.start, cpu, cores, mark)
	}
	for _, p := range tl.passes {
		var sumWall, sumCPU float64
		n := 0
		for _, r := range rows {
			if r.pass == p.name {
				n++
				sumWall += r.end - r.start
				if r.cpu > 0 {
					sumCPU += r.cpu
				}
			}
		}
		a, b := p.start.Sub(tl.began).Seconds(), p.end.Sub(tl.began).Seconds()
		line := fmt.Sprintf("pass %s: %.1f to %.1f s (%.1f s); %d test binaries, %.1f s of their wall time, %.1f s of CPU",
			p.name, a, b, b-a, n, sumWall, sumCPU)
		if busy, all, ok := tl.busyBetween(a, b); ok {
			line += fmt.Sprintf("; machine %.2f of %.0f processors busy (%.0f%% idle)", busy, all, 100*(all-busy)/all)
		}
		fmt.Fprintln(w, line)
	}
	if len(tl.samples) < 2 {
		return
	}
	end := tl.samples[len(tl.samples)-1].At.Sub(tl.began).Seconds()
	step := every.Seconds()
	fmt.Fprintf(w, "every %s: the machine's busy processors (of all), the test binaries running\n", every)
	for a := 0.0; a < end; a += step {
		b := min(a+step, end)
		busy, all, ok := tl.busyBetween(a, b)
		if !ok {
			continue
		}
		byPass := map[string][]string{}
		for _, r := range rows {
			if r.start < b && r.end > a {
				byPass[r.pass] = append(byPass[r.pass], r.pkg)
			}
		}
		var running []string
		for _, p := range tl.passes {
			if names := byPass[p.name]; len(names) > 0 {
				running = append(running, p.name+": "+strings.Join(names, " "))
			}
		}
		fmt.Fprintf(w, "%5.0f-%-5.0f %4.2f/%.0f %-10s %s\n", a, b, busy, all, bar(busy, all), strings.Join(running, "; "))
	}
}

// bar draws busy of all processors in ten characters.
func bar(busy, all float64) string {
	if all <= 0 {
		return ""
	}
	n := int(10*busy/all + 0.5)
	n = max(0, min(10, n))
	return strings.Repeat("#", n) + strings.Repeat(".", 10-n)
}

// save writes the packages' records and the samples as JSON.
func (tl timeline) save(path string) error {
	type passRecord struct {
		Name     string      `json:"name"`
		Start    time.Time   `json:"start"`
		End      time.Time   `json:"end"`
		Packages []pkgResult `json:"packages"`
	}
	rec := struct {
		Began   time.Time    `json:"began"`
		Passes  []passRecord `json:"passes"`
		Samples []cpuSample  `json:"samples"`
	}{Began: tl.began, Samples: tl.samples}
	for _, p := range tl.passes {
		rec.Passes = append(rec.Passes, passRecord{p.name, p.start, p.end, p.results})
	}
	b, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// modulePath reads the module's path from go.mod in the working directory; "" if
// there is none.
func modulePath() string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
