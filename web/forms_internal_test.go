package web

import (
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
)

func TestGroupDigitsAndWholeNumberMessages(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 1 << 31: "2,147,483,648"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
	if _, err := parseWhole("3000000", 1, 1_000_000); err == nil || err.Error() != "must be at most 1,000,000" {
		t.Errorf("a number over the bound: %v", err)
	}
	if _, err := parseWhole("0", 1, 1<<31); err == nil || err.Error() != "must be at least 1" {
		t.Errorf("a number under the bound names the internal upper one: %v", err)
	}
	if _, err := parseWhole("99999999999999999999", 1, 1_000_000); err == nil || err.Error() != "too large: at most 1,000,000" {
		t.Errorf("a number over int64: %v", err)
	}
}

// A task's units are bounded by the pool's capacity, which the message names in
// its unit: never the scheduler's internal 2,147,483,648.
func TestTaskUnitsNameThePoolsCapacity(t *testing.T) {
	t.Parallel()
	p := exchange.Pool{ID: "us-east/cpu", Unit: "core", Capacity: 4000}
	for _, raw := range []string{"4001", "3000000000", "99999999999999999999"} {
		_, err := taskUnits(raw, 1, p)
		if err == nil || err.Error() != "pool us-east/cpu has 4,000 cores in all: one task can use at most that" {
			t.Errorf("%s units: %v", raw, err)
		}
	}
	if n, err := taskUnits("4000", 1, p); err != nil || n != 4000 {
		t.Errorf("the whole pool: %d %v", n, err)
	}
	if _, err := taskUnits("0", 1, p); err == nil || err.Error() != "must be at least 1" {
		t.Errorf("zero units: %v", err)
	}
}

func TestCountsTakeTheRightNumber(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n          int64
		unit, want string
	}{{1, "core", "1 core"}, {2, "core", "2 cores"}, {4000, "core", "4,000 cores"}, {16, "GiB", "16 GiB"}, {1, "GPU", "1 GPU"}, {2, "GPU", "2 GPUs"}, {1, "task", "1 task"}, {240, "task", "240 tasks"}} {
		if got := countOf(c.n, c.unit); got != c.want {
			t.Errorf("countOf(%d, %q) = %q, want %q", c.n, c.unit, got, c.want)
		}
	}
}

// A waiting job says when it should start as a UTC time and how far off, and why
// it waits, in words; never only a queue position.
func TestJobWaitSaysWhenAndWhy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	at := now.Add(2 * time.Hour)
	pos, start, why := jobWait(besteffort.JobView{Job: besteffort.Job{ClusterID: "ap-south"}, Position: 241, EstimatedStart: &at}, now)
	if pos != "240 tasks ahead" || start != "2026-11-26 12:00 UTC (in about 2 h)" || !strings.Contains(why, "240 tasks of other jobs wait ahead of it in ap-south") {
		t.Errorf("with an estimate: %q, %q, %q", pos, start, why)
	}
	pos, start, why = jobWait(besteffort.JobView{Job: besteffort.Job{ClusterID: "ap-south"}, Position: 2}, now)
	if pos != "1 task ahead" || start != "not known yet" || !strings.Contains(why, "no best-effort task runs there now") {
		t.Errorf("without an estimate: %q, %q, %q", pos, start, why)
	}
	pos, start, _ = jobWait(besteffort.JobView{Job: besteffort.Job{ClusterID: "ap-south"}, Position: 1, EstimatedStart: &now}, now)
	if pos != "next" || start != "as soon as units free up" {
		t.Errorf("next: %q, %q", pos, start)
	}
	if pos, start, why = jobWait(besteffort.JobView{}, now); pos+start+why != "" {
		t.Errorf("no task waits: %q %q %q", pos, start, why)
	}
}

// An idle account reads in the team's words first: what it lends and borrows,
// with the pool's unit in the right number, and whether its tasks go first.
func TestIdleWordsSayWhatATeamLentAndBorrowed(t *testing.T) {
	t.Parallel()
	w := idleWords(besteffort.TeamPool{Pool: "us-east/cpu", Policy: "direct-orig", Lent: 170, Borrowed: 480, Contribution: 5451.6, Utility: 16482.5}, "core")
	if !strings.Contains(w, "lends 170.0 cores") || !strings.Contains(w, "borrow 480 cores") || !strings.Contains(w, "teams that lent more go first") {
		t.Errorf("words: %q", w)
	}
	for _, jargon := range []string{"direct-orig", "unit-hours", "h²", "×"} {
		if strings.Contains(w, jargon) {
			t.Errorf("the plain words use %q: %q", jargon, w)
		}
	}
	if w := idleWords(besteffort.TeamPool{Pool: "us-east/ram", Policy: "fairshare"}, "GiB"); w != "" {
		t.Errorf("an account where nothing moved: %q", w)
	}
}

// Date-and-time fields show and take the pages' one format (UTC, 24 h); what a
// browser's datetime-local field sends is read too.
func TestFormTimesAreOneFormat(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 11, 27, 14, 5, 0, 0, time.UTC)
	for _, in := range []string{"2026-11-27 14:05", " 2026-11-27 14:05 UTC ", "2026-11-27T14:05"} {
		if got, err := parseFormTime(in); err != nil || !got.Equal(want) {
			t.Errorf("parseFormTime(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"2026-11-27 2:05 PM", "27/11/2026 14:05", ""} {
		if _, err := parseFormTime(in); err == nil {
			t.Errorf("parseFormTime(%q) took it", in)
		}
	}
	if got := want.Format(formTime); got != "2026-11-27 14:05" {
		t.Errorf("a field's value %q", got)
	}
	if got := span(want, want.Add(2*time.Hour)); got != "2026-11-27 14:05 – 16:05 UTC" {
		t.Errorf("span %q", got)
	}
}
