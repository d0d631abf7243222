package main

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/costs"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
)

func newExportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Export the market's records for other tools",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newExportFocusCmd())
	return cmd
}

func newExportFocusCmd() *cobra.Command {
	var from, to, out string
	cmd := &cobra.Command{
		Use:   "focus",
		Short: "Write the teams' charges as a FOCUS 1.0 cost and usage CSV",
		Long: `Write every charge the ledger made to a team's budget in a period as a CSV in the
FinOps Open Cost and Usage Specification (FOCUS) 1.0, the format FinOps tools load:
auction payments (and receipts for quota sold, as credits), holding charges,
reservations and best-effort jobs, one row per charge and pool, each team a
sub-account and each pool a resource. BilledCost sums to the ledger's spend for the
period to the micro-dollar. docs/formats/focus.md lists the columns.

--from and --to take a month (YYYY-MM) or a day (YYYY-MM-DD), both included, UTC;
the default is the month under way.`,
		Example: `  clearhouse export focus --from 2026-10 --to 2026-11 --out focus.csv`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start, end, err := exportPeriod(from, to, time.Now().UTC())
			if err != nil {
				return &exitError{2, err}
			}
			return withDB(cmd, func(db *store.DB) error {
				l := ledger.New(db, time.Now)
				m := exchange.NewMarket(db, l, time.Now)
				r := costs.NewReader(m, fleet.NewReservations(db, l, time.Now, fleet.DefaultPlanConfig),
					besteffort.New(db, l, time.Now, besteffort.DefaultConfig))
				var buf bytes.Buffer
				if err := writeFOCUS(cmd, &buf, r, m, start, end); err != nil {
					return err
				}
				return writeOut(cmd, out, buf.Bytes())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "first month (YYYY-MM) or day (YYYY-MM-DD) of the period (default: this month)")
	f.StringVar(&to, "to", "", "last month or day of the period, included (default: today)")
	f.StringVar(&out, "out", "-", "the CSV file to write, - for standard output")
	return cmd
}

// writeFOCUS writes the FOCUS rows of every charge posted in [start, end).
func writeFOCUS(cmd *cobra.Command, buf *bytes.Buffer, r *costs.Reader, m *exchange.Market, start, end time.Time) error {
	ctx := cmd.Context()
	lines, err := r.Lines(ctx, "", start, end)
	if err != nil {
		return err
	}
	acct := costs.FOCUSAccount{Teams: map[string]string{}, Clusters: map[string]string{}}
	teams, err := m.Teams(ctx)
	if err != nil {
		return err
	}
	for _, t := range teams {
		acct.Teams[t.ID] = t.Name
	}
	clusters, err := m.Clusters(ctx)
	if err != nil {
		return err
	}
	for _, c := range clusters {
		acct.Clusters[c.ID] = c.Name
	}
	return costs.WriteFOCUS(buf, lines, acct)
}

// exportPeriod reads --from and --to, each a month or a day, into [start, end):
// a month from its first day, to the end of its last; the default is the month of
// now up to the end of today.
func exportPeriod(from, to string, now time.Time) (start, end time.Time, err error) {
	read := func(flag, v string) (time.Time, bool, error) {
		v = strings.TrimSpace(v)
		if t, err := time.Parse("2006-01-02", v); err == nil {
			return t, false, nil
		}
		if t, err := time.Parse("2006-01", v); err == nil {
			return t, true, nil
		}
		return time.Time{}, false, fmt.Errorf("--%s: give a month as YYYY-MM or a day as YYYY-MM-DD, e.g. 2026-11 or 2026-11-15", flag)
	}
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	start, end = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC), today.AddDate(0, 0, 1)
	if from != "" {
		if start, _, err = read("from", from); err != nil {
			return start, end, err
		}
	}
	if to != "" {
		t, month, err := read("to", to)
		if err != nil {
			return start, end, err
		}
		if end = t.AddDate(0, 0, 1); month {
			end = t.AddDate(0, 1, 0)
		}
	}
	if !end.After(start) {
		return start, end, fmt.Errorf("--to: the period ends before it starts")
	}
	return start, end, nil
}
