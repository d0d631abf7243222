package fleet

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	"pgregory.net/rapid"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// replicaMarket is one cluster with two small pools and three teams holding quota
// of its cpu, and the plan as two servers (a, b) sharing the database see it.
type replicaMarket struct {
	db    *store.DB
	clock *storetest.Clock
	l     *ledger.Ledger
	a, b  *Reservations
	users []identity.User
	teams []string
}

func newReplicaMarket(t testing.TB, db *store.DB) *replicaMarket {
	t.Helper()
	ctx := context.Background()
	clock := storetest.NewClock(storetest.Epoch)
	l := ledger.New(db, clock.Now)
	m := exchange.NewMarket(db, l, clock.Now)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	must(err)
	_, err = m.AddCluster(ctx, exchange.Cluster{ID: "cc"})
	must(err)
	for res, capacity := range map[string]int64{"cpu": 40, "ram": 60} {
		_, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: "cc", Resource: res, Unit: "unit", Capacity: capacity,
			UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"})
		must(err)
	}
	rm := &replicaMarket{db: db, clock: clock, l: l}
	id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
	for i := range 3 {
		team := fmt.Sprintf("t%d", i)
		_, err := m.AddTeam(ctx, exchange.NewTeam{ID: team, Budget: 1e6 * ledger.Dollar})
		must(err)
		u, err := id.AddUser(ctx, identity.NewUser{Email: team + "@x.io", Role: identity.RoleMember, TeamID: team})
		must(err)
		must(m.GrantQuota(ctx, team, "cc/cpu", int64(4+4*i)))
		rm.users, rm.teams = append(rm.users, u), append(rm.teams, team)
	}
	rm.a = NewReservations(db, l, clock.Now, DefaultPlanConfig)
	rm.b = NewReservations(db, l, clock.Now, DefaultPlanConfig)
	return rm
}

// planShot is a plan as seen from the current slot on, in wall-clock slots so
// plans with different origins compare: each pool's capacity, shared free
// capacity and free capacity in all (shared plus every team's free quota), each
// team's free quota, and every request that still holds capacity, from the
// current slot to its end.
type planShot struct {
	Capacity, Shared, Total map[string][]int64
	Own                     map[string][]int64 // team/pool
	Requests                map[string][2]time.Time
	Unused                  map[string]int64
}

// shot reads s's plan after bringing it up to date, over span from the current slot.
func shot(t testing.TB, s *Reservations, teams []string, span time.Duration) planShot {
	t.Helper()
	out := planShot{Capacity: map[string][]int64{}, Shared: map[string][]int64{}, Total: map[string][]int64{},
		Own: map[string][]int64{}, Requests: map[string][2]time.Time{}, Unused: map[string]int64{}}
	err := s.read(context.Background(), func(p *plan, now time.Time) error {
		from := p.slot(now)
		to := from + scheduler.Slot(span/p.slotLen)
		for _, pool := range slices.Sorted(maps.Keys(p.pools)) {
			for k := from; k < to; k++ {
				out.Capacity[pool] = append(out.Capacity[pool], p.eng.Capacity(pool, k))
				shared := p.eng.Free(pool, k, k+1)
				total := shared
				for _, team := range teams {
					own := p.eng.Own(team, pool, k, k+1, nil)[0]
					out.Own[team+"/"+pool] = append(out.Own[team+"/"+pool], own)
					total += own
				}
				out.Shared[pool] = append(out.Shared[pool], shared)
				out.Total[pool] = append(out.Total[pool], total)
			}
		}
		for _, r := range p.eng.Reservations() {
			for i := range r.Requests {
				end := r.End(i)
				if end <= from {
					continue
				}
				key := fmt.Sprintf("%d/%d", r.ID, i)
				out.Requests[key] = [2]time.Time{p.at(max(r.Starts[i], from)), p.at(end)}
				if r.Unused != nil && r.Unused[i] != 0 {
					out.Unused[key] = r.Unused[i]
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// step is one random thing that happens to the plan: a reservation, a cancel,
// an agent's report (usage, an end, an early start, a capacity change) taken by
// server a or b, or time passing.
func (rm *replicaMarket) step(t *rapid.T) {
	ctx := context.Background()
	srv := []*Reservations{rm.a, rm.b}[rapid.IntRange(0, 1).Draw(t, "server")]
	now := rm.clock.Now()
	switch rapid.IntRange(0, 9).Draw(t, "action") {
	case 0, 1, 2: // a reservation
		u := rm.users[rapid.IntRange(0, len(rm.users)-1).Draw(t, "team")]
		arrival := now.Add(time.Duration(rapid.IntRange(-2, 24).Draw(t, "arrival")) * 10 * time.Minute)
		dur := time.Duration(rapid.IntRange(1, 12).Draw(t, "duration")) * 5 * time.Minute
		config := map[string]int64{"cc/cpu": int64(rapid.IntRange(1, 4).Draw(t, "cpu"))}
		if rapid.Bool().Draw(t, "ram") {
			config["cc/ram"] = int64(rapid.IntRange(1, 6).Draw(t, "ram units"))
		}
		d := Definition{Value: 1000 * ledger.Dollar, Requests: []RequestSpec{{Configuration: config,
			Count: int64(rapid.IntRange(1, 5).Draw(t, "count")), Duration: dur, Arrival: arrival,
			Deadline: arrival.Add(dur + time.Duration(rapid.IntRange(0, 24).Draw(t, "slack"))*10*time.Minute)}}}
		if _, err := srv.Reserve(ctx, u, d); err != nil && d.Validate(now, DefaultPlanConfig.Slot, DefaultPlanConfig.Horizon, true) == nil {
			t.Fatalf("reserve: %v", err)
		}
	case 3: // a cancel
		vs, err := srv.Reservations(ctx, ReservationFilter{Statuses: []ReservationStatus{ReservationAccepted}})
		if err != nil || len(vs) == 0 {
			return
		}
		v := vs[rapid.IntRange(0, len(vs)-1).Draw(t, "cancelled")]
		for _, u := range rm.users {
			if u.TeamID == v.TeamID {
				if err := srv.Cancel(ctx, u, v.ID); err != nil {
					t.Fatalf("cancel %d: %v", v.ID, err)
				}
			}
		}
	case 4, 5, 6: // an agent's report about the jobs it runs
		alloc, err := srv.Allocation(ctx, "cc")
		if err != nil {
			t.Fatal(err)
		}
		var rep AgentReport
		for _, a := range alloc.Running {
			switch rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("running %d/%d", a.Reservation, a.Request)) {
			case 1:
				for pool, per := range a.Configuration {
					rep.Usage = append(rep.Usage, UsageReport{Reservation: a.Reservation, Request: a.Request, Pool: pool,
						Units: int64(rapid.IntRange(0, int(per*a.Count)).Draw(t, "used"))})
				}
			case 2:
				rep.Ends = append(rep.Ends, EndReport{Reservation: a.Reservation, Request: a.Request, At: now, Failed: rapid.Bool().Draw(t, "failed")})
			}
		}
		for _, a := range alloc.Waiting {
			if a.MayStartNow && rapid.Bool().Draw(t, fmt.Sprintf("start %d/%d", a.Reservation, a.Request)) {
				rep.Starts = append(rep.Starts, StartReport{Reservation: a.Reservation, Request: a.Request, At: now})
			}
		}
		if _, err := srv.Report(ctx, "cc", rep); err != nil {
			t.Fatalf("report %+v: %v", rep, err)
		}
	case 7: // capacity changes
		from := now.Add(time.Duration(rapid.IntRange(0, 36).Draw(t, "capacity from")) * 10 * time.Minute)
		rep := AgentReport{Capacity: []CapacityReport{{Pool: rapid.SampledFrom([]string{"cc/cpu", "cc/ram"}).Draw(t, "pool"),
			From: from, To: from.Add(time.Duration(rapid.IntRange(1, 36).Draw(t, "capacity for")) * 10 * time.Minute),
			Units: int64(rapid.IntRange(10, 70).Draw(t, "units"))}}}
		if _, err := srv.Report(ctx, "cc", rep); err != nil {
			t.Fatalf("report %+v: %v", rep, err)
		}
	default: // time passes
		rm.clock.Advance(time.Duration(rapid.IntRange(1, 40).Draw(t, "minutes")) * time.Minute)
	}
}

// After any sequence of reservations, cancels, agents' reports and time, taken by
// either of two servers, each server's plan (brought up to date by replaying the
// other's writes) is the plan the other holds, exactly, and the plan a server
// rebuilt from the database would hold: the same requests in the same slots and
// the same capacity, free in all, in every slot from the next (see fromNextSlot).
// (How a reservation's units split
// between its team's quota and shared capacity depends on the order reservations
// were placed in, which a rebuild does not keep after an early end or a
// re-planning; the writer's own plan differs from a rebuild there too.)
func TestReplayedPlanEqualsRebuild(t *testing.T) {
	t.Parallel() // its own databases and clock
	const span = 12 * time.Hour
	// The SQLite and PostgreSQL halves run beside each other, so the count is
	// checked when both have ended.
	var replayed atomic.Int64
	t.Cleanup(func() {
		if replayed.Load() == 0 {
			t.Error("no server ever replayed another's write: the test did not exercise the incremental path")
		}
	})
	storetest.Each(t, func(t *testing.T, first *store.DB) {
		t.Parallel() // the halves share only the count
		// Each run starts on a freshly migrated database: on SQLite a new copy of
		// the migrated file; on PostgreSQL first, rewound to its state as migrated
		// (a new schema ran every migration's DDL, most of the test's time there).
		var rewind func()
		if first.Dialect == store.Postgres {
			rewind = storetest.Rewinder(t, first)
		}
		rapid.Check(t, func(rt *rapid.T) {
			run := &scopedTB{TB: t} // the run's database, dropped or rewound after it
			defer run.cleanup()
			var db *store.DB
			if first.Dialect == store.Postgres {
				db = first
				run.Cleanup(rewind)
			} else {
				db = storetest.New(run)
			}
			rm := newReplicaMarket(t, db)
			n := rapid.IntRange(1, 25).Draw(rt, "steps")
			for range n {
				rm.step(rt)
				a, b := shot(t, rm.a, rm.teams, span), shot(t, rm.b, rm.teams, span)
				if !reflect.DeepEqual(a, b) {
					rt.Fatalf("the two servers' plans differ:\na %+v\nb %+v", a, b)
				}
			}
			rebuilt := NewReservations(db, rm.l, rm.clock.Now, DefaultPlanConfig)
			c := shot(t, rebuilt, rm.teams, span)
			a := shot(t, rm.a, rm.teams, span)
			a.fromNextSlot(rm.clock.Now())
			c.fromNextSlot(rm.clock.Now())
			for _, diff := range []struct {
				what string
				x, y any
			}{{"capacity", a.Capacity, c.Capacity}, {"requests", a.Requests, c.Requests}, {"unused", a.Unused, c.Unused}, {"free in all", a.Total, c.Total}} {
				if !reflect.DeepEqual(diff.x, diff.y) {
					rt.Fatalf("%s (now %v): the replayed plan holds\n%v\na rebuild holds\n%v", diff.what, rm.clock.Now(), brief(diff.x), brief(diff.y))
				}
			}
			replayed.Add(rm.a.Updates().Replayed + rm.b.Updates().Replayed)
		})
	})
}

// fromNextSlot drops the current slot from a shot: a reservation cancelled or
// ended early in it holds it to its end, which a rebuild restores only where
// the slot's capacity still admits it (not when capacity fell below the teams'
// quotas meanwhile).
func (s *planShot) fromNextSlot(now time.Time) {
	for _, m := range []map[string][]int64{s.Capacity, s.Shared, s.Total, s.Own} {
		for k, v := range m {
			m[k] = v[1:]
		}
	}
	// The next slot starts after the current one, also when now is on a slot's
	// boundary (ceilTime would give now itself, the current slot's start).
	next := now.Truncate(DefaultPlanConfig.Slot).Add(DefaultPlanConfig.Slot)
	for k, r := range s.Requests {
		if !r[1].After(next) {
			delete(s.Requests, k)
			delete(s.Unused, k)
		}
	}
}

// brief cuts each slot series to its first 12 slots, for messages.
func brief(x any) any {
	m, ok := x.(map[string][]int64)
	if !ok {
		return x
	}
	out := map[string][]int64{}
	for k, v := range m {
		out[k] = v[:min(len(v), 12)]
	}
	return out
}

// scopedTB is t with its own cleanups, run when one rapid run ends rather than
// when the whole test does.
type scopedTB struct {
	testing.TB
	cleanups []func()
}

func (s *scopedTB) Cleanup(fn func()) { s.cleanups = append(s.cleanups, fn) }

func (s *scopedTB) cleanup() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// Three servers sharing one database take reservations, cancels and agents'
// reports from many goroutines at once; afterwards each server's plan, brought up
// to date by replay, is exactly the others' and, from the next slot on, what a
// rebuild holds.
func TestConcurrentWritersReplayToOnePlan(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		rm := newReplicaMarket(t, db)
		servers := []*Reservations{rm.a, rm.b}
		other := storetest.Another(t, db)
		servers = append(servers, NewReservations(other, ledger.New(other, rm.clock.Now), rm.clock.Now, DefaultPlanConfig))
		ctx := context.Background()
		const workers, each = 8, 12
		errs := make(chan error, workers*each)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				srv, u := servers[w%len(servers)], rm.users[w%len(rm.users)]
				for i := range each {
					now := rm.clock.Now()
					switch i % 3 {
					case 0, 1:
						arrival := now.Add(time.Duration((w+i)%6) * 10 * time.Minute)
						d := Definition{Value: 1000 * ledger.Dollar, Requests: []RequestSpec{{Configuration: map[string]int64{"cc/cpu": 1, "cc/ram": int64(1 + i%3)},
							Count: int64(1 + w%3), Duration: time.Duration(1+i%4) * 5 * time.Minute, Arrival: arrival, Deadline: arrival.Add(2 * time.Hour)}}}
						if _, err := srv.Reserve(ctx, u, d); err != nil {
							errs <- fmt.Errorf("reserve: %w", err)
						}
					case 2:
						alloc, err := srv.Allocation(ctx, "cc")
						if err != nil {
							errs <- err
							continue
						}
						var rep AgentReport
						for k, a := range alloc.Running {
							if k%2 == 0 {
								rep.Usage = append(rep.Usage, UsageReport{Reservation: a.Reservation, Request: a.Request, Pool: "cc/cpu", Units: 0})
							}
						}
						if w == 0 {
							rep.Capacity = []CapacityReport{{Pool: "cc/ram", From: now.Add(time.Hour), To: now.Add(2 * time.Hour), Units: int64(30 + i)}}
						}
						if _, err := srv.Report(ctx, "cc", rep); err != nil && clearhouse.ErrorCode(err) != clearhouse.EINVALID {
							errs <- fmt.Errorf("report: %w", err)
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		rm.clock.Advance(time.Minute)
		first := shot(t, servers[0], rm.teams, 12*time.Hour)
		for i, s := range servers[1:] {
			if got := shot(t, s, rm.teams, 12*time.Hour); !reflect.DeepEqual(first, got) {
				t.Fatalf("server %d's plan differs from server 0's:\n%v\n%v", i+1, brief(got.Total), brief(first.Total))
			}
		}
		rebuilt := shot(t, NewReservations(db, rm.l, rm.clock.Now, DefaultPlanConfig), rm.teams, 12*time.Hour)
		first.fromNextSlot(rm.clock.Now())
		rebuilt.fromNextSlot(rm.clock.Now())
		if !reflect.DeepEqual(first.Total, rebuilt.Total) || !reflect.DeepEqual(first.Requests, rebuilt.Requests) {
			t.Fatalf("the replayed plans differ from a rebuild:\n%v %v\n%v %v", brief(first.Total), first.Requests, brief(rebuilt.Total), rebuilt.Requests)
		}
		var replayed int64
		for _, s := range servers {
			replayed += s.Updates().Replayed
		}
		var accepted int64
		db.Read.Model(&Reservation{}).Where("status = ?", ReservationAccepted).Count(&accepted)
		if replayed == 0 || accepted == 0 {
			t.Fatalf("%d catch-ups by replay, %d reservations accepted: the test exercised nothing", replayed, accepted)
		}
		t.Logf("%d reservations accepted; %d catch-ups by replay", accepted, replayed)
	})
}

// Follow builds a server's plan on its first call and then replays what another
// server wrote, so that the read after it has nothing left to do.
func TestFollowBuildsThenReplaysAnotherServersWrites(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		rm := newReplicaMarket(t, db)
		if err := rm.b.Follow(ctx); err != nil {
			t.Fatal(err)
		}
		if u := rm.b.Updates(); u.Rebuilt != 1 || u.Replayed != 0 {
			t.Fatalf("a server's first Follow: %+v, want one rebuild", u)
		}
		now := rm.clock.Now()
		d := Definition{Value: 1000 * ledger.Dollar, Requests: []RequestSpec{{Configuration: map[string]int64{"cc/cpu": 2},
			Count: 1, Duration: time.Hour, Arrival: now, Deadline: now.Add(3 * time.Hour)}}}
		if _, err := rm.a.Reserve(ctx, rm.users[0], d); err != nil {
			t.Fatal(err)
		}
		if err := rm.b.Follow(ctx); err != nil {
			t.Fatal(err)
		}
		if u := rm.b.Updates(); u.Rebuilt != 1 || u.Replayed != 1 {
			t.Fatalf("after another server's reservation: %+v, want it replayed by Follow", u)
		}
		if _, err := rm.b.PoolLoad(ctx, "cc/cpu", now, now.Add(time.Hour), time.Hour); err != nil {
			t.Fatal(err)
		}
		if u := rm.b.Updates(); u.Rebuilt != 1 || u.Replayed != 1 {
			t.Fatalf("a read after Follow: %+v, want nothing left to replay", u)
		}
	})
}
