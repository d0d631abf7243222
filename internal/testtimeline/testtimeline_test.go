package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/internal/cputime"
)

// The test binary doubles as the processes the tests need, by TESTTIMELINE_ROLE:
// the exec wrapper in a process of its own (its children's CPU is its own), a test
// binary that spins, one that leaves a spinning orphan, and a fake go command.
func TestMain(m *testing.M) {
	switch os.Getenv("TESTTIMELINE_ROLE") {
	case "exec": // the wrapper, running this binary in TESTTIMELINE_CHILD's role
		lingerFor = time.Minute // the orphan's spin may take long on a loaded machine
		os.Setenv("TESTTIMELINE_ROLE", os.Getenv("TESTTIMELINE_CHILD"))
		os.Exit(execTest([]string{os.Args[0]}, os.Stdout, os.Stderr))
	case "spin": // use CPU, then exit with TESTTIMELINE_EXIT
		spin(300 * time.Millisecond)
		code := 0
		fmt.Sscan(os.Getenv("TESTTIMELINE_EXIT"), &code)
		os.Exit(code)
	case "orphan": // start a spinning child and exit at once
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "TESTTIMELINE_ROLE=spin", "TESTTIMELINE_EXIT=0")
		if err := cmd.Start(); err != nil {
			os.Exit(9)
		}
		os.Exit(0)
	case "go": // print the stream in TESTTIMELINE_STREAM and exit with TESTTIMELINE_EXIT
		b, _ := os.ReadFile(os.Getenv("TESTTIMELINE_STREAM"))
		os.Stdout.Write(b)
		_ = os.WriteFile(os.Getenv("TESTTIMELINE_ARGS"), []byte(strings.Join(os.Args[1:], "\n")), 0o644)
		code := 0
		fmt.Sscan(os.Getenv("TESTTIMELINE_EXIT"), &code)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// spin uses d of CPU time.
func spin(d time.Duration) {
	start := cputime.Used()
	x := 0
	for cputime.Used()-start < d {
		for i := range 100_000 {
			x += i % 7
		}
	}
	_ = x
}

const pkgPath = "example.com/m/p"

// ev makes one line of a go test -json stream.
func ev(action, test, output string) string {
	e := map[string]any{"Time": "2026-11-29T08:00:00Z", "Action": action, "Package": pkgPath}
	if test != "" {
		e["Test"] = test
	}
	if output != "" {
		e["Output"] = output
	}
	b, _ := json.Marshal(e)
	return string(b) + "\n"
}

// A passing package prints its ok line only; a failing one its failed tests' output
// and the FAIL lines, not its passing tests' logs nor the === lines; the exec
// wrapper's line is taken out and kept as the package's record.
func TestReaderPrintsWhatGoTestPrintsWithoutV(t *testing.T) {
	rec := `{"start":"2026-11-29T08:00:01Z","end":"2026-11-29T08:00:03Z","user":1500000000,"sys":500000000}`
	stream := ev("start", "", "") +
		ev("run", "TestGood", "") + ev("output", "TestGood", "=== RUN   TestGood\n") +
		ev("output", "TestGood", "    a_test.go:3: a passing test's log\n") +
		ev("output", "TestGood", "--- PASS: TestGood (0.00s)\n") + ev("pass", "TestGood", "") +
		ev("run", "TestBad", "") + ev("output", "TestBad", "=== RUN   TestBad\n") +
		ev("output", "TestBad", "    a_test.go:9: boom\n") +
		ev("output", "TestBad", "--- FAIL: TestBad (0.00s)\n") + ev("fail", "TestBad", "") +
		ev("output", "", "FAIL\n") + ev("output", "", marker+rec+"\n") +
		ev("output", "", "FAIL\texample.com/m/p\t2.000s\n") + ev("fail", "", "") +
		`not json: a line go test wrote itself` + "\n"
	var out bytes.Buffer
	r := newReader("race", &out)
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	want := "    a_test.go:9: boom\n--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\texample.com/m/p\t2.000s\nnot json: a line go test wrote itself\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if !r.failed {
		t.Error("a failed package did not fail the pass")
	}
	if len(r.results) != 1 || r.results[0].Result != "fail" || r.results[0].Binary == nil || r.results[0].Binary.CPU() != 2*time.Second {
		t.Fatalf("results %+v, want one failed package with 2 s of CPU", r.results)
	}

	out.Reset()
	ok := newReader("race", &out)
	_ = ok.read(strings.NewReader(ev("start", "", "") + ev("output", "", "PASS\n") + ev("output", "", marker+rec+"\n") +
		ev("output", "", "ok  \texample.com/m/p\t2.000s\n") + ev("pass", "", "")))
	if out.String() != "ok  \texample.com/m/p\t2.000s\n" || ok.failed {
		t.Errorf("a passing package printed %q (failed %v), want its ok line alone", out.String(), ok.failed)
	}
}

