package exchange_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// claimedFor is how many of the claimed emails go to addr.
func claimedFor(es []notify.Email, addr string) int {
	n := 0
	for _, e := range es {
		if e.ToAddr == addr {
			n++
		}
	}
	return n
}

// TestDecisionsNotifyWhoPlacedTheOrderAndEmailOffIsHonoured: the member who placed
// an order hears when an owner approves or rejects it, in the app and by email;
// once they turn email off they still get every notification in the app but no
// email, and what was queued before is dropped, not sent.
func TestDecisionsNotifyWhoPlacedTheOrderAndEmailOffIsHonoured(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		mk.M.Notices().UseEmail(true)
		ctx := context.Background()
		place := func() exchange.Order {
			t.Helper()
			o, err := mk.Order("member@ml", exchange.OrderSpec{Team: "ml", Limit: exchangetest.Money(400), Bundles: []exchange.Bundle{{"eu-west/cpu": 1}}})
			if err != nil || o.Status != exchange.OrderAwaitingApproval {
				t.Fatalf("ml's order: %+v, %v", o, err)
			}
			return o
		}
		first, second, third := place(), place(), place()
		owner, member := mk.Users["owner@ml"], mk.Users["member@ml"]
		if err := mk.M.DecideOrder(ctx, owner, first.ID, true); err != nil {
			t.Fatal(err)
		}
		ns := notices(t, mk, "member@ml")
		if len(ns) != 1 || ns[0].Kind != exchange.NoticeOrderApproved || ns[0].Link != "/orders" ||
			!strings.Contains(ns[0].Body, "approved your order") || !strings.Contains(ns[0].Subject, "approved") {
			t.Fatalf("after approval, the member has %+v", ns)
		}
		// The member turns email off: the approval's email, not yet sent, is dropped.
		if err := mk.M.Notices().SetEmailNotifications(ctx, member.ID, false); err != nil {
			t.Fatal(err)
		}
		if err := mk.M.Notices().SetEmailNotifications(ctx, member.ID, false); err != nil { // again: no change
			t.Fatal(err)
		}
		if err := mk.M.DecideOrder(ctx, owner, second.ID, false); err != nil {
			t.Fatal(err)
		}
		ns = notices(t, mk, "member@ml")
		if len(ns) != 2 || ns[0].Kind != exchange.NoticeOrderRejected || !strings.Contains(ns[0].Body, "rejected your order") || !strings.Contains(ns[0].Body, "released") {
			t.Fatalf("after rejection, the member has %+v", ns)
		}
		es, err := mk.M.Notices().ClaimEmails(ctx, 100, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if n := claimedFor(es, member.Email); n != 0 {
			t.Fatalf("%d emails to a member who turned email off", n)
		}
		if n := claimedFor(es, owner.Email); n != 3 {
			t.Fatalf("%d approval emails to the owner, want 3", n)
		}
		// The member turns email on again: only what comes after is emailed.
		if err := mk.M.Notices().SetEmailNotifications(ctx, member.ID, true); err != nil {
			t.Fatal(err)
		}
		if err := mk.M.DecideOrder(ctx, owner, third.ID, true); err != nil {
			t.Fatal(err)
		}
		mk.Clock.Advance(2 * time.Minute)
		es, err = mk.M.Notices().ClaimEmails(ctx, 100, time.Minute)
		if err != nil || claimedFor(es, member.Email) != 1 || !strings.Contains(es[len(es)-1].Subject, "approved") {
			t.Fatalf("after turning email on: %+v, %v", es, err)
		}
	})
}

// TestEmailsOfAUserWhoTurnedEmailOffAreDroppedAtSending: an email queued in the
// instant before its user turned email off is dropped when the outbox is read,
// never claimed.
func TestEmailsOfAUserWhoTurnedEmailOffAreDroppedAtSending(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		mk.M.Notices().UseEmail(true)
		ctx := context.Background()
		if _, err := mk.Order("member@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(500), Bundles: []exchange.Bundle{{"us-east/cpu": 10}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		// As if the opt-out committed between the queueing and its own drop.
		if err := db.Write.Exec("UPDATE users SET email_off_at = ? WHERE id = ?", mk.Clock.Now(), mk.Users["member@search"].ID).Error; err != nil {
			t.Fatal(err)
		}
		es, err := mk.M.Notices().ClaimEmails(ctx, 100, time.Minute)
		if err != nil || len(es) != 1 || es[0].ToAddr != mk.Users["owner@search"].Email {
			t.Fatalf("claimed %+v, %v; want the owner's email only", es, err)
		}
		var dropped int64
		if err := db.Read.Model(&notify.Email{}).Where("dropped_at IS NOT NULL AND sent_at IS NULL").Count(&dropped).Error; err != nil || dropped != 1 {
			t.Fatalf("%d dropped, %v; want the member's", dropped, err)
		}
		if ns := notices(t, mk, "member@search"); len(ns) != 1 {
			t.Fatalf("the member has %d notifications in the app, want 1", len(ns))
		}
	})
}
