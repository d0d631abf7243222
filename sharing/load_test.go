package sharing

import (
	"testing"

	"pgregory.net/rapid"
)

// running counts the background tasks of jobs that run at t.
func running(jobs []SimJob, t float64) int64 {
	var n int64
	for _, j := range jobs {
		if j.Release <= t && t < j.Release+j.TaskHours {
			n += int64(j.Tasks)
		}
	}
	return n
}

// At every moment the background tasks running are exactly the load, and there are
// never more tasks than the load's total rise.
func TestBackgroundJobsFollowTheLoad(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "steps")
		steps := make([]LoadStep, n)
		at := 0.0
		for i := range steps {
			at += float64(rapid.IntRange(0, 4).Draw(t, "gap")) / 4
			steps[i] = LoadStep{At: at, Units: rapid.Int64Range(-2, 12).Draw(t, "units")}
		}
		end := at + float64(rapid.IntRange(0, 8).Draw(t, "tail"))/4
		jobs := BackgroundJobs("a", steps, end)
		var rise, prev int64
		for _, s := range steps {
			u := max(s.Units, 0)
			rise += max(u-prev, 0)
			prev = u
		}
		var tasks int64
		for _, j := range jobs {
			if !j.Background || j.Team != "a" || j.Tasks < 1 || !(j.TaskHours > 0) {
				t.Fatalf("bad job %+v", j)
			}
			tasks += int64(j.Tasks)
		}
		if tasks > rise {
			t.Fatalf("%d tasks for a total rise of %d", tasks, rise)
		}
		for i, s := range steps {
			next := end
			if i+1 < len(steps) {
				next = steps[i+1].At
			}
			if next <= s.At {
				continue
			}
			mid := (s.At + next) / 2
			if got := running(jobs, mid); got != max(s.Units, 0) {
				t.Fatalf("at %g: %d background tasks run, the load is %d (jobs %+v)", mid, got, s.Units, jobs)
			}
		}
		if got := running(jobs, end); got != 0 {
			t.Fatalf("%d tasks still run at the end", got)
		}
	})
}

// A flat load is one job; a wave gives one job per stretch.
func TestBackgroundJobsShapes(t *testing.T) {
	flat := BackgroundJobs("a", []LoadStep{{0, 5}, {1, 5}, {2, 5}}, 3)
	if len(flat) != 1 || flat[0].Tasks != 5 || flat[0].Release != 0 || flat[0].TaskHours != 3 {
		t.Fatalf("flat load: %+v", flat)
	}
	wave := BackgroundJobs("a", []LoadStep{{0, 2}, {1, 4}, {2, 1}}, 3)
	want := []SimJob{
		{ID: "a#1", Team: "a", Release: 0, Tasks: 1, TaskHours: 2, Background: true}, // layer 2 from 0 to 2
		{ID: "a#2", Team: "a", Release: 0, Tasks: 1, TaskHours: 3, Background: true}, // layer 1 throughout
		{ID: "a#3", Team: "a", Release: 1, Tasks: 2, TaskHours: 1, Background: true}, // layers 3-4 from 1 to 2
	}
	if len(wave) != len(want) {
		t.Fatalf("wave: %+v", wave)
	}
	for _, w := range want {
		found := false
		for _, g := range wave {
			if g.Release == w.Release && g.Tasks == w.Tasks && g.TaskHours == w.TaskHours && g.Background {
				found = true
			}
		}
		if !found {
			t.Errorf("wave: no job like %+v in %+v", w, wave)
		}
	}
}
