package exchange_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// raceLog records what writers were told, to check against what settled.
type raceLog struct {
	mu        sync.Mutex
	placed    map[int64]bool // order id -> placed (2xx)
	withdrawn map[int64]bool // confirmed withdrawals
	approved  map[int64]bool // confirmed approvals
	awaiting  []int64        // orders waiting for an owner
	refused   atomic.Int64   // writes refused because the auction was closing or closed
	count     atomic.Int64   // orders placed
}

func (l *raceLog) mark(m map[int64]bool, id int64) {
	l.mu.Lock()
	m[id] = true
	l.mu.Unlock()
}

// writeOutcome fails the test for anything but success or an expected refusal,
// and reports whether the write succeeded.
func (l *raceLog) writeOutcome(t *testing.T, what string, err error) bool {
	switch clearhouse.ErrorCode(err) {
	case "":
		return true
	case clearhouse.ECONFLICT:
		l.refused.Add(1)
		return false
	case clearhouse.EUNPROCESSABLE: // out of budget or quota: a valid refusal
		return false
	}
	t.Errorf("%s: %v", what, err)
	return false
}

// A close racing many writers (placing bids and offers, withdrawing, approving),
// from two servers' worth of services on one database, settles exactly the writes
// it confirmed: no confirmed withdrawal is overridden, no confirmed order is left
// out or left open, both closes answer with the one binding run, and every
// invariant holds afterwards.
func TestCloseRacingOrderWritesSettlesExactlyTheConfirmedWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		other := storetest.Another(t, db)
		second := exchange.NewMarket(other, ledger.New(other, mk.Clock.Now), mk.Clock.Now)
		log := &raceLog{placed: map[int64]bool{}, withdrawn: map[int64]bool{}, approved: map[int64]bool{}}
		started := make(chan struct{})
		var once sync.Once
		var writers sync.WaitGroup
		type writer struct {
			who  string
			spec exchange.OrderSpec
		}
		plans := []writer{
			{"member@search", exchange.OrderSpec{Team: "search", Limit: money(2), Bundles: []exchange.Bundle{{"us-east/cpu": 1}, {"eu-west/cpu": 1}}}},
			{"owner@search", exchange.OrderSpec{Team: "search", Limit: money(1.5), Bundles: []exchange.Bundle{{"us-east/cpu": 1, "us-east/ram": 2}}}},
			{"member@ads", exchange.OrderSpec{Team: "ads", Limit: money(-0.5), Bundles: []exchange.Bundle{{"us-east/cpu": -1}}}},
			{"owner@ads", exchange.OrderSpec{Team: "ads", Limit: money(1), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}}},
			{"member@ml", exchange.OrderSpec{Team: "ml", Limit: money(301), Bundles: []exchange.Bundle{{"eu-west/cpu": 2}}}}, // awaits approval
			{"owner@ml", exchange.OrderSpec{Team: "ml", Limit: money(3), Bundles: []exchange.Bundle{{"us-east/cpu": 2}}}},
		}
		for i := range 12 {
			p := plans[i%len(plans)]
			m := mk.M
			if i%2 == 1 {
				m = second
			}
			writers.Add(1)
			go func() {
				defer writers.Done()
				by := mk.Users[p.who]
				var mine []int64
				for n := 0; n < 400; n++ {
					o, err := m.PlaceOrder(ctx, by, p.spec)
					if !log.writeOutcome(t, "place", err) {
						if clearhouse.ErrorCode(err) == clearhouse.ECONFLICT {
							return // the auction is closing: every later write is refused too
						}
						continue
					}
					log.mark(log.placed, o.ID)
					log.count.Add(1)
					if o.Status == exchange.OrderAwaitingApproval {
						log.mu.Lock()
						log.awaiting = append(log.awaiting, o.ID)
						log.mu.Unlock()
					}
					mine = append(mine, o.ID)
					if log.count.Load() >= 60 {
						once.Do(func() { close(started) })
					}
					if n%3 == 2 { // withdraw the oldest of this writer's orders
						if log.writeOutcome(t, "withdraw", m.WithdrawOrder(ctx, by, mine[0])) {
							log.mark(log.withdrawn, mine[0])
						}
						mine = mine[1:]
					}
					if by.Role == identity.RoleOwner && by.TeamID == "ml" {
						log.mu.Lock()
						var next int64
						if len(log.awaiting) > 0 {
							next, log.awaiting = log.awaiting[0], log.awaiting[1:]
						}
						log.mu.Unlock()
						if next != 0 && log.writeOutcome(t, "approve", m.DecideOrder(ctx, by, next, true)) {
							log.mark(log.approved, next)
						}
					}
				}
			}()
		}
		<-started
		runs := make([]exchange.AuctionRun, 2)
		errs := make([]error, 2)
		var closers sync.WaitGroup
		for i, m := range []*exchange.Market{mk.M, second} {
			closers.Add(1)
			go func() {
				defer closers.Done()
				runs[i], errs[i] = m.Close(ctx, mk.AuctionID)
			}()
		}
		closers.Wait()
		writers.Wait()
		if errs[0] != nil || errs[1] != nil || runs[0].ID != runs[1].ID || runs[0].ID == 0 {
			t.Fatalf("concurrent closes: %v / %v, runs %d and %d", errs[0], errs[1], runs[0].ID, runs[1].ID)
		}
		if log.refused.Load() == 0 {
			t.Fatal("no write met the closing auction: the race did not happen")
		}
		orders, err := mk.M.Orders(ctx, exchange.OrderFilter{AuctionID: mk.AuctionID})
		if err != nil {
			t.Fatal(err)
		}
		var lines []exchange.SettlementLine
		if err := db.Read.Where("auction_id = ?", mk.AuctionID).Find(&lines).Error; err != nil {
			t.Fatal(err)
		}
		hasLine := map[int64]bool{}
		for _, l := range lines {
			hasLine[l.OrderID] = true
		}
		decided := 0
		for _, o := range orders {
			if !log.placed[o.ID] {
				t.Errorf("order %d exists but its placement was not confirmed", o.ID)
			}
			switch {
			case log.withdrawn[o.ID]:
				if o.Status != exchange.OrderWithdrawn || hasLine[o.ID] {
					t.Errorf("order %d was withdrawn (confirmed) but is %s, settlement line %v", o.ID, o.Status, hasLine[o.ID])
				}
			case log.approved[o.ID] && o.Status != exchange.OrderWon && o.Status != exchange.OrderLost:
				t.Errorf("order %d was approved (confirmed) but ended %s", o.ID, o.Status)
			case o.Status == exchange.OrderWon || o.Status == exchange.OrderLost:
				decided++
				if !hasLine[o.ID] {
					t.Errorf("order %d is %s without a settlement line", o.ID, o.Status)
				}
			case o.Status == exchange.OrderRejected: // awaited approval at close
			default:
				t.Errorf("order %d ended %s", o.ID, o.Status)
			}
		}
		if decided != runs[0].Orders || len(lines) != decided {
			t.Errorf("the binding run had %d orders, %d were decided, %d settlement lines", runs[0].Orders, decided, len(lines))
		}
		t.Logf("%d orders placed, %d withdrawn, %d approved, %d in the binding run, %d writes refused as closing",
			len(log.placed), len(log.withdrawn), len(log.approved), runs[0].Orders, log.refused.Load())
		mk.Verify()
	})
}