// A build failure prints the compiler's errors and fails the pass, as does a package
// whose stream ends without a result (go test killed).
func TestReaderFailsOnBuildErrorsAndCutStreams(t *testing.T) {
	build := `{"ImportPath":"example.com/m/p [example.com/m/p.test]","Action":"build-output","Output":"# example.com/m/p\n"}` + "\n" +
		`{"ImportPath":"example.com/m/p [example.com/m/p.test]","Action":"build-output","Output":"p_test.go:3:28: cannot use \"x\" as int value\n"}` + "\n" +
		`{"ImportPath":"example.com/m/p [example.com/m/p.test]","Action":"build-fail"}` + "\n" +
		ev("start", "", "") + ev("output", "", "FAIL\texample.com/m/p [build failed]\n") +
		`{"Time":"2026-11-29T08:00:00Z","Action":"fail","Package":"example.com/m/p","FailedBuild":"example.com/m/p [example.com/m/p.test]"}` + "\n"
	var out bytes.Buffer
	r := newReader("race", &out)
	_ = r.read(strings.NewReader(build))
	if !r.failed || !strings.Contains(out.String(), "cannot use") || !strings.HasSuffix(out.String(), "FAIL\texample.com/m/p [build failed]\n") {
		t.Errorf("build failure: failed %v, printed\n%s", r.failed, out.String())
	}

	out.Reset()
	cut := newReader("race", &out)
	_ = cut.read(strings.NewReader(ev("start", "", "") + ev("run", "TestLong", "") + ev("output", "TestLong", "    still going\n")))
	if !cut.failed || !strings.Contains(out.String(), "still going") || !strings.Contains(out.String(), "[no result: the stream ended]") {
		t.Errorf("cut stream: failed %v, printed\n%s", cut.failed, out.String())
	}
}

// The exec wrapper passes the test binary's exit status on and counts the CPU of an
// orphan the binary left (as Chromium's helpers outlive the browser), which it reaps
// as their subreaper.
func TestExecCountsOrphansAndPassesTheStatus(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("subreapers are Linux's")
	}
	run := func(role, exit string) (int, binaryRun) {
		t.Helper()
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "TESTTIMELINE_ROLE=exec", "TESTTIMELINE_CHILD="+role, "TESTTIMELINE_EXIT="+exit)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		line, ok := strings.CutPrefix(strings.TrimSpace(out.String()), marker)
		var r binaryRun
		if !ok || json.Unmarshal([]byte(line), &r) != nil {
			t.Fatalf("wrapper printed %q (stderr %q), want its record", out.String(), errOut.String())
		}
		return code, r
	}
	if code, r := run("spin", "3"); code != 3 || r.CPU() < 300*time.Millisecond || !r.End.After(r.Start) {
		t.Errorf("spinning binary: status %d, record %+v; want 3 and at least 300 ms of CPU", code, r)
	}
	code, r := run("orphan", "0")
	if code != 0 || r.CPU() < 300*time.Millisecond || r.Left {
		t.Errorf("orphaning binary: status %d, record %+v; want 0 and its orphan's 300 ms of CPU counted", code, r)
	}
}

// runPasses adds -json and the wrapper to each command and exits 1 when a command
// fails, even with a clean stream (go test's own errors), or a package fails even
// with status 0; 0 only when neither.
func TestRunPassesStatus(t *testing.T) {
	dir := t.TempDir()
	okStream := ev("start", "", "") + ev("output", "", "ok  \texample.com/m/p\t0.1s\n") + ev("pass", "", "")
	failStream := ev("start", "", "") + ev("output", "", "FAIL\texample.com/m/p\t0.1s\n") + ev("fail", "", "")
	for _, c := range []struct {
		name, stream, exit string
		want               int
	}{
		{"clean", okStream, "0", 0},
		{"status 1 without a failed package", okStream, "1", 1},
		{"a failed package", failStream, "1", 1},
		{"a failed package, status 0", failStream, "0", 1},
		{"nothing at all, status 1", "", "1", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream := filepath.Join(dir, "stream")
			if err := os.WriteFile(stream, []byte(c.stream), 0o644); err != nil {
				t.Fatal(err)
			}
			args := filepath.Join(dir, "args")
			t.Setenv("TESTTIMELINE_ROLE", "go")
			t.Setenv("TESTTIMELINE_STREAM", stream)
			t.Setenv("TESTTIMELINE_ARGS", args)
			t.Setenv("TESTTIMELINE_EXIT", c.exit)
			var out, errOut bytes.Buffer
			got := runPasses([]pass{{"race", []string{os.Args[0], "test", "-race", "./..."}}}, "/x/tt", time.Second, "", &out, &errOut)
			if got != c.want {
				t.Errorf("status %d, want %d; printed\n%s", got, c.want, out.String())
			}
			b, _ := os.ReadFile(args)
			if want := "test\n-json\n-exec\n/x/tt exec\n-race\n./..."; string(b) != want {
				t.Errorf("go was run with %q, want %q", b, want)
			}
		})
	}
}

