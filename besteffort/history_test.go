package besteffort_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func historyRows(t *testing.T, db *store.DB) []besteffort.IdleHistory {
	t.Helper()
	var rows []besteffort.IdleHistory
	if err := db.Read.Order("at, team_id, pool_id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestHistoryIsOnePointPerIntervalAndPrunedByAge(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		x.submit("member@search", besteffort.JobSpec{Configuration: cpu(10), Tasks: 2})
		x.step("us-east")
		x.Clock.Advance(time.Hour)
		x.step("us-east")
		// Two servers take the snapshot of one interval: one row per team and pool.
		a, err := x.be.RecordHistory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		other := besteffort.New(db, x.L, x.Clock.Now, besteffort.DefaultConfig)
		b, err := other.RecordHistory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows := historyRows(t, db)
		if a.Recorded == 0 || b.Recorded != 0 || len(rows) != a.Recorded {
			t.Fatalf("first recorded %d, second %d, %d rows", a.Recorded, b.Recorded, len(rows))
		}
		var search, ads *besteffort.IdleHistory
		for i, r := range rows {
			switch {
			case r.TeamID == "search" && r.PoolID == "us-east/cpu":
				search = &rows[i]
			case r.TeamID == "ads" && r.PoolID == "us-east/cpu":
				ads = &rows[i]
			}
			if r.TeamID == "@operator" {
				t.Fatalf("the operator has a history row: %+v", r)
			}
		}
		if search == nil || ads == nil {
			t.Fatalf("no row for search or ads: %+v", rows)
		}
		// search ran 20 cores for an hour (ORIG: 20 x 1^2 / 2), on ads's and the operator's idle cores.
		if !near(search.Utility, 10) || search.Borrowed != 20 || ads.Lent <= 0 || ads.Contribution <= 0 || search.Priority >= ads.Priority {
			t.Fatalf("search %+v, ads %+v", *search, *ads)
		}
		if !search.At.Equal(x.Clock.Now().Truncate(besteffort.HistoryInterval)) {
			t.Fatalf("stamped %s at %s", search.At, x.Clock.Now())
		}
		// Points every interval over the past 40 days: the retention rule leaves every
		// point of the last 2 days, hourly points to 30 days and daily points beyond.
		x.Clock.Advance(40 * 24 * time.Hour)
		var old []besteffort.IdleHistory
		for at := search.At; at.Before(x.Clock.Now()); at = at.Add(besteffort.HistoryInterval) {
			p := *search
			p.At = at
			old = append(old, p)
		}
		if err := db.Write.Where("1 = 1").Delete(&besteffort.IdleHistory{}).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Write.CreateInBatches(old, 500).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := x.be.RecordHistory(ctx); err != nil {
			t.Fatal(err)
		}
		now := x.Clock.Now()
		stamps := map[time.Time]bool{}
		for _, r := range historyRows(t, db) {
			if r.TeamID == "search" && r.PoolID == "us-east/cpu" {
				stamps[r.At.UTC()] = true
			}
		}
		var fine, hourly, daily int
		for at := range stamps {
			switch age := now.Sub(at); {
			case age < besteffort.HistoryFine:
				fine++
			case age < besteffort.HistoryHourly:
				if at.Minute() != 0 {
					t.Fatalf("kept a quarter-hour point %s, %s old", at, age)
				}
				hourly++
			default:
				if at.Hour() != 0 || at.Minute() != 0 {
					t.Fatalf("kept a non-daily point %s, %s old", at, age)
				}
				daily++
			}
		}
		if fine < 2*24*4-1 || hourly < 27*24 || daily < 9 {
			t.Fatalf("kept %d fine, %d hourly, %d daily points", fine, hourly, daily)
		}
	})
}
