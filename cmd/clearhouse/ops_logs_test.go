package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A server run with secrets everywhere (a PostgreSQL DSN with a password when
// CLEARHOUSE_TEST_POSTGRES is set, an SMTP password, a metrics token, an agent's
// token, a user's password at sign-in) logs none of them, at debug level in JSON,
// and every line is a JSON object; nor does a start that fails on a DSN with a
// password.
func TestLogsHoldNoSecret(t *testing.T) {
	const dbPassword, smtpPassword, userPassword = "pg-Secret-Pass-42", "smtp-Secret-Pass-42", "user-Secret-Pass-42"
	dsn := storetest.MigratedFile(t)
	if base := storetest.PostgresURL(t); base != "" {
		u, _ := url.Parse(freshPostgresSchema(t, base))
		u.User = url.UserPassword(u.User.Username(), dbPassword) // the test server trusts local connections
		dsn = u.String()
	}
	t.Setenv("CLEARHOUSE_SMTP_PASSWORD", smtpPassword)
	t.Setenv("CLEARHOUSE_METRICS_TOKEN", testMetricsToken)
	ctx, stop := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", dsn, "--log-format", "json", "--log-level", "debug",
			"--smtp-addr", "127.0.0.1:1", "--smtp-from", "market@example.com", "--smtp-user", "market", "--tick", "1s"}, strings.NewReader(""), &out, &errOut)
	}()
	base := waitServing(t, &out, done)

	db, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	market := exchange.NewMarket(db, nil, time.Now)
	if _, err := market.AddCluster(context.Background(), exchange.Cluster{ID: "us-east"}); err != nil {
		t.Fatal(err)
	}
	agentToken, _, err := identity.NewIdentity(db, time.Now, 0).IssueAgentToken(context.Background(), "us-east", "agent")
	if err != nil {
		t.Fatal(err)
	}
	for _, token := range []string{agentToken, testMetricsToken} {
		for _, path := range []string{"/api/v1/clusters/us-east/allocation", "/metrics", "/api/v1/market"} {
			get(t, base+path, token)
		}
	}
	res, err := http.PostForm(base+"/login", url.Values{"email": {"nobody@example.com"}, "password": {userPassword}})
	if err == nil {
		res.Body.Close()
	}
	// A tick runs (a job's summary at Info) and the requests are logged: the test
	// waits for the lines themselves, not for a time they usually take.
	waitLogged(t, &errOut, done, `"msg":"request"`, `"msg":"market tick`)
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d: %s", code, errOut.String())
	}

	logs := errOut.String()
	for _, secret := range []string{dbPassword, smtpPassword, userPassword, testMetricsToken, agentToken, agentToken[:12]} {
		if strings.Contains(logs, secret) || strings.Contains(out.String(), secret) {
			t.Errorf("a secret (%.6s...) is in the output", secret)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs), "\n")
	for _, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("not a JSON log line: %q", l)
		}
	}
	for _, want := range []string{`"msg":"request"`, `"msg":"market tick`, `"msg":"shutting down"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %s in the logs:\n%s", want, logs)
		}
	}

	// A start that fails names the database without its password.
	code, stdout, stderr := runCLI(t, "", "serve", "--addr", "127.0.0.1:0", "--db", "postgres://clearhouse:"+dbPassword+"@127.0.0.1:1/clearhouse?sslmode=disable")
	if code == 0 || strings.Contains(stderr+stdout, dbPassword) || !strings.Contains(stderr, "127.0.0.1") {
		t.Errorf("a failed start: %d %q", code, stderr)
	}
}

var servingLine = regexp.MustCompile(`serving on (http://\S+)`)

// waitServing waits for serve's "serving on" line and returns the URL.
func waitServing(t *testing.T, out *syncBuffer, done chan int) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := servingLine.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before serving", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("serve did not start")
	return ""
}

// waitLogged waits until serve has logged every one of want (up to a minute, a
// bound for a stuck server, not a figure the test asserts).
func waitLogged(t *testing.T, logs *syncBuffer, done chan int, want ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return strings.Contains(logs.String(), w) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve logged no %q within a minute:\n%s", missing, logs.String())
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before logging %q", code, missing)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