// Concurrent requests with one Idempotency-Key, on two servers, all get the one
// original order; another team's identical key is its own.
func TestConcurrentRequestsWithOneKeyGetTheOriginalOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		other := storetest.Another(t, db)
		second := exchange.NewMarket(other, ledger.New(other, mk.Clock.Now), mk.Clock.Now)
		spec := exchange.OrderSpec{Team: "search", Key: "retry-me", Limit: money(10), Bundles: []exchange.Bundle{{"us-east/cpu": 3}}}
		ids := make([]int64, 16)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := mk.M
				if i%2 == 1 {
					m = second
				}
				o, err := m.PlaceOrder(ctx, mk.Users["member@search"], spec)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				ids[i] = o.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("one key gave orders %v", ids)
			}
		}
		if b := mk.Balance("search"); b.Held != 10*ledger.Dollar {
			t.Fatalf("search holds %s after one order of $10", b.Held)
		}
		theirs := spec
		theirs.Team = "ml"
		o, err := mk.Order("member@ml", theirs)
		if err != nil || o.ID == ids[0] {
			t.Fatalf("ml's order with search's key: %+v, %v", o, err)
		}
		changed := spec
		changed.Limit = money(11)
		_, err = mk.Order("member@search", changed)
		wantCode(t, err, clearhouse.ECONFLICT)
		mk.Clock.Advance(time.Hour)
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		// A retry after the close still gets the original answer, not a 409.
		again, err := mk.Order("member@search", spec)
		if err != nil || again.ID != ids[0] {
			t.Fatalf("a retry after close: %+v, %v", again, err)
		}
		mk.Verify()
	})
}

