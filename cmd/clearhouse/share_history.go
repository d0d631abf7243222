package main

import (
	"context"
	"fmt"
	"time"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

// newShareHistoryCmd records the idle-capacity history point, as the scheduled job does.
func newShareHistoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Record every team's contribution, utility and priority per pool for the current 15-minute interval (once per interval), and prune old points, as the scheduled job does",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				be := besteffort.New(db, ledger.New(db, time.Now), time.Now, besteffort.DefaultConfig)
				rep, err := be.RecordHistory(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "history at %s: %d points recorded, %d pruned\n", rep.At.Format(time.RFC3339), rep.Recorded, rep.Pruned)
				return nil
			})
		},
	}
	return cmd
}

// historySchedule runs the history job at the start of every HistoryInterval of
// the clock (minutes 0, 15, 30 and 45, UTC), not every interval from the server's
// start: a point is stamped with the interval the job runs in, so a job started near
// an interval's end and run late would have stamped the next one and left a gap.
const historySchedule = "*/15 * * * *"

// RunHistory runs the history job once. Every server may run it: a point is
// recorded once per interval whichever server takes it first.
func (a *App) RunHistory(ctx context.Context) error {
	return a.runJob(ctx, jobHistory, a.history)
}

func (a *App) history(ctx context.Context) (bool, error) {
	rep, err := a.Idle.RecordHistory(ctx)
	if err != nil {
		return true, err
	}
	a.log.Info("idle history recorded", "at", rep.At, "points", rep.Recorded, "pruned", rep.Pruned)
	return true, nil
}
