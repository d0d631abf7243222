package fleet_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/scheduler"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// learnSome teaches the predictors of us-east/ram (Basic-Econ with the seasonal
// predictor, the default) a day of demand: every two hours, bids for 300 of its 400
// GiB for an hour in the next three, worth far more than their price, so later
// windows like them are priced above the floor.
func (pl *planned) learnSome(t *testing.T, r *fleet.Reservations) {
	t.Helper()
	ctx := context.Background()
	for range 12 {
		id, err := r.NewReservation(ctx, pl.Users["member@ml"])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Submit(ctx, pl.Users["member@ml"], id, pl.job("us-east/ram", 300, time.Hour, time.Hour, 4*time.Hour, 100)); err != nil {
			t.Fatal(err)
		}
		pl.Clock.Advance(2 * time.Hour)
		if _, err := r.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// quoteRAM is what server r asks now for 200 GiB of us-east/ram for an hour in the
// next three.
func (pl *planned) quoteRAM(t *testing.T, r *fleet.Reservations) ledger.Money {
	t.Helper()
	return pl.quoteRAMUnits(t, r, 200)
}

func (pl *planned) quoteRAMUnits(t *testing.T, r *fleet.Reservations, units int64) ledger.Money {
	t.Helper()
	q, err := r.Quote(context.Background(), pl.Users["member@ml"], pl.job("us-east/ram", units, time.Hour, time.Hour, 4*time.Hour, 0))
	if err != nil || !q.Feasible {
		t.Fatalf("quote: %+v %v", q, err)
	}
	return q.Price
}

func TestServersSharingADatabaseLearnAlikeAndQuoteIdenticalPrices(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		other := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		before := pl.quoteRAM(t, other)
		// Every bid goes through this server; the other only reads.
		pl.learnSome(t, pl.r)
		mine, theirs := pl.quoteRAM(t, pl.r), pl.quoteRAM(t, other)
		if mine <= before {
			t.Fatalf("learning a day of demand did not raise the quote: %s before, %s after", before, mine)
		}
		if mine != theirs {
			t.Fatalf("servers on one database quote differently: %s here, %s on the other", mine, theirs)
		}
		// Now the other server takes the bids and runs the tick (what reservations used).
		pl.learnSome(t, other)
		if a, b := pl.quoteRAM(t, pl.r), pl.quoteRAM(t, other); a != b {
			t.Fatalf("after the other server learned: %s here, %s there", a, b)
		}
	})
}

func TestLearnedPredictorsSurviveARestart(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		fresh := pl.quoteRAM(t, pl.r)
		pl.learnSome(t, pl.r)
		learned := pl.quoteRAM(t, pl.r)
		t.Logf("quote fresh %s, learned %s", fresh, learned)
		if learned <= fresh {
			t.Fatalf("learning did not raise the quote: %s fresh, %s learned", fresh, learned)
		}
		restarted := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		if got := pl.quoteRAM(t, restarted); got != learned {
			t.Fatalf("after a restart the quote is %s, before it %s", got, learned)
		}
		// A day on, the tick folds the log into the snapshot; a server restarted
		// after that quotes as the one that kept running.
		pl.Clock.Advance(25 * time.Hour)
		if _, err := pl.r.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		var log struct{ Upto, Folded, Left int64 }
		if err := db.Read.Raw(`SELECT upto, (SELECT COUNT(*) FROM predictor_observations WHERE id <= upto) AS folded,
			(SELECT COUNT(*) FROM predictor_observations) AS left FROM predictor_state`).Scan(&log).Error; err != nil {
			t.Fatal(err)
		}
		if log.Upto == 0 || log.Folded != 0 || log.Left > 1 {
			t.Fatalf("after the daily fold: snapshot up to observation %d, %d observations folded but kept, %d left (the tick's own is 1)",
				log.Upto, log.Folded, log.Left)
		}
		running := pl.quoteRAM(t, pl.r)
		again := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		if got := pl.quoteRAM(t, again); got != running {
			t.Fatalf("restarted from the snapshot: %s, the running server: %s", got, running)
		}
		// Both keep learning alike from the snapshot on.
		pl.learnSome(t, again)
		if a, b := pl.quoteRAM(t, pl.r), pl.quoteRAM(t, again); a != b {
			t.Fatalf("after learning from the snapshot: %s and %s", a, b)
		}
	})
}

// The LP-based predictor is refit by the tick, never in a request, and every server
// sharing the database loads the same solved model.
func TestTheLPPredictorIsRefitByTheTickAndShared(t *testing.T) {
	t.Parallel() // no state shared with other tests: its own databases and clock
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		pl := newPlanned(t, db)
		ctx := context.Background()
		if _, err := pl.r.SetPolicy(ctx, fleet.PricingPolicy{PoolID: "us-east/ram", Algorithm: "econ", Predictor: "fractional", UnitPrice: 347}); err != nil {
			t.Fatal(err)
		}
		other := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		pl.learnSome(t, pl.r)
		// The tick refitted it and folded the log: the snapshot holds the solved model.
		var raw string
		if err := db.Read.Raw("SELECT state FROM predictor_state WHERE id = 1").Scan(&raw).Error; err != nil {
			t.Fatal(err)
		}
		var st struct{ Fractional scheduler.PredictorState }
		if err := json.Unmarshal([]byte(raw), &st); err != nil || st.Fractional.Fractional == nil {
			t.Fatalf("snapshot: %v", err)
		}
		if f := st.Fractional.Fractional; !f.Refitted || f.RefitN == 0 || f.Model == nil || f.Inline {
			t.Fatalf("the LP predictor in the snapshot: refitted %v on %d bids, model %v, inline %v", f.Refitted, f.RefitN, f.Model != nil, f.Inline)
		}
		mine, theirs := pl.quoteRAMUnits(t, pl.r, 390), pl.quoteRAMUnits(t, other, 390)
		if mine != theirs {
			t.Fatalf("servers quote differently with the LP predictor: %s and %s", mine, theirs)
		}
		restarted := fleet.NewReservations(db, pl.L, pl.Clock.Now, fleet.DefaultPlanConfig)
		if got := pl.quoteRAMUnits(t, restarted, 390); got != mine {
			t.Fatalf("after a restart: %s, before %s", got, mine)
		}
	})
}
