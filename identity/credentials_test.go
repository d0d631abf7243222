package identity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"golang.org/x/crypto/bcrypt"
)

func TestTokensExpireAreRevokedAndRecordTheirUse(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(time.Time{})
		id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
		u, err := id.AddUser(ctx, identity.NewUser{Email: "op@x.io", Role: identity.RoleOperator})
		if err != nil {
			t.Fatal(err)
		}
		past := clock.Now().Add(-time.Second)
		_, _, err = id.IssueTokenUntil(ctx, u.ID, "late", &past)
		wantCode(t, err, clearhouse.EINVALID)
		_, _, err = id.IssueTokenUntil(ctx, 999, "ghost", nil)
		wantCode(t, err, clearhouse.ENOTFOUND)

		in90 := clock.Now().Add(identity.DefaultTokenLifetime)
		expiring, t1, err := id.IssueTokenUntil(ctx, u.ID, "ci", &in90)
		if err != nil {
			t.Fatal(err)
		}
		forever, t2, err := id.IssueToken(ctx, u.ID, "forever")
		if err != nil {
			t.Fatal(err)
		}
		var stored []identity.APIToken
		if err := db.Read.Find(&stored).Error; err != nil || len(stored) != 2 {
			t.Fatalf("tokens stored: %d, %v", len(stored), err)
		}
		for _, s := range stored {
			if s.TokenHash == expiring || s.TokenHash == forever || len(s.TokenHash) != 64 {
				t.Fatalf("a token is stored as %q, not as its SHA-256", s.TokenHash)
			}
		}
		if _, _, err := id.TokenUser(ctx, expiring); err != nil {
			t.Fatal(err)
		}
		clock.Advance(30 * time.Second)
		if _, _, err := id.TokenUser(ctx, expiring); err != nil {
			t.Fatal(err)
		}
		views, err := id.Tokens(ctx, identity.TokenFilter{UserID: u.ID})
		if err != nil || len(views) != 2 || views[0].ID != t2.ID || views[1].Owner != "op@x.io" {
			t.Fatalf("Tokens = %+v, %v", views, err)
		}
		if lu := views[1].LastUsedAt; lu == nil || !lu.Equal(storetest.Epoch) {
			t.Fatalf("last used %v, want the first use (recorded at most once a minute)", lu)
		}
		if views[1].ExpiresAt == nil || !views[1].ExpiresAt.Equal(in90) || views[0].ExpiresAt != nil {
			t.Fatalf("expiries %v and %v", views[1].ExpiresAt, views[0].ExpiresAt)
		}

		clock.Advance(identity.DefaultTokenLifetime)
		_, _, err = id.TokenUser(ctx, expiring)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		if _, _, err := id.TokenUser(ctx, forever); err != nil {
			t.Fatalf("a token without expiry: %v", err)
		}
		if _, err := id.RevokeToken(ctx, t2.ID); err != nil {
			t.Fatal(err)
		}
		if r, err := id.RevokeToken(ctx, t2.ID); err != nil || r.RevokedAt == nil {
			t.Fatalf("revoking again = %+v, %v", r, err)
		}
		_, _, err = id.TokenUser(ctx, forever)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		_, err = id.RevokeToken(ctx, 999)
		wantCode(t, err, clearhouse.ENOTFOUND)
		views, _ = id.Tokens(ctx, identity.TokenFilter{})
		for _, v := range views {
			if v.Live(clock.Now()) {
				t.Errorf("token %d (%s) is live", v.ID, v.Name)
			}
		}
		if page, err := id.Tokens(ctx, identity.TokenFilter{Before: t2.ID, Limit: 1}); err != nil || len(page) != 1 || page[0].ID != t1.ID {
			t.Fatalf("the next page = %+v, %v", page, err)
		}
	})
}

func TestDisablingAndPasswordResetsEndSessions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(time.Time{})
		id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
		addTeam(t, db, "search")
		u, err := id.AddUser(ctx, identity.NewUser{Email: "ana@x.io", Role: identity.RoleMember, TeamID: "search", Password: "correct horse battery"})
		if err != nil {
			t.Fatal(err)
		}
		other, err := id.AddUser(ctx, identity.NewUser{Email: "bob@x.io", Role: identity.RoleMember, TeamID: "search", Password: "correct horse battery"})
		if err != nil {
			t.Fatal(err)
		}
		s1, _, _ := id.StartSession(ctx, u.ID)
		s2, _, _ := id.StartSession(ctx, u.ID)
		bobs, _, _ := id.StartSession(ctx, other.ID)
		token, _, err := id.IssueToken(ctx, u.ID, "script")
		if err != nil {
			t.Fatal(err)
		}
		accounts, err := id.Accounts(ctx, "", 10)
		if err != nil || len(accounts) != 2 || accounts[0].Email != "ana@x.io" || accounts[0].Sessions != 2 || accounts[0].ActiveTokens != 1 || accounts[1].Sessions != 1 {
			t.Fatalf("Accounts = %+v, %v", accounts, err)
		}

		if err := id.DisableUser(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{s1, s2} {
			_, _, err := id.SessionUser(ctx, s)
			wantCode(t, err, clearhouse.EUNAUTHORIZED)
		}
		_, _, err = id.TokenUser(ctx, token)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		_, err = id.Authenticate(ctx, "ana@x.io", "correct horse battery")
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		_, _, err = id.IssueToken(ctx, u.ID, "more")
		wantCode(t, err, clearhouse.EFORBIDDEN)
		if _, _, err := id.SessionUser(ctx, bobs); err != nil {
			t.Fatalf("disabling ana ended bob's session: %v", err)
		}
		if err := id.EnableUser(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := id.TokenUser(ctx, token); err != nil {
			t.Fatalf("an enabled user's token: %v", err)
		}

		s3, _, _ := id.StartSession(ctx, u.ID)
		wantCode(t, id.SetPassword(ctx, u.ID, "short"), clearhouse.EINVALID)
		if err := id.SetPassword(ctx, u.ID, "a brand new password"); err != nil {
			t.Fatal(err)
		}
		_, _, err = id.SessionUser(ctx, s3)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		if _, err := id.Authenticate(ctx, "ana@x.io", "a brand new password"); err != nil {
			t.Fatalf("the new password: %v", err)
		}
		_, err = id.Authenticate(ctx, "ana@x.io", "correct horse battery")
		wantCode(t, err, clearhouse.EUNAUTHORIZED)

		n, err := id.EndSessions(ctx, other.ID)
		if err != nil || n != 1 {
			t.Fatalf("EndSessions = %d, %v", n, err)
		}
		_, _, err = id.SessionUser(ctx, bobs)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		wantCode(t, id.DisableUser(ctx, 999), clearhouse.ENOTFOUND)
		wantCode(t, id.SetPassword(ctx, 999, "long enough pw"), clearhouse.ENOTFOUND)
	})
}

func TestEmailsLongerThan254BytesAreRefused(t *testing.T) {
	t.Parallel()
	id := identity.NewIdentity(storetest.New(t), storetest.NewClock(time.Time{}).Now, bcrypt.MinCost)
	long := "ab@" + strings.Repeat("x", identity.MaxEmail-5) + ".io" // 255 bytes
	_, err := id.AddUser(context.Background(), identity.NewUser{Email: long, Role: identity.RoleFinance})
	wantCode(t, err, clearhouse.EINVALID)
	if _, err := id.AddUser(context.Background(), identity.NewUser{Email: long[1:], Role: identity.RoleFinance}); err != nil {
		t.Fatalf("a 254-byte email: %v", err)
	}
}
