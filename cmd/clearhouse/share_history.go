package main

import (
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
