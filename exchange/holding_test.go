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
		march2, april := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
		if !r.AppliesFrom.Equal(march2) {
			t.Fatalf("a rate set on 2 March applies from %v, want the start of that day", r.AppliesFrom)
		}
		// A changed rate applies from next month; the same rate again changes nothing.
		if r2, err := mk.M.SetHoldingCharge(ctx, "us-east/cpu", ledger.Dollar/10); err != nil || !r2.AppliesFrom.Equal(march2) {
			t.Fatalf("the same rate again: %+v, %v", r2, err)
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
		// March from the 2nd: 30 of 31 days, 60 x 100,000 x 30 / 31 = 5,806,451.6 micro-dollars, rounded down.
		c := charged[0]
		if c.PoolID != "us-east/cpu" || c.TeamID != "ads" || c.Month != "2026-03" || c.Units != 60 || c.Amount != 5_806_451 || c.Days != 30 || c.MonthDays != 31 {
			t.Fatalf("charge %+v, want ads 60 cores x $0.10 x 30/31 = $5.806451 for 2026-03", c)
		}
		if start, end := c.Period(); !start.Equal(march2) || !end.Equal(april) {
			t.Fatalf("period [%v, %v), want [2 March, 1 April)", start, end)
		}
		if short != 8 {
			t.Errorf("search's shortfall was reported %d times, want by each of the 8 runs", short)
		}
		if got := mk.Balance("ads").Posted; got != before-5_806_451 {
			t.Fatalf("ads's budget %s, want %s less $5.806451", got, before)
		}
		if got := mk.Balance("search").Posted; got != 1000*ledger.Dollar {
			t.Fatalf("search, which could not pay, was charged: %s", got)
		}
		e, err := mk.L.Entry(ctx, c.EntryID)
		if err != nil {
			t.Fatal(err)
		}
		if want := "Holding charge, us-east/cpu, March 2026, 30 of 31 days from 2 March: 60 cores x $0.10 x 30/31"; e.Memo != want || e.Reason != ledger.ReasonHolding {
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
		// April is a whole month at the rate: $6.
		mk.Clock.Set(april.Add(30 * time.Minute))
		run, err = mk.M.ChargeHolding(ctx, mk.Clock.Now())
		if err != nil || len(run.Charged) != 1 || run.Charged[0].Amount != 6*ledger.Dollar || !run.Charged[0].Whole() {
			t.Fatalf("April: %+v, %v", run, err)
		}
		if e, err := mk.L.Entry(ctx, run.Charged[0].EntryID); err != nil || e.Memo != "Holding charge, us-east/cpu, April 2026: 60 cores x $0.10" {
			t.Fatalf("April's entry: %+v, %v", e, err)
		}
		cs, err := mk.M.HoldingCharges(ctx, "ads")
		if err != nil || len(cs) != 2 || cs[1].Days != 30 || cs[0].Days != 0 {
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
		// Both ads's charges, the part of March and the whole of April, are found.
		if vs, err := mk.M.Verify(ctx); err != nil || len(vs) != 2 || !strings.Contains(vs[0].String(), "holding charge of team ads for us-east/cpu in 2026-03") {
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

// HoldingAmount is exact integer arithmetic: a whole month is units x rate, part of
// one is rounded down to the micro-dollar and never more than the whole, and an
// amount past int64 is an error, never a wrap.
func TestHoldingAmountIsExact(t *testing.T) {
	for _, c := range []struct {
		units           int64
		rate            ledger.Money
		days, monthDays int64
		want            ledger.Money
	}{
		{60, ledger.Dollar / 10, 31, 31, 6 * ledger.Dollar},
		{60, ledger.Dollar / 10, 30, 31, 5_806_451},
		{1, 1, 1, 31, 0},
		{3, 333_333, 10, 30, 333_333},
		{1_600, ledger.Dollar / 10, 16, 30, 85_333_333},
	} {
		got, err := exchange.HoldingAmount(c.units, c.rate, c.days, c.monthDays)
		if err != nil || got != c.want {
			t.Errorf("%d x %d x %d/%d = %d, %v; want %d", c.units, c.rate, c.days, c.monthDays, got, err, c.want)
		}
	}
	if _, err := exchange.HoldingAmount(1<<40, exchange.MaxHoldingRate, 15, 30); err == nil {
		t.Error("an overflowing amount was computed")
	}
}
