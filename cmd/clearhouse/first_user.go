package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
)

// firstUserHint is what serve prints on a database with no users, where nobody can
// sign in: the exact command that creates the first operator, who then adds clusters
// and pools on /operate, and teams and users with the same commands. "" when there are users. dbFromEnv says the database
// came from CLEARHOUSE_DB, which the command then reads as serve did.
func firstUserHint(ctx context.Context, app *server.App, dbFromEnv bool) (string, error) {
	users, err := app.Identity.Accounts(ctx, "", 1)
	if err != nil || len(users) > 0 {
		return "", err
	}
	return "No one can sign in yet: the database has no users. Create the first operator " +
		"(the command prints a generated password; the operator then adds clusters and pools on /operate, " +
		"and teams and other users with clearhouse team add and clearhouse user add):\n" +
		"  " + firstUserCommand(app.Config().DB, dbFromEnv), nil
}

// firstUserCommand is `clearhouse user add` for the first operator on dsn: with
// --db unless the database is the default or comes from CLEARHOUSE_DB. A password in
// a PostgreSQL URL is not printed: the command shows where it goes.
func firstUserCommand(dsn string, dbFromEnv bool) string {
	db := ""
	if dsn != defaultDB && !dbFromEnv {
		db = " --db " + shellQuote(store.Redact(dsn))
	}
	return fmt.Sprintf("clearhouse user add%s --email you@example.com --role operator", db)
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain path and
// URL characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
