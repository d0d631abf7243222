package main

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
)

func newUserCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the people who use the market",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newUserAddCmd(), newUserPasswordCmd(), newUserDisableCmd(true), newUserDisableCmd(false), newUserTokenCmd())
	return cmd
}

// withDB opens the configured database, which must be current, for one command.
func withDB(cmd *cobra.Command, fn func(db *store.DB) error) error {
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := server.OpenMigrated(cmd.Context(), dbFlag(cmd), false, log)
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(db)
}

func newUserAddCmd() *cobra.Command {
	var email, name, role, team string
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
			password, generated, err := readOrMakePassword(cmd, passwordStdin)
			if err != nil {
				return err
			}
			return withDB(cmd, func(db *store.DB) error {
				id := identity.NewIdentity(db, time.Now, server.PasswordCost)
				u, err := id.AddUser(cmd.Context(), identity.NewUser{Email: email, Name: name, Role: identity.Role(role), TeamID: team, Password: password})
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
	f.StringVar(&email, "email", "", "the user's email (required)")
	f.StringVar(&name, "name", "", "the user's display name")
	f.StringVar(&role, "role", "member", "member, owner, finance or operator")
	f.StringVar(&team, "team", "", "the team of a member or owner")
	f.BoolVar(&passwordStdin, "password-stdin", false, "read the password from the first line of standard input")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}

// readOrMakePassword reads a password from the first line of standard input, or
// makes a random one (reported as generated, to be printed once).
func readOrMakePassword(cmd *cobra.Command, fromStdin bool) (password string, generated bool, err error) {
	if fromStdin {
		line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
		if err != nil && line == "" {
			return "", false, &exitError{2, fmt.Errorf("--password-stdin: no password on standard input")}
		}
		return strings.TrimRight(line, "\r\n"), false, nil
	}
	var b [15]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:]), true, nil
}
