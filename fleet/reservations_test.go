package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// planned is a market with the reservation service, pricing us-east/cpu and
// eu-west/cpu by greedy first fit at one cent a unit-slot.
type planned struct {
	*exchangetest.Market
	r *fleet.Reservations
}

func newPlanned(t *testing.T, db *store.DB) *planned {
	t.Helper()
	mk := exchangetest.NewAuctionMarket(t, db)
	pl := &planned{Market: mk, r: fleet.NewReservations(db, mk.L, mk.Clock.Now, fleet.DefaultPlanConfig)}
	mk.M.UseQuotaCommitments(pl.r)
	for _, pool := range []string{"us-east/cpu", "eu-west/cpu"} {
		if _, err := pl.r.SetPolicy(context.Background(), fleet.PricingPolicy{PoolID: pool, Algorithm: "greedy", Predictor: "seasonal", UnitPrice: 10_000}); err != nil {
			t.Fatal(err)
		}
	}
	return pl
}

// job is a one-request definition: count units of pool for dur, in [now+from, now+to).
func (pl *planned) job(pool string, count int64, dur, from, to time.Duration, value float64) fleet.Definition {
	now := pl.Clock.Now()
	return fleet.Definition{Value: *exchangetest.Money(value), Requests: []fleet.RequestSpec{{
		Configuration: map[string]int64{pool: 1}, Count: count, Duration: dur, Arrival: now.Add(from), Deadline: now.Add(to)}}}
}

func (pl *planned) reserve(who string, d fleet.Definition) fleet.ReservationView {
	pl.T.Helper()
	ctx := context.Background()
	id, err := pl.r.NewReservation(ctx, pl.Users[who])
	if err != nil {
		pl.T.Fatal(err)
	}
	v, err := pl.r.Submit(ctx, pl.Users[who], id, d)
	if err != nil {
		pl.T.Fatal(err)
	}
	return v
}

func (pl *planned) trialBalanceIsZero() {
	pl.T.Helper()
	tb, err := pl.L.TrialBalance(context.Background())
	if err != nil {
		pl.T.Fatal(err)
	}
	var sum ledger.Money
	for _, a := range tb {
		sum += a.Posted
	}
	if sum != 0 {
		pl.T.Fatalf("trial balance sums to %s", sum)
	}
}

func TestAReservationUsesTheTeamsQuotaFreeAndPaysForTheRest(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		// ads holds 60 cores of us-east/cpu: 40 of them for an hour cost nothing.
		inside := pl.reserve("member@ads", pl.job("us-east/cpu", 40, time.Hour, 0, 2*time.Hour, 10))
		if inside.Status != fleet.ReservationAccepted || inside.Price != 0 || inside.HoldID != nil {
			t.Fatalf("inside the quota: %+v", inside.Reservation)
		}
		// 30 more: 20 from the quota, 10 from shared capacity for 12 slots at 1 cent.
		beyond := pl.reserve("member@ads", pl.job("us-east/cpu", 30, time.Hour, 0, 2*time.Hour, 10))
		if beyond.Status != fleet.ReservationAccepted || beyond.Price != 1_200_000 || beyond.HoldID == nil {
			t.Fatalf("beyond the quota: %+v", beyond.Reservation)
		}
		if b := pl.Balance("ads"); b.Held != 1_200_000 {
			t.Fatalf("held %s, want the price", b.Held)
		}
		pl.trialBalanceIsZero()

		// Half an hour on, six slots have passed: half the price is captured.
		pl.Clock.Advance(30 * time.Minute)
		if _, err := pl.r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		b := pl.Balance("ads")
		if b.Posted != 500*ledger.Dollar-600_000 || b.Held != 600_000 {
			t.Fatalf("after six slots: %+v", b)
		}
		pl.trialBalanceIsZero()
		// The job ends early: the rest of the hold is released at once.
		res, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{Ends: []fleet.EndReport{{Reservation: beyond.ID, Request: 0, At: pl.Clock.Now()}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Ended) != 1 || res.Ended[0] != beyond.ID {
			t.Fatalf("report: %+v", res)
		}
		b = pl.Balance("ads")
		if b.Posted != 500*ledger.Dollar-600_000 || b.Held != 0 {
			t.Fatalf("after the early end: %+v", b)
		}
		got, _ := pl.r.Reservation(ctx, beyond.ID)
		if got.Status != fleet.ReservationDone || got.Captured != 600_000 || got.Released != 600_000 {
			t.Fatalf("ended reservation: %+v", got.Reservation)
		}
		pl.trialBalanceIsZero()
	})
}

