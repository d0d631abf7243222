package identity_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// trail is every row of the trail, oldest first.
func trail(t *testing.T, db *store.DB) []audit.Row {
	t.Helper()
	rows, err := audit.NewTrail(db).List(context.Background(), audit.Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows
}

// expectRows checks that the calls since n rows recorded exactly want (action on
// object, before and after exactly as given) and returns the new count.
func expectRows(t *testing.T, db *store.DB, n int, want ...[4]string) int {
	t.Helper()
	rows := trail(t, db)
	got := rows[n:]
	if len(got) != len(want) {
		var names []string
		for _, r := range got {
			names = append(names, r.Action+" "+r.Object)
		}
		t.Fatalf("%d new rows %v; want %d", len(got), names, len(want))
	}
	for i, w := range want {
		r := got[i]
		if r.Action+" "+r.Object != w[0] || r.BeforeJSON != w[1] || !strings.Contains(r.AfterJSON, w[2]) || w[2] == "" && r.AfterJSON != "" {
			t.Errorf("row %d = %s %s\n before %s\n after  %s\nwant %s\n before %s\n after containing %s", r.Seq, r.Action, r.Object, r.BeforeJSON, r.AfterJSON, w[0], w[1], w[2])
		}
		if w[3] != "" && r.Actor != w[3] {
			t.Errorf("row %d actor %q; want %q", r.Seq, r.Actor, w[3])
		}
	}
	return len(rows)
}

// TestEveryAccessChangeLeavesOneTrailRow: adding a user, a password, disabling and
// enabling, issuing and revoking tokens each record one row with the values before
// and after (never a secret); refused calls and calls that change nothing record none.
func TestEveryAccessChangeLeavesOneTrailRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
		ctx := audit.WithActor(context.Background(), audit.Actor{Kind: audit.KindCLI, Name: "root"})
		addTeam(t, db, "ml")
		addCluster(t, db, "c1")

		if _, err := id.AddUser(ctx, identity.NewUser{Email: "not an address", Role: identity.RoleMember, TeamID: "ml"}); err == nil {
			t.Fatal("a bad email was accepted")
		}
		n := expectRows(t, db, 0)
		ana, err := id.AddUser(ctx, identity.NewUser{Email: "ana@x.io", Role: identity.RoleMember, TeamID: "ml"})
		if err != nil {
			t.Fatal(err)
		}
		obj := fmt.Sprintf("user:%d ana@x.io", ana.ID)
		n = expectRows(t, db, n, [4]string{"user.add " + obj, "", `{"role":"member","team":"ml","source":"local","disabled":false}`, "cli root"})

		wantCode(t, id.SetPassword(ctx, ana.ID, "short"), "invalid")
		n = expectRows(t, db, n)
		if err := id.SetPassword(ctx, ana.ID, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
		n = expectRows(t, db, n, [4]string{"user.password " + obj, "", "", ""})

		wantCode(t, id.DisableUser(ctx, 9999), "not_found")
		n = expectRows(t, db, n)
		for range 2 { // the second changes nothing
			if err := id.DisableUser(ctx, ana.ID); err != nil {
				t.Fatal(err)
			}
		}
		n = expectRows(t, db, n, [4]string{"user.disable " + obj, `{"role":"member","team":"ml","source":"local","disabled":false}`, `"disabled":true`, ""})
		for range 2 {
			if err := id.EnableUser(ctx, ana.ID); err != nil {
				t.Fatal(err)
			}
		}
		n = expectRows(t, db, n, [4]string{"user.enable " + obj, `{"role":"member","team":"ml","source":"local","disabled":true}`, `"disabled":false`, ""})

		if _, _, err := id.IssueToken(ctx, ana.ID, strings.Repeat("x", 1000)); err == nil {
			t.Fatal("a token with a 1,000-byte name was issued")
		}
		if _, _, err := id.IssueAgentToken(ctx, "no-such-cluster", "agent"); err == nil {
			t.Fatal("an agent token for no cluster was issued")
		}
		n = expectRows(t, db, n)
		secret, tok, err := id.IssueToken(ctx, ana.ID, "ci")
		if err != nil {
			t.Fatal(err)
		}
		_, agentTok, err := id.IssueAgentToken(ctx, "c1", "agent")
		if err != nil {
			t.Fatal(err)
		}
		n = expectRows(t, db, n,
			[4]string{fmt.Sprintf("token.issue token:%d", tok.ID), "", fmt.Sprintf(`{"name":"ci","scope":"api","user":%d}`, ana.ID), ""},
			[4]string{fmt.Sprintf("token.issue token:%d", agentTok.ID), "", `{"name":"agent","scope":"agent","cluster":"c1"}`, ""})
		for _, r := range trail(t, db) {
			if strings.Contains(r.AfterJSON, secret) || strings.Contains(r.AfterJSON, "hash") {
				t.Fatalf("the trail holds a token's secret or hash: %s", r.AfterJSON)
			}
		}

		if _, err := id.RevokeToken(ctx, 9999); err == nil {
			t.Fatal("revoked a token that does not exist")
		}
		n = expectRows(t, db, n)
		for range 2 {
			if _, err := id.RevokeToken(ctx, tok.ID); err != nil {
				t.Fatal(err)
			}
		}
		expectRows(t, db, n, [4]string{fmt.Sprintf("token.revoke token:%d", tok.ID), fmt.Sprintf(`{"name":"ci","scope":"api","user":%d}`, ana.ID), `"revoked":"2026-01-01T00:00:00Z"`, ""})
		if ps, err := audit.NewTrail(db).Verify(context.Background()); err != nil || len(ps) != 0 {
			t.Errorf("Verify = %v, %v", ps, err)
		}
	})
}

