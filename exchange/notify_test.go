package exchange_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func notices(t *testing.T, mk *exchangetest.Market, who string) []notify.Notification {
	t.Helper()
	ns, err := mk.M.Notices().Notifications(context.Background(), mk.Users[who].ID, 50)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestSettlementNotifiesEveryTraderOnceAndQueuesEmail: at settlement every member
// and owner of a team with an order gets its outcome, once (closing again adds
// nothing), with an email queued for each; owners are told about orders waiting
// for them; a team without orders hears nothing.
func TestSettlementNotifiesEveryTraderOnceAndQueuesEmail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		mk.M.Notices().UseEmail(true)
		ctx := context.Background()
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(500), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.Order("member@ads", exchange.OrderSpec{Team: "ads", Limit: exchangetest.Money(-1), Bundles: []exchange.Bundle{{"us-east/cpu": -5}}}); err != nil {
			t.Fatal(err)
		}
		waiting, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: exchangetest.Money(400), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}})
		if err != nil || waiting.Status != exchange.OrderAwaitingApproval {
			t.Fatalf("ml's order: %+v, %v", waiting, err)
		}
		if ns := notices(t, mk, "owner@ml"); len(ns) != 1 || ns[0].Kind != exchange.NoticeApprovalNeeded || !strings.Contains(ns[0].Body, "could pay up to $400.00") {
			t.Fatalf("ml's owner: %+v", ns)
		}
		if ns := notices(t, mk, "member@ml"); len(ns) != 0 {
			t.Fatalf("ml's member is told about its own order: %+v", ns)
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		for who, want := range map[string]string{"member@search": "paid $", "owner@search": "paid $", "member@ads": "received $", "owner@ads": "received $"} {
			ns := notices(t, mk, who)
			if len(ns) != 1 || ns[0].Kind != exchange.NoticeAuctionSettled || !strings.Contains(ns[0].Subject, "1 of 1 orders won") || !strings.Contains(ns[0].Body, want) {
				t.Errorf("%s: %+v, want one settlement notice that says %q", who, ns, want)
			}
		}
		if ns := notices(t, mk, "owner@ml"); len(ns) != 2 || !strings.Contains(ns[0].Body, "still waiting for approval and was rejected") {
			t.Errorf("ml's owner after settlement: %+v", ns)
		}
		if n, err := mk.M.Notices().UnreadCount(ctx, mk.Users["member@search"].ID); err != nil || n != 1 {
			t.Fatalf("unread %d, %v", n, err)
		}
		if n, err := mk.M.Notices().MarkRead(ctx, mk.Users["member@search"].ID, 0); err != nil || n != 1 {
			t.Fatalf("marked %d, %v", n, err)
		}
		if n, _ := mk.M.Notices().UnreadCount(ctx, mk.Users["member@search"].ID); n != 0 {
			t.Fatalf("unread after marking: %d", n)
		}
		// 4 settlement notices for search and ads, 2 for ml (its member and owner), 1 approval.
		es, err := mk.M.Notices().ClaimEmails(ctx, 100, time.Minute)
		if err != nil || len(es) != 7 {
			t.Fatalf("claimed %d emails, %v; want 7", len(es), err)
		}
		if again, _ := mk.M.Notices().ClaimEmails(ctx, 100, time.Minute); len(again) != 0 {
			t.Fatalf("leased emails claimed again: %d", len(again))
		}
		if err := mk.M.Notices().EmailSent(ctx, es[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := mk.M.Notices().EmailFailed(ctx, es[1].ID, "421 try later", mk.Clock.Now().Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		mk.Clock.Advance(2 * time.Minute)
		again, err := mk.M.Notices().ClaimEmails(ctx, 100, time.Minute)
		if err != nil || len(again) != 6 || again[0].ID != es[1].ID || again[0].Attempts != 2 || again[0].LastError != "421 try later" {
			t.Fatalf("after the lease: %d emails (%+v), %v; want the 6 unsent, the failed one on its second attempt", len(again), again, err)
		}
	})
}

// TestNoEmailIsQueuedWithoutAMailServer: notifications stay in the app when email
// is off.
func TestNoEmailIsQueuedWithoutAMailServer(t *testing.T) {
	mk := exchangetest.NewAuctionMarket(t, storetest.New(t))
	if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(500), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mk.M.Close(context.Background(), mk.AuctionID); err != nil {
		t.Fatal(err)
	}
	if ns := notices(t, mk, "member@search"); len(ns) != 1 {
		t.Fatalf("%d notices, want 1", len(ns))
	}
	if es, err := mk.M.Notices().ClaimEmails(context.Background(), 10, time.Minute); err != nil || len(es) != 0 {
		t.Fatalf("%d emails queued without a mail server, %v", len(es), err)
	}
}

// TestConcurrentSendersClaimEachEmailOnce: senders racing on one outbox (servers
// sharing PostgreSQL) never take the same email twice within its lease.
func TestConcurrentSendersClaimEachEmailOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		mk.M.Notices().UseEmail(true)
		ctx := context.Background()
		for _, team := range []string{"search", "ads"} {
			if _, err := mk.Order("member@"+team, exchange.OrderSpec{Team: team, Limit: exchangetest.Money(100), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		claimed := map[int64]int{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				es, err := mk.M.Notices().ClaimEmails(ctx, 10, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, e := range es {
					claimed[e.ID]++
				}
			}()
		}
		wg.Wait()
		if len(claimed) != 4 {
			t.Fatalf("%d emails claimed, want the 4 (member and owner of two teams)", len(claimed))
		}
		for id, n := range claimed {
			if n != 1 {
				t.Errorf("email %d claimed %d times", id, n)
			}
		}
	})
}
