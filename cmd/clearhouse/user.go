package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

func newUserCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the people who use the market",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newUserAddCmd(), newUserTokenCmd())
	return cmd
}

// withDB opens the configured database, which must be current, for one command.
func withDB(cmd *cobra.Command, dsn string, fn func(db *store.DB) error) error {
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := openMigrated(cmd.Context(), dsn, false, log)
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db)
}

func newUserAddCmd() *cobra.Command {
	var dsn, email, name, role, team string
	var passwordStdin bool
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Add a user with a role (member, owner, finance, operator)",
		Long: `Add a user. Members and owners belong to a team (--team); finance and operators
belong to none. Without --password-stdin a random password is generated and printed
once.`,
		Example: `  clearhouse user add --email ana@example.com --role owner --team search
  echo 'correct horse battery' | clearhouse user add --email fin@example.com --role finance --password-stdin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			password, generated := "", false
			if passwordStdin {
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && line == "" {
					return fmt.Errorf("--password-stdin: no password on standard input")
				}
				password = strings.TrimRight(line, "\r\n")
			} else {
				var b [15]byte
				_, _ = rand.Read(b[:])
				password, generated = base64.RawURLEncoding.EncodeToString(b[:]), true
			}
			return withDB(cmd, dsn, func(db *store.DB) error {
				id := exchange.NewIdentity(db, time.Now, 0)
				u, err := id.AddUser(cmd.Context(), exchange.NewUser{Email: email, Name: name, Role: exchange.Role(role), TeamID: team, Password: password})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added %s (%s", u.Email, u.Role)
				if u.TeamID != "" {
					fmt.Fprintf(cmd.OutOrStdout(), " of team %s", u.TeamID)
				}
				fmt.Fprintln(cmd.OutOrStdout(), ")")
				if generated {
					fmt.Fprintf(cmd.OutOrStdout(), "password: %s\n", password)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "db", defaultDB, "SQLite file or PostgreSQL URL")
	f.StringVar(&email, "email", "", "the user's email (required)")
	f.StringVar(&name, "name", "", "the user's display name")
	f.StringVar(&role, "role", "member", "member, owner, finance or operator")
	f.StringVar(&team, "team", "", "the team of a member or owner")
	f.BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of standard input")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}

func newUserTokenCmd() *cobra.Command {
	var dsn, email, name string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue an API token for a user; the token is printed on the last line",
		Long: `Issue a bearer token for the JSON API that acts as the user, with the user's role.
The token is shown once, on the last line of the output; only its hash is stored.`,
		Example: `  TOKEN=$(clearhouse user token --email ana@example.com | tail -n 1)
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/api/v1/market`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, dsn, func(db *store.DB) error {
				id := exchange.NewIdentity(db, time.Now, 0)
				u, err := id.UserByEmail(cmd.Context(), email)
				if err != nil {
					return err
				}
				if name == "" {
					name = "cli " + time.Now().UTC().Format(time.DateOnly)
				}
				token, _, err := id.IssueToken(cmd.Context(), u.ID, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "token for %s (%s), shown once:\n%s\n", u.Email, u.Role, token)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dsn, "db", defaultDB, "SQLite file or PostgreSQL URL")
	f.StringVar(&email, "email", "", "the user's email (required)")
	f.StringVar(&name, "name", "", "a label for the token")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}