func TestSubmittingIsIdempotentAndAnotherDefinitionConflicts(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	pl := newPlanned(t, storetest.New(t))
	ctx := context.Background()
	u := pl.Users["member@search"]
	id, _ := pl.r.NewReservation(ctx, u)
	d := pl.job("eu-west/cpu", 10, time.Hour, 0, 3*time.Hour, 5)
	first, err := pl.r.Submit(ctx, u, id, d)
	if err != nil || first.Status != fleet.ReservationAccepted {
		t.Fatalf("first: %+v %v", first.Reservation, err)
	}
	again, err := pl.r.Submit(ctx, u, id, d)
	if err != nil || again.HoldID == nil || *again.HoldID != *first.HoldID {
		t.Fatalf("the same definition again: %+v %v", again.Reservation, err)
	}
	other := pl.job("eu-west/cpu", 11, time.Hour, 0, 3*time.Hour, 5)
	if _, err := pl.r.Submit(ctx, u, id, other); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
		t.Fatalf("another definition under the id: %v", err)
	}
	if _, err := pl.r.Submit(ctx, pl.Users["member@ads"], id, d); clearhouse.ErrorCode(err) == "" {
		t.Fatal("another team submitted under search's id")
	}
	if b := pl.Balance("search"); b.Held != first.Price {
		t.Fatalf("held %s, want one hold of %s", b.Held, first.Price)
	}
}

func TestABadDefinitionNamesTheFieldAndSavesNothing(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	pl := newPlanned(t, storetest.New(t))
	ctx := context.Background()
	u := pl.Users["member@search"]
	now := pl.Clock.Now()
	ok := func() fleet.Definition { return pl.job("eu-west/cpu", 1, time.Hour, 0, 2*time.Hour, 1) }
	cases := map[string]func(d *fleet.Definition){
		"requests[0].deadline":      func(d *fleet.Definition) { d.Requests[0].Deadline = now },
		"requests[0].duration":      func(d *fleet.Definition) { d.Requests[0].Duration = 3 * time.Hour },
		"requests[0].configuration": func(d *fleet.Definition) { d.Requests[0].Configuration["us-east/ram"] = 1 },
		"value":                     func(d *fleet.Definition) { d.Value = 0 },
		"requests[0].count":         func(d *fleet.Definition) { d.Requests[0].Count = 0 },
	}
	cases["requests[0].deadline "] = func(d *fleet.Definition) { d.Requests[0].Deadline = now.Add(15 * 24 * time.Hour) }
	for field, spoil := range cases {
		id, _ := pl.r.NewReservation(ctx, u)
		d := ok()
		spoil(&d)
		_, err := pl.r.Submit(ctx, u, id, d)
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.HasPrefix(clearhouse.ErrorMessage(err), strings.TrimSpace(field)+":") {
			t.Errorf("%s: %v", field, err)
		}
		v, _ := pl.r.Reservation(ctx, id)
		if v.Status != fleet.ReservationNew || len(v.Requests) != 0 {
			t.Errorf("%s: a refused definition changed the reservation: %+v", field, v)
		}
	}
	if b := pl.Balance("search"); b.Held != 0 {
		t.Fatalf("refused definitions held %s", b.Held)
	}
}

func TestQuotaThatReservationsNeedCannotBeOffered(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	pl := newPlanned(t, storetest.New(t))
	pl.reserve("member@ads", pl.job("us-east/cpu", 45, time.Hour, time.Hour, 3*time.Hour, 10))
	_, err := pl.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: exchangetest.Money(-1), Bundles: []exchange.Bundle{{"us-east/cpu": -20}}})
	if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE || !strings.Contains(clearhouse.ErrorMessage(err), "45 needed by its accepted reservations") {
		t.Fatalf("offering quota a reservation needs: %v", err)
	}
	if _, err := pl.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: exchangetest.Money(-1), Bundles: []exchange.Bundle{{"us-east/cpu": -15}}}); err != nil {
		t.Fatalf("offering the quota no reservation needs: %v", err)
	}
	// The offered quota is set aside: a new reservation pays for what it would have used.
	v := pl.reserve("member@ads", pl.job("us-east/cpu", 15, time.Hour, time.Hour, 2*time.Hour, 10))
	if v.Price != 15*12*10_000 {
		t.Fatalf("a reservation in offered quota cost %s, want it priced as shared capacity", v.Price)
	}
}

