package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/e2e/e2etest"
	"github.com/clearhouse/clearhouse/server"
)

// cliEnv makes the test binary run the clearhouse command line given in it (its
// arguments separated by \x1f) instead of the tests: the auction benchmark times the
// real command in a child process.
const cliEnv = "CLEARHOUSE_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	if args := os.Getenv(cliEnv); args != "" {
		server.PasswordCost = bcrypt.MinCost // as the tests' own (e2etest.Main)
		os.Exit(run(context.Background(), strings.Split(args, "\x1f"), os.Stdin, os.Stdout, os.Stderr))
	}
	// Passwords at bcrypt's minimum cost; the demo template of
	// TestDemoRestartSaysHowToSignIn removed after the tests.
	e2etest.Main(m)
}