// TestProviderSignInRecordsAccessChanges: the group mapping applied at sign-in
// records the access it gives or takes, as the person signing in from the request's
// address; a sign-in that changes nothing records nothing.
func TestProviderSignInRecordsAccessChanges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		id := identity.NewIdentity(db, clock.Now, bcrypt.MinCost)
		ctx := audit.WithActor(context.Background(), audit.Actor{Kind: audit.KindSystem, Name: "anonymous", Address: "198.51.100.4"})
		addTeam(t, db, "ml")
		addTeam(t, db, "ads")
		m := identity.GroupMapping{Rules: []identity.GroupRule{{Group: "ml-owners", Role: identity.RoleOwner, Team: "ml"},
			{Group: "ml", Role: identity.RoleMember, Team: "ml"}, {Group: "ads", Role: identity.RoleMember, Team: "ads"}}}
		person := func(groups ...string) identity.ProviderPerson {
			return identity.ProviderPerson{Issuer: "https://idp", Subject: "b1", Email: "bea@x.io", EmailVerified: true, Groups: groups}
		}
		const who = "provider sign-in bea@x.io"
		if _, err := id.SignInFromProvider(ctx, identity.ProviderPerson{Issuer: "https://idp", Subject: "x", Email: "no address"}, m); err == nil {
			t.Fatal("a sign-in without an email address succeeded")
		}
		n := expectRows(t, db, 0)
		bea, err := id.SignInFromProvider(ctx, person("ml"), m)
		if err != nil {
			t.Fatal(err)
		}
		obj := fmt.Sprintf("user:%d bea@x.io", bea.ID)
		n = expectRows(t, db, n, [4]string{"user.provider_access " + obj, "", `{"role":"member","team":"ml","source":"provider","group":"ml","disabled":false}`, who})
		if r := trail(t, db)[n-1]; r.Address != "198.51.100.4" {
			t.Errorf("address %q; want the request's", r.Address)
		}
		if _, err := id.SignInFromProvider(ctx, person("ml"), m); err != nil {
			t.Fatal(err)
		}
		n = expectRows(t, db, n) // the same groups: nothing changed
		if _, err := id.SignInFromProvider(ctx, person("ads", "ml-owners"), m); err != nil {
			t.Fatal(err)
		}
		n = expectRows(t, db, n, [4]string{"user.provider_access " + obj,
			`{"role":"member","team":"ml","source":"provider","group":"ml","disabled":false}`,
			`{"role":"owner","team":"ml","source":"provider","group":"ml-owners","disabled":false}`, who})
		if _, err := id.SignInFromProvider(ctx, person("unmapped"), m); err == nil {
			t.Fatal("a sign-in with no mapped group succeeded")
		}
		n = expectRows(t, db, n, [4]string{"user.provider_access " + obj,
			`{"role":"owner","team":"ml","source":"provider","group":"ml-owners","disabled":false}`,
			`{"role":"owner","team":"ml","source":"revoked","group":"ml-owners","disabled":true}`, who})
		if _, err := id.SignInFromProvider(ctx, person("unmapped"), m); err == nil {
			t.Fatal("a second sign-in with no mapped group succeeded")
		}
		expectRows(t, db, n) // already revoked
	})
}
