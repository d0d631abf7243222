package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"golang.org/x/crypto/bcrypt"
)

func TestModelsMatchSchema(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &notify.Notification{}, &notify.Email{})
	})
}

// TestSendQueuesEmailOnlyForThoseWhoWantIt: every user who is not disabled gets the
// message in the app; with email on, those who have not turned it off also get it
// in the outbox, and turning it off drops what was queued and not sent.
func TestSendQueuesEmailOnlyForThoseWhoWantIt(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(storetest.Epoch)
		id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
		var users []identity.User
		for _, email := range []string{"ana@x.io", "bo@x.io", "cy@x.io"} {
			u, err := id.AddUser(ctx, identity.NewUser{Email: email, Role: identity.RoleFinance})
			if err != nil {
				t.Fatal(err)
			}
			users = append(users, u)
		}
		ana, bo, cy := users[0], users[1], users[2]
		if err := id.DisableUser(ctx, cy.ID); err != nil {
			t.Fatal(err)
		}
		if cy, _ = id.UserByID(ctx, cy.ID); cy.DisabledAt == nil {
			t.Fatal("cy is not disabled")
		}
		s := notify.New(db, clock.Now)
		s.UseEmail(true)
		if err := s.SetEmailNotifications(ctx, bo.ID, false); err != nil {
			t.Fatal(err)
		}
		if bo, _ = id.UserByID(ctx, bo.ID); bo.EmailOffAt == nil {
			t.Fatal("bo's email is still on")
		}
		send := func(ref string, to ...identity.User) {
			t.Helper()
			err := s.Send(db.Write, to, func(u identity.User) notify.Message {
				return notify.Message{Kind: "test", Ref: ref, Subject: "Hello " + u.Email, Body: "body", Link: "/"}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		send("one", ana, bo, cy)
		for _, c := range []struct {
			u    identity.User
			want int64
		}{{ana, 1}, {bo, 1}, {cy, 0}} {
			if n, err := s.UnreadCount(ctx, c.u.ID); err != nil || n != c.want {
				t.Errorf("%s has %d unread, %v; want %d", c.u.Email, n, err, c.want)
			}
		}
		es, err := s.ClaimEmails(ctx, 10, time.Minute)
		if err != nil || len(es) != 1 || es[0].ToAddr != "ana@x.io" || es[0].Subject != "Hello ana@x.io" || es[0].Attempts != 1 {
			t.Fatalf("ClaimEmails = %+v, %v; want ana's one email", es, err)
		}
		if again, _ := s.ClaimEmails(ctx, 10, time.Minute); len(again) != 0 {
			t.Fatalf("a leased email was claimed again: %+v", again)
		}
		if err := s.EmailSent(ctx, es[0].ID); err != nil {
			t.Fatal(err)
		}

		send("two", ana)
		if err := s.SetEmailNotifications(ctx, ana.ID, false); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
		if es, err := s.ClaimEmails(ctx, 10, time.Minute); err != nil || len(es) != 0 {
			t.Fatalf("after ana turned email off, ClaimEmails = %+v, %v; want nothing", es, err)
		}
		var dropped int64
		if err := db.Read.Model(&notify.Email{}).Where("dropped_at IS NOT NULL").Count(&dropped).Error; err != nil || dropped != 1 {
			t.Fatalf("%d dropped emails, %v; want ana's second", dropped, err)
		}

		s.UseEmail(false)
		if err := s.SetEmailNotifications(ctx, ana.ID, true); err != nil {
			t.Fatal(err)
		}
		send("three", ana)
		var queued int64
		if err := db.Read.Model(&notify.Email{}).Count(&queued).Error; err != nil || queued != 2 {
			t.Fatalf("%d emails in the outbox, %v; want 2: none queued with email off", queued, err)
		}
	})
}

// TestReadingNotifications: a user's notifications newest first, marked read up to
// one of them or all, and a listing's limit bounded.
func TestReadingNotifications(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(storetest.Epoch)
		u, err := identity.NewIdentity(db, clock.Now, bcrypt.MinCost).AddUser(ctx, identity.NewUser{Email: "ana@x.io", Role: identity.RoleOperator})
		if err != nil {
			t.Fatal(err)
		}
		s := notify.New(db, clock.Now)
		for _, ref := range []string{"a", "b", "c"} {
			if err := s.Send(db.Write, []identity.User{u}, func(identity.User) notify.Message {
				return notify.Message{Kind: "test", Ref: ref, Subject: ref}
			}); err != nil {
				t.Fatal(err)
			}
		}
		ns, err := s.Notifications(ctx, u.ID, 10)
		if err != nil || len(ns) != 3 || ns[0].Ref != "c" || ns[2].Ref != "a" {
			t.Fatalf("Notifications = %+v, %v; want c, b, a", ns, err)
		}
		if n, err := s.MarkRead(ctx, u.ID, ns[1].ID); err != nil || n != 2 {
			t.Fatalf("MarkRead up to b = %d, %v; want 2", n, err)
		}
		if n, _ := s.UnreadCount(ctx, u.ID); n != 1 {
			t.Fatalf("%d unread; want 1", n)
		}
		if n, err := s.MarkRead(ctx, u.ID, 0); err != nil || n != 1 {
			t.Fatalf("MarkRead all = %d, %v; want 1", n, err)
		}
		for _, limit := range []int{0, notify.MaxPage + 1} {
			if _, err := s.Notifications(ctx, u.ID, limit); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
				t.Errorf("limit %d: %v; want EINVALID", limit, err)
			}
		}
	})
}
