package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/server"
)

// cancelOnWrite is serve's standard output in a test: it keeps what is written and
// ends serve (cancels its context) once the output holds until.
type cancelOnWrite struct {
	mu     sync.Mutex
	b      strings.Builder
	until  string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.until) {
		w.cancel()
	}
	return len(p), nil
}

func (w *cancelOnWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// serveOnce runs serve with args until it has printed its hint for the first user
// (or its serving line, when there is none), then shuts it down; it returns stdout.
func serveOnce(t *testing.T, until string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOnWrite{until: until, cancel: cancel}
	var errb strings.Builder
	code := run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--auction-every", "0"}, args...), strings.NewReader(""), out, &errb)
	if code != 0 {
		t.Fatalf("serve %v: exit %d\n%s\n%s", args, code, out, errb.String())
	}
	return out.String()
}

// A fresh install has a path to its first user: serve on a database with no users
// prints the exact command that creates an operator; that command, run as printed,
// works, and the operator signs in with the password it printed; then serve no
// longer says it.
func TestServeOnAnEmptyDatabaseSaysHowToCreateTheFirstUser(t *testing.T) {
	t.Setenv("CLEARHOUSE_DB", "") // restored after the test; unset during it
	os.Unsetenv("CLEARHOUSE_DB")
	db := filepath.Join(t.TempDir(), "fresh.db")
	out := serveOnce(t, "--role operator", "--db", db)
	i := strings.Index(out, "\n  clearhouse user add") // the command, on a line of its own
	if !strings.Contains(out, "No one can sign in yet") || i < 0 {
		t.Fatalf("serve on an empty database printed:\n%s", out)
	}
	line := strings.TrimSpace(strings.SplitN(out[i+1:], "\n", 2)[0])
	want := "clearhouse user add --db " + db + " --email you@example.com --role operator"
	if line != want {
		t.Fatalf("the command printed is %q, want %q", line, want)
	}
	args := strings.Fields(strings.TrimPrefix(line, "clearhouse "))
	code, added, errOut := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("%s: exit %d %s", line, code, errOut)
	}
	password := strings.TrimPrefix(strings.TrimSpace(added[strings.LastIndex(strings.TrimSpace(added), "\n")+1:]), "password: ")
	app := server.NewApp(server.Config{Addr: "127.0.0.1:0", DB: db, LoginRate: 10, Tick: time.Hour, PreviewEvery: time.Minute}, slog.New(slog.DiscardHandler), time.Now)
	if err := app.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	u, err := app.Identity.Authenticate(context.Background(), "you@example.com", password)
	hint, herr := firstUserHint(context.Background(), app, false)
	app.Close(context.Background())
	if err != nil || u.Role != identity.RoleOperator {
		t.Fatalf("signing in with the printed password (%q from %q): %+v, %v", password, added, u, err)
	}
	if hint != "" || herr != nil {
		t.Errorf("with a user, the hint is %q (%v)", hint, herr)
	}
	if again := serveOnce(t, "Clearhouse is serving", "--db", db); strings.Contains(again, "user add") {
		t.Errorf("serve with a user still prints the hint:\n%s", again)
	}
}

// The command names the database as serve was given it: no --db for the default file
// or one that comes from CLEARHOUSE_DB, a PostgreSQL URL without its password.
func TestFirstUserCommandNamesTheDatabase(t *testing.T) {
	for _, c := range []struct {
		dsn     string
		fromEnv bool
		want    string
	}{
		{defaultDB, false, "clearhouse user add --email you@example.com --role operator"},
		{"/var/lib/clearhouse/c.db", true, "clearhouse user add --email you@example.com --role operator"},
		{"/srv/my market.db", false, "clearhouse user add --db '/srv/my market.db' --email you@example.com --role operator"},
		{"postgres://ch:secret@db:5432/ch?sslmode=disable", false, "clearhouse user add --db 'postgres://ch:xxxxx@db:5432/ch?sslmode=disable' --email you@example.com --role operator"},
	} {
		if got := firstUserCommand(c.dsn, c.fromEnv); got != c.want {
			t.Errorf("%s (env %v): %q, want %q", c.dsn, c.fromEnv, got, c.want)
		}
	}
}