func TestParsePasses(t *testing.T) {
	p, err := parsePasses([]string{"--", "race", "go", "test", "-race", "./...", "--", "norace", "nice", "go", "test", "-run", "X", "./a"})
	if err != nil || len(p) != 2 || p[0].name != "race" || strings.Join(p[1].cmd, " ") != "nice go test -run X ./a" {
		t.Fatalf("parsePasses = %+v, %v", p, err)
	}
	for _, bad := range [][]string{nil, {"race", "go", "test"}, {"--", "race"}, {"--", "race", "go", "vet"}} {
		if _, err := parsePasses(bad); err == nil {
			t.Errorf("parsePasses(%q) took it", bad)
		}
	}
}

// The timeline's table and its intervals: busy processors from the samples, the
// binaries running in each interval.
func TestTimelineWrite(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	bin := func(a, b, cpu float64) *binaryRun {
		return &binaryRun{Start: at(a), End: at(b), User: time.Duration(cpu * float64(time.Second))}
	}
	tl := timeline{
		began:  t0,
		module: "example.com/m",
		passes: []passOutcome{
			{name: "race", start: at(0), end: at(40), results: []pkgResult{
				{Package: "example.com/m/slow", Result: "pass", Binary: bin(2, 40, 60)},
				{Package: "example.com/m/quick", Result: "fail", Binary: bin(5, 15, 10)},
				{Package: "example.com/m/none", Result: "skip"},
			}},
			{name: "norace", start: at(0), end: at(30), results: []pkgResult{
				{Package: "example.com/m/slow", Result: "pass", Binary: bin(21, 30, 9)},
			}},
		},
		// two processors: busy 2 for the first 20 s, then 1.
		samples: []cpuSample{{At: at(0), Busy: 0, Total: 0}, {At: at(20), Busy: 40, Total: 40}, {At: at(40), Busy: 60, Total: 80}},
	}
	var out bytes.Buffer
	tl.write(&out, 20*time.Second)
	got := out.String()
	for _, want := range []string{
		"race     slow                             2.0    40.0    38.0     60.0  1.58\n",
		"race     quick                            5.0    15.0    10.0     10.0  1.00  FAIL\n",
		"norace   slow                            21.0    30.0     9.0      9.0  1.00\n",
		"pass race: 0.0 to 40.0 s (40.0 s); 2 test binaries, 48.0 s of their wall time, 70.0 s of CPU; machine 1.50 of 2 processors busy (25% idle)\n",
		"    0-20    2.00/2 ########## race: slow quick\n",
		"   20-40    1.00/2 #####..... race: slow; norace: slow\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "none") {
		t.Errorf("a package without test files is in the table:\n%s", got)
	}

	path := filepath.Join(t.TempDir(), "timeline.json")
	if err := tl.save(path); err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Passes []struct {
			Name     string
			Packages []pkgResult
		}
		Samples []cpuSample
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Passes) != 2 || len(rec.Passes[0].Packages) != 3 ||
		rec.Passes[0].Packages[0].Binary.CPU() != 60*time.Second || len(rec.Samples) != 3 {
		t.Errorf("-record wrote %s (%v)", b, err)
	}
}

// /proc/stat's first line in clock ticks (100 a second): idle and iowait are idle,
// the rest busy; guest time, already in user, is not counted twice.
func TestReadCPU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	stat := "cpu  1000 50 250 5000 200 0 100 0 400 0\ncpu0 500 25 125 2500 100 0 50 0 200 0\n"
	if err := os.WriteFile(path, []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	s, ok := readCPU(path)
	if !ok || s.Busy != 14 || s.Total != 66 {
		t.Errorf("readCPU = %+v, %v; want 14 s busy of 66", s, ok)
	}
	if _, ok := readCPU(filepath.Join(t.TempDir(), "none")); ok {
		t.Error("readCPU of a missing file said ok")
	}
}