func TestACapacityDropReplansAndReportsWhatCannotBeHonoured(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		movable := pl.reserve("member@search", pl.job("eu-west/cpu", 60, time.Hour, 0, 3*time.Hour, 50))
		tight := pl.reserve("member@ml", pl.job("eu-west/cpu", 40, time.Hour, 0, time.Hour, 10))
		now := pl.Clock.Now()
		if !movable.Requests[0].StartAt.Equal(now) || !tight.Requests[0].StartAt.Equal(now) {
			t.Fatalf("both should start now: %v %v", movable.Requests[0].StartAt, tight.Requests[0].StartAt)
		}
		res, err := pl.r.Report(ctx, "eu-west", fleet.AgentReport{Capacity: []fleet.CapacityReport{{Pool: "eu-west/cpu", From: now, To: now.Add(time.Hour), Units: 30}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.AtRisk) != 1 || res.AtRisk[0] != tight.ID || len(res.Moved) != 1 || res.Moved[0] != movable.ID {
			t.Fatalf("report %+v: want %d moved and %d at risk", res, movable.ID, tight.ID)
		}
		moved, _ := pl.r.Reservation(ctx, movable.ID)
		if !moved.Requests[0].StartAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("the movable reservation starts %v, want an hour later", moved.Requests[0].StartAt)
		}
		failed, _ := pl.r.Reservation(ctx, tight.ID)
		if failed.Status != fleet.ReservationFailed || failed.Phase != "could not be honoured" || failed.Captured != 0 || failed.Released != failed.Price {
			t.Fatalf("the tight reservation: %+v", failed)
		}
		if b := pl.Balance("ml"); b.Held != 0 {
			t.Fatalf("ml still has %s held for a reservation that cannot be honoured", b.Held)
		}
		pl.trialBalanceIsZero()

		// A restart rebuilds the same plan: the capacity drop and the move are kept.
		restarted := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		a, err := restarted.Allocation(ctx, "eu-west")
		if err != nil || len(a.Running) != 0 || len(a.Waiting) != 1 || a.Waiting[0].Reservation != movable.ID {
			t.Fatalf("allocation after a restart: %+v %v", a, err)
		}
		pl.Clock.Advance(time.Hour)
		a, _ = restarted.Allocation(ctx, "eu-west")
		if len(a.Running) != 1 || a.Running[0].Units != 60 {
			t.Fatalf("an hour later: %+v", a)
		}
		// Capacity is back to 100 after the drop, and 60 are taken.
		q, err := restarted.Quote(ctx, pl.Users["member@ads"], pl.job("eu-west/cpu", 41, time.Hour, 0, time.Hour, 0))
		if err != nil || q.Feasible {
			t.Fatalf("41 cores beside the 60: %+v %v", q, err)
		}
	})
}

