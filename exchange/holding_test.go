package exchange_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A pool's holding charge is off by default and charges nothing; once set it
// applies from the next month; many concurrent runs, from two servers' services on
// one database, charge each (pool, team, month) once, team to treasury, with a memo
// a person reads; a rerun charges nothing; a team that cannot pay is named and not
// charged; and every invariant holds.
func TestHoldingChargeIsMadeOncePerPoolTeamAndMonth(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		before := mk.Balance("ads").Posted

		// Off by default: nothing is charged.
		run, err := mk.M.ChargeHolding(ctx, mk.Clock.Now())
		if err != nil || len(run.Charged) != 0 || run.Already != 0 {
			t.Fatalf("with no holding charge set: %+v, %v", run, err)
		}
		// Bad rates change nothing.
		_, err = mk.M.SetHoldingCharge(ctx, "us-east/cpu", -1)
		wantCode(t, err, clearhouse.EINVALID)
		_, err = mk.M.SetHoldingCharge(ctx, "us-east/cpu", exchange.MaxHoldingRate+1)
		wantCode(t, err, clearhouse.EINVALID)
		_, err = mk.M.SetHoldingCharge(ctx, "nowhere/cpu", ledger.Dollar)
		wantCode(t, err, clearhouse.ENOTFOUND)
		if rates, err := mk.M.HoldingRates(ctx); err != nil || len(rates) != 0 {
			t.Fatalf("rates after refused writes: %v, %v", rates, err)
		}

		r, err := mk.M.SetHoldingCharge(ctx, "us-east/cpu", ledger.Dollar/10)
		if err != nil {
			t.Fatal(err)
		}
		april := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
		if !r.AppliesFrom.Equal(april) {
			t.Fatalf("a rate set in March applies from %v, want April", r.AppliesFrom)
		}
		// March, when it was set, is not charged; April has not begun.
		if run, err := mk.M.ChargeHolding(ctx, mk.Clock.Now()); err != nil || len(run.Charged) != 0 {
			t.Fatalf("the month the rate was set: %+v, %v", run, err)
		}
		_, err = mk.M.ChargeHolding(ctx, april)
		wantCode(t, err, clearhouse.EINVALID)

		// search holds 10 GPUs of a pool added after the auction opened, at a rate
		// it cannot pay ($2,000 > $1,000).
		if _, err := mk.M.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "gpu", Unit: "GPU", Capacity: 10, UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"}); err != nil {
			t.Fatal(err)
		}
		if err := mk.M.GrantQuota(ctx, "search", "us-east/gpu", 10); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.SetHoldingCharge(ctx, "us-east/gpu", 200*ledger.Dollar); err != nil {
			t.Fatal(err)
		}

		mk.Clock.Set(april.Add(30 * time.Minute))
		other := storetest.Another(t, db)
		markets := []*exchange.Market{mk.M, exchange.NewMarket(other, ledger.New(other, mk.Clock.Now), mk.Clock.Now)}
		var mu sync.Mutex
		var charged []exchange.HoldingCharge
		short := 0
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run, err := markets[i%2].ChargeHolding(ctx, mk.Clock.Now())
				if err != nil {
					t.Errorf("run %d: %v", i, err)
					return
				}
				mu.Lock()
				charged = append(charged, run.Charged...)
				short += len(run.Shortfall)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(charged) != 1 {
			t.Fatalf("8 concurrent runs made %d charges, want 1: %+v", len(charged), charged)
		}
		c := charged[0]
		if c.PoolID != "us-east/cpu" || c.TeamID != "ads" || c.Month != "2026-04" || c.Units != 60 || c.Amount != 6*ledger.Dollar {
			t.Fatalf("charge %+v, want ads 60 cores x $0.10 = $6 for 2026-04", c)
		}
		if short != 8 {
			t.Errorf("search's shortfall was reported %d times, want by each of the 8 runs", short)
		}
		if got := mk.Balance("ads").Posted; got != before-6*ledger.Dollar {
			t.Fatalf("ads's budget %s, want %s less $6", got, before)
		}
		if got := mk.Balance("search").Posted; got != 1000*ledger.Dollar {
			t.Fatalf("search, which could not pay, was charged: %s", got)
		}
		e, err := mk.L.Entry(ctx, c.EntryID)
		if err != nil {
			t.Fatal(err)
		}
		if want := "Holding charge, us-east/cpu, April 2026: 60 cores x $0.10"; e.Memo != want || e.Reason != ledger.ReasonHolding {
			t.Fatalf("entry %+v, want memo %q", e, want)
		}
		var sum ledger.Money
		for _, p := range e.Postings {
			sum += p.Amount
			if p.Account != ledger.TeamAccount("ads") && p.Account != ledger.Treasury {
				t.Errorf("posting to %s", p.Account)
			}
		}
		if sum != 0 || len(e.Postings) != 2 {
			t.Fatalf("postings %+v do not sum to zero", e.Postings)
		}

		// A rerun charges nothing more.
		run, err = mk.M.ChargeHolding(ctx, mk.Clock.Now())
		if err != nil || len(run.Charged) != 0 || run.Already != 1 {
			t.Fatalf("rerun: %+v, %v", run, err)
		}
		cs, err := mk.M.HoldingCharges(ctx, "ads")
		if err != nil || len(cs) != 1 {
			t.Fatalf("ads's holding charges: %+v, %v", cs, err)
		}
		// Turning it off stops May's charge.
		if _, err := mk.M.SetHoldingCharge(ctx, "us-east/cpu", 0); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.SetHoldingCharge(ctx, "us-east/gpu", 0); err != nil {
			t.Fatal(err)
		}
		mk.Clock.Set(april.AddDate(0, 1, 0))
		if run, err := mk.M.ChargeHolding(ctx, mk.Clock.Now()); err != nil || len(run.Charged) != 0 || len(run.Shortfall) != 0 {
			t.Fatalf("May with the charge off: %+v, %v", run, err)
		}
		for name, verify := range map[string]func(context.Context) ([]ledger.Violation, error){"ledger": mk.L.Verify, "market": mk.M.Verify} {
			if vs, err := verify(ctx); err != nil || len(vs) != 0 {
				t.Fatalf("%s verify: %v, %v", name, vs, err)
			}
		}
		// A charge that no longer matches its entry is a violation.
		if err := db.Write.Exec("UPDATE holding_charges SET amount = amount + 1").Error; err != nil {
			t.Fatal(err)
		}
		if vs, err := mk.M.Verify(ctx); err != nil || len(vs) != 1 || !strings.Contains(vs[0].String(), "holding charge of team ads") {
			t.Fatalf("verify after tampering: %v, %v", vs, err)
		}
	})
}

func TestParseMonth(t *testing.T) {
	if m, err := exchange.ParseMonth("2026-11"); err != nil || !m.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("2026-11: %v, %v", m, err)
	}
	for _, bad := range []string{"", "2026-13", "11/2026", "2026-11-01"} {
		if _, err := exchange.ParseMonth(bad); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
