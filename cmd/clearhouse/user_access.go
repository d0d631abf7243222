package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
)

// withUser opens the database and finds the user with the email for one command.
func withUser(cmd *cobra.Command, email string, fn func(id *identity.Identity, u identity.User) error) error {
	return withDB(cmd, func(db *store.DB) error {
		id := identity.NewIdentity(db, time.Now, server.PasswordCost)
		u, err := id.UserByEmail(cmd.Context(), email)
		if err != nil {
			return err
		}
		return fn(id, u)
	})
}

func newUserPasswordCmd() *cobra.Command {
	var email string
	var passwordStdin bool
	cmd := &cobra.Command{
		Use:   "password",
		Short: "Reset a user's password (a new one is generated and printed) and end their sessions",
		Long: `Reset a user's password: without --password-stdin a random password is generated and
printed once. Every browser session of the user ends; their API tokens keep working
(revoke them with 'clearhouse user token revoke').`,
		Example: `  clearhouse user password --email ana@example.com
  echo 'correct horse battery' | clearhouse user password --email ana@example.com --password-stdin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			password, generated, err := readOrMakePassword(cmd, passwordStdin)
			if err != nil {
				return err
			}
			return withUser(cmd, email, func(id *identity.Identity, u identity.User) error {
				if err := id.SetPassword(cmd.Context(), u.ID, password); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "reset the password of %s; their sessions have ended\n", u.Email)
				if generated {
					fmt.Fprintf(cmd.OutOrStdout(), "password: %s\n", password)
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&email, "email", "", "the user's email (required)")
	f.BoolVar(&passwordStdin, "password-stdin", false, "read the new password from the first line of standard input")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}

// newUserDisableCmd is 'user disable' (disable true) or 'user enable'.
func newUserDisableCmd(disable bool) *cobra.Command {
	var email string
	cmd := &cobra.Command{
		Use:   "disable",
		Short: "Disable a user: they cannot sign in, their sessions end and their tokens stop working",
		Long: `Disable a user. They cannot sign in (with a password or through the authenticating
proxy), every session of theirs ends at once and their API tokens are refused until
'clearhouse user enable'. Their orders, reservations and history stay.`,
		Example: `  clearhouse user disable --email ana@example.com`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withUser(cmd, email, func(id *identity.Identity, u identity.User) error {
				if disable {
					if err := id.DisableUser(cmd.Context(), u.ID); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "disabled %s: their sessions have ended and their tokens stop working\n", u.Email)
					return nil
				}
				if err := id.EnableUser(cmd.Context(), u.ID); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "enabled %s: they can sign in, and their unexpired, unrevoked tokens work again\n", u.Email)
				return nil
			})
		},
	}
	if !disable {
		cmd.Use, cmd.Short, cmd.Example = "enable", "Enable a disabled user again", `  clearhouse user enable --email ana@example.com`
		cmd.Long = `Enable a disabled user: they can sign in again, and their API tokens that have
neither expired nor been revoked work again.`
	}
	f := cmd.Flags()
	f.StringVar(&email, "email", "", "the user's email (required)")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}
