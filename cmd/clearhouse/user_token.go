package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
)

// maxTokenLifetime bounds --expires: a token that should outlive this is "never".
const maxTokenLifetime = 5 * 365 * 24 * time.Hour

// parseLifetime reads --expires: "never", a number of days ("90d"), or a Go duration
// ("12h"); between one minute and five years.
func parseLifetime(s string) (d time.Duration, never bool, err error) {
	s = strings.TrimSpace(s)
	if s == "never" {
		return 0, true, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, false, fmt.Errorf("--expires %q: give days as 90d, a duration as 12h, or never", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else if d, err = time.ParseDuration(s); err != nil {
		return 0, false, fmt.Errorf("--expires %q: give days as 90d, a duration as 12h, or never", s)
	}
	if d < time.Minute || d > maxTokenLifetime {
		return 0, false, fmt.Errorf("--expires %q: must be between 1m and 1825d (or never)", s)
	}
	return d, false, nil
}

func newUserTokenCmd() *cobra.Command {
	var email, name, expires string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue an API token for a user (printed on the last line); list and revoke tokens",
		Long: `Issue a bearer token for the JSON API that acts as the user, with the user's role.
The token is shown once, on the last line of the output; only its hash is stored.
It expires after --expires (90 days unless told otherwise; "never" only when asked
for). 'clearhouse user token list' shows every token; 'clearhouse user token revoke
--id N' stops one at once.`,
		Example: `  TOKEN=$(clearhouse user token --email ana@example.com | tail -n 1)
  clearhouse user token --email ci@example.com --name nightly --expires 30d
  curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8080/api/v1/market`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if email == "" {
				return &exitError{2, fmt.Errorf("--email: required (or 'token list', 'token revoke')")}
			}
			life, never, err := parseLifetime(expires)
			if err != nil {
				return &exitError{2, err}
			}
			return withUser(cmd, email, func(id *identity.Identity, u identity.User) error {
				if name == "" {
					name = "cli " + time.Now().UTC().Format(time.DateOnly)
				}
				var until *time.Time
				if !never {
					t := time.Now().Add(life).UTC()
					until = &t
				}
				token, t, err := id.IssueTokenUntil(cmd.Context(), u.ID, name, until)
				if err != nil {
					return err
				}
				when := "never expires"
				if until != nil {
					when = "expires " + until.Format("2006-01-02 15:04 UTC")
				}
				fmt.Fprintf(cmd.OutOrStdout(), "token %d %q for %s (%s), %s; shown once:\n%s\n", t.ID, t.Name, u.Email, u.Role, when, token)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&email, "email", "", "the user's email (required)")
	f.StringVar(&name, "name", "", "a label for the token")
	f.StringVar(&expires, "expires", "90d", `how long the token works: days (90d), a duration (12h), or "never"`)
	cmd.AddCommand(newUserTokenListCmd(), newUserTokenRevokeCmd())
	return cmd
}

func newUserTokenListCmd() *cobra.Command {
	var email string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List API tokens (users' and cluster agents'), newest first; never the tokens themselves",
		Example: `  clearhouse user token list
  clearhouse user token list --email ana@example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				id := identity.NewIdentity(db, time.Now, server.PasswordCost)
				f := identity.TokenFilter{Limit: 500}
				if email != "" {
					u, err := id.UserByEmail(cmd.Context(), email)
					if err != nil {
						return err
					}
					f.UserID = u.ID
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tOWNER\tCREATED\tLAST USED\tEXPIRES\tSTATE")
				for {
					page, err := id.Tokens(cmd.Context(), f)
					if err != nil {
						return err
					}
					for _, t := range page {
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, strconv.Quote(t.Name), tokenOwner(t),
							t.CreatedAt.UTC().Format(time.DateOnly), dateOr(t.LastUsedAt, "never"), dateOr(t.ExpiresAt, "never"), tokenState(t, time.Now()))
					}
					if len(page) < f.Limit {
						break
					}
					f.Before = page[len(page)-1].ID
				}
				return w.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&email, "email", "", "only this user's tokens")
	return cmd
}

func tokenOwner(t identity.TokenView) string {
	if t.Scope == identity.ScopeAgent {
		return "agent of " + t.ClusterID
	}
	return t.Owner
}

func tokenState(t identity.TokenView, now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked " + t.RevokedAt.UTC().Format(time.DateOnly)
	case !t.Live(now):
		return "expired"
	}
	return "live"
}

func dateOr(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format("2006-01-02 15:04")
}

func newUserTokenRevokeCmd() *cobra.Command {
	var tokenID int64
	cmd := &cobra.Command{
		Use:     "revoke",
		Short:   "Revoke an API token (ids from 'clearhouse user token list'); it stops working at once",
		Example: `  clearhouse user token revoke --id 12`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tokenID <= 0 {
				return &exitError{2, fmt.Errorf("--id: give the token's id from 'clearhouse user token list'")}
			}
			return withDB(cmd, func(db *store.DB) error {
				id := identity.NewIdentity(db, time.Now, server.PasswordCost)
				t, err := id.RevokeToken(cmd.Context(), tokenID)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "token %d %q is revoked (since %s)\n", t.ID, t.Name, t.RevokedAt.UTC().Format("2006-01-02 15:04 UTC"))
				return nil
			})
		},
	}
	cmd.Flags().Int64Var(&tokenID, "id", 0, "the token's id (required)")
	return cmd
}
