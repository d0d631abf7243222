package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/store/storetest"
)

// runCLI runs the binary's command line in-process and returns exit code, stdout, stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpListsTheBinary(t *testing.T) {
	code, out, _ := runCLI(t, "", "--help")
	if code != 0 || !strings.Contains(out, "compute quota") {
		t.Fatalf("--help: code %d, output %q", code, out)
	}
}

func TestUnknownCommandFails(t *testing.T) {
	code, _, errOut := runCLI(t, "", "no-such-verb")
	if code == 0 || !strings.Contains(errOut, "unknown command") || !strings.Contains(errOut, "clearhouse --help") {
		t.Fatalf("unknown verb: code %d, stderr %q (want a pointer to --help)", code, errOut)
	}
}

// An unknown verb is an error whatever comes with it: before issue 36 `clearhouse
// nosuch --help` and `clearhouse auction nosuch` printed a group's help and exited 0.
// Help for commands that exist still exits 0.
func TestUnknownCommandWithHelpFails(t *testing.T) {
	for _, args := range [][]string{{"no-such-verb", "--help"}, {"no-such-verb", "-h"}, {"auction", "no-such-verb"},
		{"auction", "no-such-verb", "--help"}, {"--db", "x.db", "user", "no-such-verb"}, {"help", "no-such-verb"}, {"help", "auction", "no-such-verb"}} {
		code, out, errOut := runCLI(t, "", args...)
		if code == 0 || out != "" || !strings.Contains(errOut, `unknown command "no-such-verb"`) || !strings.Contains(errOut, "clearhouse --help") {
			t.Errorf("%v: code %d, stdout %.60q, stderr %q", args, code, out, errOut)
		}
	}
	for _, args := range [][]string{{"--help"}, {"auction", "--help"}, {"auction"}, {"help", "auction"}, {"user", "token", "list", "--help"}} {
		if code, out, errOut := runCLI(t, "", args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: code %d, stdout %.60q, stderr %q", args, code, out, errOut)
		}
	}
}

// A port another program holds fails, with exit status 1, with a pointer to --addr.
func TestServeOnATakenPortSuggestsAddr(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	code, _, errOut := runCLI(t, "", "serve", "--addr", l.Addr().String(), "--db", storetest.MigratedFile(t), "--auction-every", "0")
	if code != 1 || !strings.Contains(errOut, "address already in use") || !strings.Contains(errOut, "--addr") {
		t.Fatalf("serve on a taken port: code %d, stderr %q (want 1 and a pointer to --addr)", code, errOut)
	}
	// The example it gives is free: serving there would work.
	_, after, _ := strings.Cut(errOut, "for example --addr ")
	suggested, _, _ := strings.Cut(after, ",")
	if suggested == l.Addr().String() {
		t.Fatalf("the hint suggests the taken address %s", suggested)
	}
	free, err := net.Listen("tcp", suggested)
	if err != nil {
		t.Fatalf("the suggested address %q is not free: %v", suggested, err)
	}
	free.Close()
}

func TestBindEnvFillsUnsetFlagsOnly(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	db := cmd.Flags().String("db", "default.db", "")
	addr := cmd.Flags().String("listen-addr", ":1", "")
	if err := cmd.Flags().Parse([]string{"--db", "flag.db"}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CLEARHOUSE_DB": "env.db", "CLEARHOUSE_LISTEN_ADDR": ":2"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := bindEnv(cmd, lookup); err != nil {
		t.Fatal(err)
	}
	if *db != "flag.db" || *addr != ":2" {
		t.Fatalf("db=%q addr=%q: the flag must win and the environment fill the rest", *db, *addr)
	}
}

func TestBindEnvRejectsBadValues(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().Int("rounds", 1, "")
	lookup := func(k string) (string, bool) { return "many", k == "CLEARHOUSE_ROUNDS" }
	if err := bindEnv(cmd, lookup); err == nil || !strings.Contains(err.Error(), "CLEARHOUSE_ROUNDS") {
		t.Fatalf("want an error naming the variable, got %v", err)
	}
}

func TestServeDoesNotPrintTheDatabasePassword(t *testing.T) {
	msg := servingMessage("http://127.0.0.1:8080", "postgres://clearhouse:s3cret-pw@db:5432/market")
	if strings.Contains(msg, "s3cret-pw") || !strings.Contains(msg, "postgres://clearhouse:xxxxx@db:5432/market") {
		t.Fatalf("serve prints %q", msg)
	}
	code, _, errOut := runCLI(t, "", "serve", "--addr", "127.0.0.1:0", "--db", "postgres://ana:s3cret-pw@127.0.0.1:1/market?sslmode=disable&connect_timeout=2")
	if code == 0 || strings.Contains(errOut, "s3cret-pw") || !strings.Contains(errOut, "xxxxx") {
		t.Fatalf("serve on an unreachable database: code %d, stderr %q", code, errOut)
	}
}

func TestServeRefusesABadPublicURL(t *testing.T) {
	for _, bad := range []string{"ftp://clearhouse.example.com", "clearhouse.example.com", "https://"} {
		code, _, errOut := runCLI(t, "", "serve", "--addr", "127.0.0.1:0", "--db", t.TempDir()+"/c.db", "--public-url", bad)
		if code == 0 || !strings.Contains(errOut, "--public-url") {
			t.Errorf("--public-url %q: code %d, stderr %q", bad, code, errOut)
		}
	}
}