func TestQuotaWonAtAuctionIsFreeToReserve(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	pl := newPlanned(t, storetest.New(t))
	ctx := context.Background()
	d := pl.job("eu-west/cpu", 50, time.Hour, 2*time.Hour, 4*time.Hour, 100)
	before, err := pl.r.Quote(ctx, pl.Users["member@search"], d)
	if err != nil || !before.Feasible || before.Price != 50*12*10_000 {
		t.Fatalf("before the auction: %+v %v", before, err)
	}
	if _, err := pl.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(300), Bundles: []exchange.Bundle{{"eu-west/cpu": 50}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pl.M.Close(ctx, pl.AuctionID); err != nil {
		t.Fatal(err)
	}
	if pl.Holding("search", "eu-west/cpu") != 50 {
		t.Fatal("search did not win its quota")
	}
	v := pl.reserve("member@search", d)
	if v.Status != fleet.ReservationAccepted || v.Price != 0 {
		t.Fatalf("inside quota won at auction: %+v", v.Reservation)
	}
}

func TestAgentReportsKeepUsagePerPoolAndRefuseTheImpossible(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	pl := newPlanned(t, storetest.New(t))
	ctx := context.Background()
	now := pl.Clock.Now()
	d := fleet.Definition{Value: *exchangetest.Money(10), Requests: []fleet.RequestSpec{{Configuration: map[string]int64{"us-east/cpu": 2, "us-east/ram": 8},
		Count: 5, Duration: time.Hour, Arrival: now, Deadline: now.Add(2 * time.Hour)}}}
	v := pl.reserve("member@ads", d)
	usage := []fleet.UsageReport{{Reservation: v.ID, Pool: "us-east/cpu", Units: 9}, {Reservation: v.ID, Pool: "us-east/ram", Units: 33}}
	if _, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{Usage: usage}); err != nil {
		t.Fatal(err)
	}
	got, _ := pl.r.Reservation(ctx, v.ID)
	if u := got.Requests[0].UsageByPool(); u["us-east/cpu"] != 9 || u["us-east/ram"] != 33 {
		t.Fatalf("usage %v, want each pool's", u)
	}
	for name, rep := range map[string]fleet.AgentReport{
		"an end in the future":             {Ends: []fleet.EndReport{{Reservation: v.ID, At: now.Add(time.Hour)}}},
		"a pool it does not use":           {Usage: []fleet.UsageReport{{Reservation: v.ID, Pool: "us-east/gpu", Units: 1}}},
		"another cluster's":                {Ends: []fleet.EndReport{{Reservation: v.ID, At: now}}},
		"capacity of 2^63":                 {Capacity: []fleet.CapacityReport{{Pool: "us-east/cpu", From: now, To: now.Add(time.Hour), Units: 1<<63 - 1}}},
		"capacity a year ahead":            {Capacity: []fleet.CapacityReport{{Pool: "us-east/cpu", From: now, To: now.Add(365 * 24 * time.Hour), Units: 10}}},
		"too many rows":                    {Capacity: make([]fleet.CapacityReport, fleet.MaxReportRows+1)},
		"usage far beyond the reservation": {Usage: []fleet.UsageReport{{Reservation: v.ID, Pool: "us-east/cpu", Units: 1000}}},
	} {
		cluster := "us-east"
		if name == "another cluster's" {
			cluster = "eu-west"
		}
		if _, err := pl.r.Report(ctx, cluster, rep); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("%s: %v", name, err)
		}
	}
	if after, _ := pl.r.Reservation(ctx, v.ID); after.Status != fleet.ReservationAccepted || after.Requests[0].EndedAt != nil {
		t.Fatalf("a refused report changed the reservation: %+v", after.Reservation)
	}
	// Once it has ended, late reports about it are ignored.
	if err := pl.r.Cancel(ctx, pl.Users["member@ads"], v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{Usage: []fleet.UsageReport{{Reservation: v.ID, Pool: "us-east/cpu", Units: 1}}}); err != nil {
		t.Fatal(err)
	}
	if late, _ := pl.r.Reservation(ctx, v.ID); late.Requests[0].UsageByPool()["us-east/cpu"] != 9 {
		t.Fatal("a late report about a cancelled reservation was recorded")
	}
}

// Two servers on one database: each sees the other's reservations, and reading
// or charging does not move the plan's version (which would make the other rebuild).
func TestServersSharingADatabaseRebuildOnlyWhenThePlanChanged(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		other := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		version := func() int64 {
			var v int64
			db.Read.Raw("SELECT version FROM plan_state WHERE id = 1").Scan(&v)
			return v
		}
		mine := pl.reserve("member@search", pl.job("eu-west/cpu", 60, time.Hour, 0, time.Hour, 50))
		a, err := other.Allocation(ctx, "eu-west")
		if err != nil || len(a.Running) != 1 || a.Running[0].Reservation != mine.ID {
			t.Fatalf("the other server's allocation: %+v %v", a, err)
		}
		v := version()
		for range 3 {
			if _, err := pl.r.Allocation(ctx, "eu-west"); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Quote(ctx, pl.Users["member@ml"], pl.job("eu-west/cpu", 1, time.Hour, 0, time.Hour, 0)); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if version() != v {
			t.Fatalf("reads and ticks moved the plan's version from %d to %d", v, version())
		}
		// A reservation on the other server is seen here at once: 41 more cores do not fit.
		id, _ := other.NewReservation(ctx, pl.Users["member@ml"])
		if r, err := other.Submit(ctx, pl.Users["member@ml"], id, pl.job("eu-west/cpu", 30, time.Hour, 0, time.Hour, 50)); err != nil || r.Status != fleet.ReservationAccepted {
			t.Fatalf("the other server's reservation: %+v %v", r.Reservation, err)
		}
		if q, err := pl.r.Quote(ctx, pl.Users["member@ads"], pl.job("eu-west/cpu", 11, time.Hour, 0, time.Hour, 0)); err != nil || q.Feasible {
			t.Fatalf("this server overbooked past the other's reservation: %+v %v", q, err)
		}
	})
}

