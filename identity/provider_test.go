package identity_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func TestGroupMappingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "groups.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	m, err := identity.ReadGroupMapping(write("rules:\n  - {group: ml-owners, role: owner, team: ml}\n  - {group: ops, role: operator}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Claim != "groups" || len(m.Rules) != 2 {
		t.Fatalf("read %+v", m)
	}
	if r, ok := m.Match([]string{"nobody-knows", "ops", "ml-owners"}); !ok || r.Group != "ml-owners" {
		t.Fatalf("first rule in the file's order should win: %+v %v", r, ok)
	}
	if _, ok := m.Match([]string{"nobody-knows"}); ok {
		t.Fatal("an unknown group matched")
	}
	for body, want := range map[string]string{
		"rules: []\n":                                                             "gives nobody access",
		"rules:\n  - {group: a, role: member}\n":                                  "rules[0].team",
		"rules:\n  - {group: a, role: finance, team: ml}\n":                       "belongs to none",
		"rules:\n  - {group: a, role: admin}\n":                                   "rules[0].role",
		"rules:\n  - {group: a, role: operator}\n  - {group: a, role: finance}\n": "mapped twice",
		"rules:\n  - {group: a, role: operator, teams: x}\n":                      "teams",
		"claim: roles\nrules:\n  - {group: \"\", role: operator}\n":               "rules[0].group",
	} {
		if _, err := identity.ReadGroupMapping(write(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error naming %q", body, err, want)
		}
	}
}

func TestSignInFromProviderKeepsLocalGrantsAndOperatorsDecisions(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
		addTeam(t, db, "ml")
		m := identity.GroupMapping{Rules: []identity.GroupRule{{Group: "ml", Role: identity.RoleMember, Team: "ml"}, {Group: "ghost", Role: identity.RoleMember, Team: "nope"}}}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		person := func(sub, email string, verified bool, groups ...string) identity.ProviderPerson {
			return identity.ProviderPerson{Issuer: "https://idp", Subject: sub, Email: email, EmailVerified: verified, Groups: groups}
		}

		// A break-glass operator with a local grant signs in through the provider with no
		// mapped group: the local grant stands.
		ops, err := id.AddUser(ctx, identity.NewUser{Email: "ops@x.io", Role: identity.RoleOperator, Password: "correct horse battery"})
		if err != nil {
			t.Fatal(err)
		}
		u, err := id.SignInFromProvider(ctx, person("o1", "ops@x.io", true, "unmapped"), m)
		if err != nil || u.ID != ops.ID || u.Role != identity.RoleOperator || u.AccessSource != identity.SourceLocal {
			t.Fatalf("local operator: %+v %v", u, err)
		}

		// An unverified email never takes over an existing account.
		if _, err := id.AddUser(ctx, identity.NewUser{Email: "ana@x.io", Role: identity.RoleMember, TeamID: "ml"}); err != nil {
			t.Fatal(err)
		}
		_, err = id.SignInFromProvider(ctx, person("a1", "ana@x.io", false, "ml"), m)
		wantCode(t, err, clearhouse.EFORBIDDEN)

		// Nobody is made for a person with no mapped group.
		_, err = id.SignInFromProvider(ctx, person("z1", "zed@x.io", true, "unmapped"), m)
		if !errors.Is(err, identity.ErrNoMappedGroup) {
			t.Fatalf("no group: %v", err)
		}
		if _, err := id.UserByEmail(ctx, "zed@x.io"); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Fatalf("zed was made: %v", err)
		}

		// A rule naming a missing team says so.
		_, err = id.SignInFromProvider(ctx, person("g1", "gus@x.io", true, "ghost"), m)
		wantCode(t, err, clearhouse.ENOTFOUND)

		// An account an operator disabled stays disabled whatever the groups.
		bea, err := id.SignInFromProvider(ctx, person("b1", "bea@x.io", true, "ml"), m)
		if err != nil || bea.AccessSource != identity.SourceProvider || bea.AccessGroup != "ml" {
			t.Fatalf("bea: %+v %v", bea, err)
		}
		if err := id.DisableUser(ctx, bea.ID); err != nil {
			t.Fatal(err)
		}
		_, err = id.SignInFromProvider(ctx, person("b1", "bea@x.io", true, "ml"), m)
		wantCode(t, err, clearhouse.EFORBIDDEN)
		if again, _ := id.UserByID(ctx, bea.ID); again.DisabledAt == nil {
			t.Fatal("the provider enabled an account an operator disabled")
		}
	})
}

func TestProviderLoginIsTakenOnceByItsBrowserBeforeItExpires(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, clock := context.Background(), storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
		state, browser, err := id.BeginProviderLogin(ctx, "n", "v", "/orders")
		if err != nil {
			t.Fatal(err)
		}
		_, err = id.TakeProviderLogin(ctx, state, "another browser")
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
		l, err := id.TakeProviderLogin(ctx, state, browser)
		if err != nil || l.Nonce != "n" || l.Verifier != "v" || l.Next != "/orders" {
			t.Fatalf("take: %+v %v", l, err)
		}
		_, err = id.TakeProviderLogin(ctx, state, browser)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)

		state, browser, _ = id.BeginProviderLogin(ctx, "n", "v", "/")
		clock.Advance(identity.LoginTTL)
		_, err = id.TakeProviderLogin(ctx, state, browser)
		wantCode(t, err, clearhouse.EUNAUTHORIZED)
	})
}
