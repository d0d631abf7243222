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

func TestModelsMatchSchema(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &identity.User{}, &identity.Session{}, &identity.APIToken{}, &identity.ProviderLogin{})
	})
}

func TestUsersAndSignIn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(time.Time{})
		id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
		addTeam(t, db, "search")
		for _, bad := range []identity.NewUser{
			{Email: "not-an-email", Role: identity.RoleFinance},
			{Email: "a@x.io", Role: "king"},
			{Email: "a@x.io", Role: identity.RoleMember},
			{Email: "a@x.io", Role: identity.RoleFinance, TeamID: "search"},
			{Email: "a@x.io", Role: identity.RoleFinance, Password: "short"},
		} {
			_, err := id.AddUser(ctx, bad)
			wantCode(t, err, clearhouse.EINVALID)
		}
		_, err := id.AddUser(ctx, identity.NewUser{Email: "a@x.io", Role: identity.RoleMember, TeamID: "ghost"})
		wantCode(t, err, clearhouse.ENOTFOUND)
		u, err := id.AddUser(ctx, identity.NewUser{Email: " Ana@X.io ", Role: identity.RoleOwner, TeamID: "search", Password: "correct horse battery"})
		if err != nil || u.Email != "ana@x.io" || strings.Contains(u.PasswordHash, "horse") {
			t.Fatalf("AddUser = %+v, %v", u, err)
		}
		_, err = id.AddUser(ctx, identity.NewUser{Email: "ana@x.io", Role: identity.RoleFinance})
		wantCode(t, err, clearhouse.ECONFLICT)

		_, err = id.Authenticate(ctx, "ana@x.io", "wrong password")
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		_, err2 := id.Authenticate(ctx, "nobody@x.io", "correct horse battery")
		if clearhouse.ErrorMessage(err) != clearhouse.ErrorMessage(err2) {
			t.Errorf("a wrong email and a wrong password must look alike: %q vs %q", err, err2)
		}
		if got, err := id.Authenticate(ctx, "ANA@x.io", "correct horse battery"); err != nil || got.ID != u.ID {
			t.Fatalf("Authenticate = %+v, %v", got, err)
		}

		token, _, err := id.StartSession(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := id.SessionUser(ctx, token); err != nil || got.ID != u.ID {
			t.Fatalf("SessionUser = %+v, %v", got, err)
		}
		var stored int64
		db.Read.Table("sessions").Where("token_hash = ?", token).Count(&stored)
		if stored != 0 {
			t.Error("the session token is stored in the clear")
		}
		clock.Advance(identity.SessionIdle + time.Minute)
		_, _, err = id.SessionUser(ctx, token)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)

		token, _, _ = id.StartSession(ctx, u.ID)
		if err := id.EndSession(ctx, token); err != nil {
			t.Fatal(err)
		}
		_, _, err = id.SessionUser(ctx, token)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		addCluster(t, db, "us-east")
		id := identity.NewIdentity(db, storetest.NewClock(time.Time{}).Now, bcrypt.MinCost)
		u, err := id.AddUser(ctx, identity.NewUser{Email: "op@x.io", Role: identity.RoleOperator})
		if err != nil {
			t.Fatal(err)
		}
		tok, _, err := id.IssueToken(ctx, u.ID, "script")
		if err != nil || !strings.HasPrefix(tok, "chu_") {
			t.Fatalf("IssueToken = %q, %v", tok, err)
		}
		if tk, got, err := id.TokenUser(ctx, tok); err != nil || got.ID != u.ID || tk.Scope != identity.ScopeAPI {
			t.Fatalf("TokenUser = %+v %+v, %v", tk, got, err)
		}
		_, _, err = id.TokenUser(ctx, tok+"x")
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		_, _, err = id.IssueAgentToken(ctx, "nowhere", "agent")
		wantCode(t, err, clearhouse.ENOTFOUND)
		atok, _, err := id.IssueAgentToken(ctx, "us-east", "agent")
		if err != nil {
			t.Fatal(err)
		}
		tk, got, err := id.TokenUser(ctx, atok)
		if err != nil || got.ID != 0 || tk.ClusterID == nil || *tk.ClusterID != "us-east" {
			t.Fatalf("agent TokenUser = %+v %+v, %v", tk, got, err)
		}
	})
}
