package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// mapReduce is a map stage of 80 eu-west cores for an hour and a reduce stage of 20
// for half an hour, both in the next four hours, combined by lang.
func (pl *planned) mapReduce(lang string) fleet.Definition {
	now := pl.Clock.Now()
	stage := func(count int64, dur time.Duration) fleet.RequestSpec {
		return fleet.RequestSpec{Configuration: map[string]int64{"eu-west/cpu": 1}, Count: count, Duration: dur, Arrival: now, Deadline: now.Add(4 * time.Hour)}
	}
	return fleet.Definition{Value: 100_000_000, Language: lang, Requests: []fleet.RequestSpec{stage(80, time.Hour), stage(20, 30*time.Minute)}}
}

func TestBidLanguagesInThePlan(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		pl.Clock.Set(pl.Clock.Now().Truncate(5 * time.Minute))
		now := pl.Clock.Now()
		// ALL: both stages fit side by side and start now.
		all := pl.reserve("member@search", pl.mapReduce(""))
		if all.Language != "ALL" || !all.Requests[0].StartAt.Equal(now) || !all.Requests[1].StartAt.Equal(now) {
			t.Fatalf("ALL: %s, starts %s and %s", all.Language, all.Requests[0].StartAt, all.Requests[1].StartAt)
		}
		pl.cancel(all.ID)
		// ORDER: map, then reduce once the map has ended.
		order := pl.reserve("member@search", pl.mapReduce("ORDER"))
		if order.Status != fleet.ReservationAccepted || order.Language != "ORDER" || !order.Requests[0].StartAt.Equal(now) ||
			order.Requests[1].StartAt.Before(order.Requests[0].End()) {
			t.Fatalf("ORDER: %+v, starts %s and %s", order.Reservation, order.Requests[0].StartAt, order.Requests[1].StartAt)
		}
		// A server started afresh keeps it as it was.
		restarted := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		if _, err := restarted.Allocation(context.Background(), "eu-west"); err != nil {
			t.Fatal(err)
		}
		got, err := restarted.Reservation(context.Background(), order.ID)
		if err != nil || got.Status != fleet.ReservationAccepted || !got.Requests[1].StartAt.Equal(*order.Requests[1].StartAt) {
			t.Fatalf("ORDER after a restart: %+v %v", got.Reservation, err)
		}
		pl.cancel(order.ID)

		// ANY: the scheduler chooses the cheaper request, and the reservation holds it alone.
		short, long := pl.job("eu-west/cpu", 50, time.Hour, 0, 3*time.Hour, 10), pl.job("eu-west/cpu", 50, 2*time.Hour, 0, 3*time.Hour, 10)
		anyOf := fleet.Definition{Value: short.Value, Language: "ANY", Requests: []fleet.RequestSpec{long.Requests[0], short.Requests[0]}}
		q, err := pl.r.Quote(context.Background(), pl.Users["member@search"], anyOf)
		if err != nil || !q.Feasible || q.Chosen != 1 || len(q.Starts) != 1 {
			t.Fatalf("ANY quote: %+v %v", q, err)
		}
		chosen := pl.reserve("member@search", anyOf)
		if chosen.Language != "ANY" || len(chosen.Requests) != 1 || chosen.Requests[0].Duration != 3600 || chosen.Price != q.Price {
			t.Fatalf("ANY: %+v with %d requests, the first of %ds", chosen.Reservation, len(chosen.Requests), chosen.Requests[0].Duration)
		}
		pl.cancel(chosen.ID)

		// Overhead is reserved and priced: 10 cores and 5 of overhead take 15.
		plain := pl.job("eu-west/cpu", 10, time.Hour, 0, time.Hour, 10)
		withOverhead := pl.job("eu-west/cpu", 10, time.Hour, 0, time.Hour, 10)
		withOverhead.Requests[0].Overhead = map[string]int64{"eu-west/cpu": 5}
		a, err := pl.r.Quote(context.Background(), pl.Users["member@search"], plain)
		if err != nil {
			t.Fatal(err)
		}
		b := pl.reserve("member@search", withOverhead)
		if b.Status != fleet.ReservationAccepted || b.Price != a.Price*3/2 || b.Requests[0].OverheadByPool()["eu-west/cpu"] != 5 {
			t.Fatalf("with overhead: price %s, without %s; %+v", b.Price, a.Price, b.Requests[0])
		}
		load, err := pl.r.PoolLoad(context.Background(), "eu-west/cpu", now, now.Add(time.Minute), time.Minute)
		if err != nil || len(load) != 1 || load[0].Reserved != 15 {
			t.Fatalf("load with the overhead: %+v %v", load, err)
		}
		// A bad language or overhead names the field and changes nothing.
		for field, d := range map[string]fleet.Definition{
			"language":             {Value: 1, Language: "SOME", Requests: plain.Requests},
			"requests[0].overhead": {Value: 1, Requests: []fleet.RequestSpec{{Configuration: plain.Requests[0].Configuration, Count: 1, Duration: time.Hour, Arrival: now, Deadline: now.Add(time.Hour), Overhead: map[string]int64{"us-east/cpu": 1}}}},
		} {
			_, err := pl.r.Reserve(context.Background(), pl.Users["member@search"], d)
			if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !startsWith(clearhouse.ErrorMessage(err), field+":") {
				t.Fatalf("%s: %v", field, err)
			}
		}
	})
}

func (pl *planned) cancel(id int64) {
	pl.T.Helper()
	if err := pl.r.Cancel(context.Background(), pl.Users["member@search"], id); err != nil {
		pl.T.Fatal(err)
	}
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }
