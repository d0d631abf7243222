package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"pgregory.net/rapid"
)

// violations runs every package's invariant checks.
func (pl *planned) violations() []ledger.Violation {
	vs := pl.Violations()
	more, err := pl.r.Verify(context.Background())
	if err != nil {
		pl.T.Fatal(err)
	}
	return append(vs, more...)
}

// Random interleavings of placing bids and offers, withdrawing, approving and
// rejecting, reserving and cancelling, letting time pass (charging reservations)
// and closing auctions keep every invariant of the ledger, the market and the
// reservations after every step, on SQLite and PostgreSQL; every refusal is a
// domain error, never an internal one.
func TestRandomInterleavingsKeepEveryInvariant(t *testing.T) {
	t.Parallel() // its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		t.Parallel() // the SQLite and PostgreSQL halves share nothing either
		ctx := context.Background()
		pl := newPlanned(t, db)
		for _, team := range []string{"search", "ads", "ml"} { // enough budget for long runs
			if _, err := pl.M.Grant(ctx, "top-up/"+team, team, 1_000_000*ledger.Dollar, "test"); err != nil {
				t.Fatal(err)
			}
		}
		pools := []string{"us-east/cpu", "us-east/ram", "eu-west/cpu"}
		rapid.Check(t, func(rt *rapid.T) {
			var mine, awaiting []int64 // orders placed in this run, and those waiting for an owner
			var reservations []int64
			refused := func(what string, err error) {
				if err == nil {
					return
				}
				switch clearhouse.ErrorCode(err) {
				case clearhouse.ECONFLICT, clearhouse.EUNPROCESSABLE, clearhouse.ENOTFOUND:
				default:
					rt.Fatalf("%s: %v (%s)", what, err, clearhouse.ErrorCode(err))
				}
			}
			ensureOpen := func() {
				if a, ok, err := pl.M.CurrentAuction(ctx); err != nil {
					rt.Fatal(err)
				} else if ok && a.Status == exchange.AuctionOpen && pl.Clock.Now().Before(a.ClosesAt) {
					return
				}
				now := pl.Clock.Now()
				if _, err := pl.M.ScheduleAuction(ctx, now, now.Add(time.Hour), auction.DefaultParams); err != nil {
					refused("schedule", err) // an unfinished auction's window overlaps
				}
				// The market's job: it settles an auction whose window ended before
				// it opens the next.
				if _, err := pl.M.Tick(ctx, exchange.Cadence{PreviewEvery: time.Minute}); err != nil {
					rt.Fatal(err)
				}
			}
			ensureOpen()
			steps := rapid.IntRange(1, 20).Draw(rt, "steps")
			for step := range steps {
				team := rapid.SampledFrom([]string{"search", "ads", "ml"}).Draw(rt, "team")
				who := rapid.SampledFrom([]string{"member@", "owner@"}).Draw(rt, "role") + team
				switch op := rapid.IntRange(0, 8).Draw(rt, "op"); op {
				case 0, 1: // a bid, in one pool or either of two
					b := exchange.Bundle{rapid.SampledFrom(pools).Draw(rt, "pool"): rapid.Int64Range(1, 20).Draw(rt, "q")}
					spec := exchange.OrderSpec{Team: team, Bundles: []exchange.Bundle{b}, Limit: exchangetest.Money(float64(rapid.IntRange(1, 400).Draw(rt, "limit")))}
					if rapid.Bool().Draw(rt, "xor") {
						spec.Bundles = append(spec.Bundles, exchange.Bundle{"eu-west/cpu": b[pools[0]] + 1})
					}
					if rapid.IntRange(0, 3).Draw(rt, "keyed") == 0 {
						spec.Key = fmt.Sprintf("k%d", rapid.IntRange(0, 3).Draw(rt, "key"))
					}
					o, err := pl.Order(who, spec)
					refused("place", err)
					if err == nil {
						mine = append(mine, o.ID)
						if o.Status == exchange.OrderAwaitingApproval {
							awaiting = append(awaiting, o.ID)
						}
					}
				case 2: // an offer of quota ads holds
					spec := exchange.OrderSpec{Team: "ads", Bundles: []exchange.Bundle{{"us-east/cpu": -rapid.Int64Range(1, 15).Draw(rt, "sell")}},
						Limit: exchangetest.Money(-float64(rapid.IntRange(0, 5).Draw(rt, "ask")))}
					o, err := pl.Order("member@ads", spec)
					refused("offer", err)
					if err == nil {
						mine = append(mine, o.ID)
					}
				case 3: // withdraw one of this run's orders (perhaps another team's: refused)
					if len(mine) > 0 {
						id := rapid.SampledFrom(mine).Draw(rt, "order")
						refused("withdraw", pl.M.WithdrawOrder(ctx, pl.Users[who], id))
					}
				case 4: // an owner decides (perhaps another team's owner: refused)
					if len(awaiting) > 0 {
						id := rapid.SampledFrom(awaiting).Draw(rt, "order")
						refused("decide", pl.M.DecideOrder(ctx, pl.Users["owner@"+team], id, rapid.Bool().Draw(rt, "approve")))
					}
				case 5: // reserve capacity
					pool := rapid.SampledFrom([]string{"us-east/cpu", "eu-west/cpu"}).Draw(rt, "rpool")
					d := pl.job(pool, rapid.Int64Range(1, 8).Draw(rt, "count"), time.Duration(rapid.IntRange(1, 4).Draw(rt, "hours"))*time.Hour,
						0, 8*time.Hour, float64(rapid.IntRange(1, 80).Draw(rt, "value")))
					id, err := pl.r.NewReservation(ctx, pl.Users[who])
					refused("new reservation", err)
					if err == nil {
						_, err = pl.r.Submit(ctx, pl.Users[who], id, d)
						refused("reserve", err)
						reservations = append(reservations, id)
					}
				case 6: // cancel a reservation
					if len(reservations) > 0 {
						refused("cancel", pl.r.Cancel(ctx, pl.Users[who], rapid.SampledFrom(reservations).Draw(rt, "reservation")))
					}
				case 7: // time passes: reservations are charged
					pl.Clock.Advance(time.Duration(rapid.IntRange(1, 40).Draw(rt, "minutes")) * time.Minute)
					if _, err := pl.r.Tick(ctx); err != nil {
						rt.Fatalf("tick: %v", err)
					}
				case 8: // the auction closes, and the next opens
					if a, ok, err := pl.M.CurrentAuction(ctx); err == nil && ok && a.Status != exchange.AuctionScheduled {
						if _, err := pl.M.Close(ctx, a.ID); err != nil {
							rt.Fatalf("close %d: %v", a.ID, err)
						}
					}
					ensureOpen()
				}
				if vs := pl.violations(); len(vs) > 0 {
					rt.Fatalf("after step %d: %v", step, vs)
				}
			}
		})
	})
}
