package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/store"
)

// cliActor is who the audit trail records for a change made from the command line:
// the operating-system user running it (USER when the user database has no name).
func cliActor() audit.Actor {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return audit.Actor{Kind: audit.KindCLI, Name: name}
}

// recordRestore appends the restore to the trail of the restored database db (the
// staged copy of backup, verified whole), so the trail says who put it in place of
// path and from which file. A backup from a release before the trail has no trail
// table: nothing is recorded there, and the restore is still printed.
func recordRestore(ctx context.Context, db *store.DB, backup, path string) error {
	if !db.Write.Migrator().HasTable("audit_head") {
		return nil
	}
	return db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return audit.Record(ctx, tx, audit.Event{Action: "database.restore", Object: "database:" + path,
			After: map[string]string{"backup": backup}})
	})
}

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the audit trail: who changed money, quota or the market's rules, when and how",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newAuditExportCmd())
	return cmd
}

func newAuditExportCmd() *cobra.Command {
	var format, from, to string
	var f audit.Filter
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the audit trail, oldest first, as CSV or JSON lines",
		Long: `Write the rows of the audit trail the filters select, oldest first, to standard
output: CSV (--format csv, the default; text cells made safe for spreadsheets) or JSON
lines (--format jsonl; each row with its values before and after as JSON, its hash and
the previous row's hash, so an export can be checked on its own). --actor and
--object match a part of the text, ignoring case; --action a name exactly, or every
name it begins when it ends in a dot (--action auction.); --from and --to are UTC
days, both included. 'clearhouse verify' checks that the trail is whole.`,
		Example: `  clearhouse audit export --db clearhouse.db --from 2026-11-01 --to 2026-11-30 > trail.csv
  clearhouse audit export --db clearhouse.db --format jsonl --action budget. --actor fin@example.com`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "csv" && format != "jsonl" {
				return &exitError{2, fmt.Errorf("--format: csv or jsonl, not %q", format)}
			}
			for _, d := range []struct {
				flag, v string
				into    *time.Time
				days    int
			}{{"--from", from, &f.From, 0}, {"--to", to, &f.To, 1}} {
				if d.v == "" {
					continue
				}
				t, err := time.Parse(time.DateOnly, d.v)
				if err != nil {
					return &exitError{2, fmt.Errorf("%s: give a date as YYYY-MM-DD", d.flag)}
				}
				*d.into = t.AddDate(0, 0, d.days)
			}
			return withDB(cmd, func(db *store.DB) error {
				tr := audit.NewTrail(db)
				if format == "jsonl" {
					return tr.WriteJSONLines(cmd.Context(), cmd.OutOrStdout(), f)
				}
				return tr.WriteCSV(cmd.Context(), cmd.OutOrStdout(), f)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "csv", "csv or jsonl")
	fl.StringVar(&f.Actor, "actor", "", "rows whose actor contains this (a person's email, 'token 7', 'cli')")
	fl.StringVar(&f.Action, "action", "", "rows of this action (budget.grant), or of every action it begins when it ends in a dot (budget.)")
	fl.StringVar(&f.Object, "object", "", "rows whose object contains this (team:ml, pool:c1/gpu, auction:12)")
	fl.StringVar(&from, "from", "", "first UTC day, YYYY-MM-DD")
	fl.StringVar(&to, "to", "", "last UTC day, YYYY-MM-DD (included)")
	return cmd
}