func TestModelsMatchSchema(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &fleet.Reservation{}, &fleet.ReservationRequest{}, &fleet.PricingPolicy{}, &fleet.CapacityChange{}, &fleet.PredictorObservation{}, &fleet.LostValue{})
	})
}

// One report naming several requests writes each its own usage, unused
// unit-slots, waiting tasks (the last count when one is named twice), end and
// capacity change, on both dialects (PostgreSQL takes each kind in one statement).
func TestAReportWritesWhatItSaysOfEachRequest(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		a := pl.reserve("member@ads", pl.job("us-east/cpu", 4, time.Hour, 0, 2*time.Hour, 10))
		b := pl.reserve("member@search", pl.job("us-east/cpu", 6, time.Hour, 0, 2*time.Hour, 10))
		c := pl.reserve("member@ml", pl.job("us-east/cpu", 2, time.Hour, 0, 2*time.Hour, 10))
		now := pl.Clock.Now()
		for _, v := range []fleet.ReservationView{a, b, c} {
			if v.Status != fleet.ReservationAccepted || !v.Requests[0].StartAt.Equal(now) {
				t.Fatalf("reservation %d: %s, starts %v; want accepted, now", v.ID, v.Status, v.Requests[0].StartAt)
			}
		}
		res, err := pl.r.Report(ctx, "us-east", fleet.AgentReport{
			Usage:    []fleet.UsageReport{{Reservation: a.ID, Pool: "us-east/cpu", Units: 1}, {Reservation: b.ID, Pool: "us-east/cpu", Units: 6}},
			Waiting:  []fleet.WaitingReport{{Reservation: a.ID, Tasks: 5}, {Reservation: b.ID, Tasks: 3}, {Reservation: a.ID, Tasks: 7}},
			Ends:     []fleet.EndReport{{Reservation: c.ID, At: now}},
			Capacity: []fleet.CapacityReport{{Pool: "us-east/cpu", From: now.Add(72 * time.Hour), To: now.Add(73 * time.Hour), Units: 90}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Ended) != 1 || res.Ended[0] != c.ID {
			t.Errorf("ended %v, want [%d]", res.Ended, c.ID)
		}
		get := func(id int64) fleet.ReservationRequest {
			t.Helper()
			v, err := pl.r.Reservation(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return v.Requests[0]
		}
		for _, w := range []struct {
			id            int64
			used, waiting int64
			unused        bool // the plan holds unit-slots it did not use
		}{{a.ID, 1, 7, true}, {b.ID, 6, 3, false}} {
			q := get(w.id)
			if q.UsageByPool()["us-east/cpu"] != w.used || q.WaitingTasks == nil || *q.WaitingTasks != w.waiting || q.ReportedAt == nil || !q.ReportedAt.Equal(now) {
				t.Errorf("reservation %d: usage %v, waiting %v, reported %v; want %d, %d, %v", w.id, q.UsageByPool(), q.WaitingTasks, q.ReportedAt, w.used, w.waiting, now)
			}
			if (q.Unused > 0) != w.unused || q.EndedAt != nil {
				t.Errorf("reservation %d: unused %d (want some: %v), ended %v", w.id, q.Unused, w.unused, q.EndedAt)
			}
		}
		if q := get(c.ID); q.EndedAt == nil || !q.EndedAt.Equal(now) || q.Usage != nil || q.WaitingTasks != nil {
			t.Errorf("ended reservation %d: ended %v, usage %v, waiting %v", c.ID, q.EndedAt, q.Usage, q.WaitingTasks)
		}
		var changes []fleet.CapacityChange
		if err := db.Read.Find(&changes).Error; err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || changes[0].PoolID != "us-east/cpu" || changes[0].Units != 90 || !changes[0].FromAt.Equal(now.Add(72*time.Hour)) ||
			!changes[0].ToAt.Equal(now.Add(73*time.Hour)) || !changes[0].ReportedAt.Equal(now) {
			t.Errorf("capacity changes %+v", changes)
		}
		// A restart rebuilds the same plan: a's unused capacity is back in the slot.
		fresh := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		want, err := pl.r.PoolLoad(ctx, "us-east/cpu", now, now.Add(time.Hour), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fresh.PoolLoad(ctx, "us-east/cpu", now, now.Add(time.Hour), time.Hour)
		if err != nil || len(got) != 1 || got[0] != want[0] {
			t.Errorf("the rebuilt plan's load %+v (%v), the writer's %+v", got, err, want)
		}
		pl.trialBalanceIsZero()
	})
}
