package fleet

import (
	"testing"
	"time"
)

func TestDurationTextReadsAsPeopleWriteIt(t *testing.T) {
	t.Parallel() // no database, no shared state
	for d, want := range map[time.Duration]string{5 * time.Hour: "5h", 90 * time.Minute: "1h30m", 45 * time.Minute: "45m", 5 * time.Minute: "5m", 90 * time.Second: "1m30s", 30 * time.Second: "30s"} {
		if got := durationText(d); got != want {
			t.Errorf("durationText(%v) = %q, want %q", d, got, want)
		}
	}
}
