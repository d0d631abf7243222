package server

import (
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/robfig/cron/v3"
)

// The history job runs at the start of each interval of the clock, whenever the
// server started, so each run stamps the interval it runs in and none is skipped.
func TestHistoryJobRunsAtEachIntervalsStart(t *testing.T) {
	sched, err := cron.ParseStandard(historySchedule)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 23, 9, 7, 41, 0, time.UTC) // a server started mid-interval
	at := start
	for range 200 {
		next := sched.Next(at)
		if !next.Equal(next.Truncate(besteffort.HistoryInterval)) || next.Sub(at) > besteffort.HistoryInterval || !next.After(at) {
			t.Fatalf("after %s the job runs at %s; want the start of the next %s interval", at, next, besteffort.HistoryInterval)
		}
		at = next
	}
	if want := start.Truncate(besteffort.HistoryInterval).Add(200 * besteffort.HistoryInterval); !at.Equal(want) {
		t.Fatalf("200 runs end at %s, want %s: an interval was skipped", at, want)
	}
}
