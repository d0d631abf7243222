package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// TestCredentialCommands resets a password, disables and enables a user, and issues,
// lists and revokes tokens, on a SQLite file.
func TestCredentialCommands(t *testing.T) {
	db := storetest.MigratedFile(t) // migrate then finds nothing pending
	must := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errOut := runCLI(t, stdin, append(args, "--db", db)...)
		if code != 0 {
			t.Fatalf("%v: code %d, stderr %q", args, code, errOut)
		}
		return out
	}
	must("", "migrate")
	must("", "team", "add", "--id", "search")
	must("first password!\n", "user", "add", "--email", "ana@x.io", "--role", "member", "--team", "search", "--password-stdin")

	out := must("", "user", "password", "--email", "ana@x.io")
	if !regexp.MustCompile(`(?m)^password: \S{20}$`).MatchString(out) || !strings.Contains(out, "sessions have ended") {
		t.Fatalf("user password: %q", out)
	}
	if out := must("a second password\n", "user", "password", "--email", "ana@x.io", "--password-stdin"); strings.Contains(out, "password:") {
		t.Fatalf("a password from stdin is printed: %q", out)
	}

	out = must("", "user", "token", "--email", "ana@x.io", "--name", "ci")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], "chu_") || !strings.Contains(out, "expires "+time.Now().UTC().Add(90*24*time.Hour).Format(time.DateOnly)) {
		t.Fatalf("user token (90 days by default): %q", out)
	}
	if out = must("", "user", "token", "--email", "ana@x.io", "--name", "forever", "--expires", "never"); !strings.Contains(out, "never expires") {
		t.Fatalf("user token --expires never: %q", out)
	}
	twelveHours := must("", "user", "token", "--email", "ana@x.io", "--expires", "12h")
	if !strings.Contains(twelveHours, "expires ") {
		t.Fatalf("user token --expires 12h: %q", twelveHours)
	}
	for _, bad := range []string{"0d", "-3d", "forever", "10000d", "30s"} {
		code, out, errOut := runCLI(t, "", "user", "token", "--email", "ana@x.io", "--expires", bad, "--db", db)
		if code != 2 || out != "" || !strings.Contains(errOut, "--expires") {
			t.Errorf("--expires %s: code %d, stdout %q, stderr %q", bad, code, out, errOut)
		}
	}
	out = must("", "user", "token", "list")
	if strings.Count(out, "ana@x.io") != 3 || !strings.Contains(out, `"ci"`) || strings.Count(out, "live") != 3 || strings.Contains(out, "chu_") {
		t.Fatalf("user token list: %q", out)
	}
	if out = must("", "user", "token", "revoke", "--id", "1"); !strings.Contains(out, `token 1 "ci" is revoked`) {
		t.Fatalf("user token revoke: %q", out)
	}
	must("", "user", "token", "revoke", "--id", "1") // again: no change, no error
	if out = must("", "user", "token", "list", "--email", "ana@x.io"); strings.Count(out, "revoked") != 1 || strings.Count(out, "live") != 2 {
		t.Fatalf("after revoking: %q", out)
	}
	if code, _, _ := runCLI(t, "", "user", "token", "revoke", "--id", "99", "--db", db); code != 1 {
		t.Fatalf("revoking an unknown token: code %d", code)
	}
	if code, _, errOut := runCLI(t, "", "user", "token", "revoke", "--db", db); code != 2 || !strings.Contains(errOut, "--id") {
		t.Fatalf("revoke without --id: code %d %q", code, errOut)
	}

	// A session and the live token work until the user is disabled.
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := identity.NewIdentity(st, time.Now, 0)
	ana, _ := id.UserByEmail(context.Background(), "ana@x.io")
	session, _, err := id.StartSession(context.Background(), ana.ID)
	if err != nil {
		t.Fatal(err)
	}
	token := twelveHours[strings.LastIndex(strings.TrimSpace(twelveHours), "\n")+1:]
	token = strings.TrimSpace(token)
	if _, _, err := id.TokenUser(context.Background(), token); err != nil {
		t.Fatalf("the 12h token before disabling: %v", err)
	}
	if out = must("", "user", "disable", "--email", "ana@x.io"); !strings.Contains(out, "disabled ana@x.io") {
		t.Fatalf("user disable: %q", out)
	}
	if _, _, err := id.SessionUser(context.Background(), session); err == nil {
		t.Fatal("a disabled user's session goes on")
	}
	if _, _, err := id.TokenUser(context.Background(), token); err == nil {
		t.Fatal("a disabled user's token works")
	}
	if code, _, errOut := runCLI(t, "", "user", "token", "--email", "ana@x.io", "--db", db); code == 0 || !strings.Contains(errOut, "disabled") {
		t.Fatalf("a token for a disabled user: code %d %q", code, errOut)
	}
	if out = must("", "user", "enable", "--email", "ana@x.io"); !strings.Contains(out, "enabled ana@x.io") {
		t.Fatalf("user enable: %q", out)
	}
	must("", "user", "token", "--email", "ana@x.io")
	if code, _, _ := runCLI(t, "", "user", "disable", "--email", "nobody@x.io", "--db", db); code == 0 {
		t.Fatal("disabled an unknown user")
	}
}