// Once the bid window has ended, withdrawals and approvals are refused like bids,
// even before the scheduled job closes the auction; once it is closing, every
// write says so.
func TestOrderWritesStopWhenTheWindowEnds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		o, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(10), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}})
		if err != nil {
			t.Fatal(err)
		}
		waiting, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: money(350), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}})
		if err != nil || waiting.Status != exchange.OrderAwaitingApproval {
			t.Fatalf("%+v %v", waiting, err)
		}
		mk.Clock.Advance(time.Hour)
		_, err = mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(10), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}})
		wantCode(t, err, clearhouse.ECONFLICT)
		wantCode(t, mk.M.WithdrawOrder(ctx, mk.Users["member@search"], o.ID), clearhouse.ECONFLICT)
		wantCode(t, mk.M.DecideOrder(ctx, mk.Users["owner@ml"], waiting.ID, true), clearhouse.ECONFLICT)
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		err = mk.M.WithdrawOrder(ctx, mk.Users["member@search"], o.ID)
		if clearhouse.ErrorCode(err) != clearhouse.ECONFLICT || !strings.Contains(clearhouse.ErrorMessage(err), "already") {
			t.Fatalf("withdrawing a settled order: %v", err)
		}
		mk.Verify()
	})
}

// The market's limits hold per team and auction, also under concurrent
// placements, and say which limit was reached.
func TestLimitsHoldPerTeamAndAuction(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		mk := newAuctionMarket(t, db)
		wantCode(t, mk.M.SetLimits(ctx, exchange.Limits{OpenOrdersPerTeam: 0, BundlesPerOrder: 1, PoolsPerBundle: 1}), clearhouse.EINVALID)
		if err := mk.M.SetLimits(ctx, exchange.Limits{OpenOrdersPerTeam: 5, BundlesPerOrder: 2, PoolsPerBundle: 1}); err != nil {
			t.Fatal(err)
		}
		_, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(1), Bundles: []exchange.Bundle{{"us-east/cpu": 1, "us-east/ram": 1}}})
		wantCode(t, err, clearhouse.EINVALID)
		_, err = mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(1), Bundles: []exchange.Bundle{{"us-east/cpu": 1}, {"us-east/cpu": 2}, {"us-east/cpu": 3}}})
		wantCode(t, err, clearhouse.EINVALID)
		var wg sync.WaitGroup
		var placed atomic.Int64
		for range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: money(1), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}})
				switch clearhouse.ErrorCode(err) {
				case "":
					placed.Add(1)
				case clearhouse.EUNPROCESSABLE:
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if placed.Load() != 5 {
			t.Fatalf("%d orders placed under a limit of 5", placed.Load())
		}
		if _, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: money(1), Bundles: []exchange.Bundle{{"us-east/cpu": 1}}}); err != nil {
			t.Fatalf("another team is not limited by search's orders: %v", err)
		}
	})
}
