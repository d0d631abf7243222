package lab

import (
	"bytes"
	"io"
	"math"
	"os"
	"reflect"
	"testing"
)

// FuzzSWFWorkload feeds arbitrary bytes to the SWF path of LoadWorkload (the
// MaxProcs header, then scheduler.ReadSWF and its seeded model) and of ReadShareLog.
// Whatever the input, neither panics, and what they accept is a workload the
// scheduler can replay: a positive capacity from the header, and jobs at least one
// slot long and one unit wide whose run fits between arrival and deadline, with a
// positive, finite value; read twice, the same jobs. The seeds are the repository's
// HPC2N log's head and a few malformed lines; run it longer with
// `go test -run '^$' -fuzz '^FuzzSWFWorkload$' -fuzztime 60s ./lab/`.
func FuzzSWFWorkload(f *testing.F) {
	head, err := os.ReadFile("testdata/hpc2n-head.swf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(head[:min(len(head), 4096)])
	f.Add([]byte("; MaxProcs: 8\n1 0 0 3600 4 -1 -1 -1 -1 -1 1 7 -1 -1 -1 -1 -1 -1\n"))
	f.Add([]byte("; MaxProcs: 8\n1 0 0 3600 0.5 -1 -1 -1 -1 -1 1 7 -1 -1 -1 -1 -1 -1\n"))
	f.Add([]byte("; MaxProcs: 99999999999999999999\n1 1e12 0 1e12 1e12 -1 -1 -1 -1 -1 1 7 -1 -1 -1 -1 -1 -1\n"))
	f.Add([]byte(";MaxProcs:3\n1 NaN 0 1 1 -1 -1 -1 -1 -1 1 7 -1 -1 -1 -1 -1 -1\n2 3 4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		open := func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		o := DefaultSimOptions()
		o.Workload = "fuzz.swf"
		w, err := LoadWorkload(o, open)
		if err == nil {
			if w.Capacity <= 0 || w.Capacity != SWFMaxProcs(data) || len(w.Jobs) == 0 {
				t.Fatalf("capacity %d (header %d), %d jobs", w.Capacity, SWFMaxProcs(data), len(w.Jobs))
			}
			for _, j := range w.Jobs {
				if j.Duration < 1 || j.Width < 1 || j.Arrival < 0 || j.Submit != j.Arrival || j.Deadline-j.Arrival < j.Duration ||
					!(j.Value > 0) || math.IsInf(j.Value, 0) {
					t.Fatalf("a job the scheduler cannot replay: %+v", j)
				}
			}
			again, err := LoadWorkload(o, open)
			if err != nil || !reflect.DeepEqual(again, w) {
				t.Fatalf("read twice: %v, the same: %v", err, reflect.DeepEqual(again, w))
			}
		}
		log, err := ReadShareLog("fuzz.swf", open)
		if err == nil && (log.Procs <= 0 || len(log.jobs) == 0 || len(log.users) == 0 || log.last-log.first < shareWindowHours) {
			t.Fatalf("a log the experiment cannot sample: %d processors, %d jobs, %d users, %d hours", log.Procs, len(log.jobs), len(log.users), log.last-log.first)
		}
	})
}
