package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

func auctionIDArg(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, &exitError{2, fmt.Errorf("%q is not an auction id", s)}
	}
	return id, nil
}

func newAuctionPreviewCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "preview AUCTION",
		Short: "Run the clock on an open auction's orders and publish preliminary prices (what the scheduled job does)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := auctionIDArg(args[0])
			if err != nil {
				return err
			}
			return withDB(cmd, func(db *store.DB) error {
				run, err := server.MarketFor(db).Preview(cmd.Context(), id)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "auction %d: preliminary run of %d orders, %d rounds, converged: %v\n", id, run.Orders, run.Rounds, run.Converged)
				return nil
			})
		},
	}
	return cmd
}

func newAuctionCloseCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "close AUCTION",
		Short: "Run the binding clock on an auction and settle it now (safe to repeat: a settled auction is left as it is)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := auctionIDArg(args[0])
			if err != nil {
				return err
			}
			return withDB(cmd, func(db *store.DB) error {
				m := server.MarketFor(db)
				run, err := m.Close(cmd.Context(), id)
				if err != nil {
					return err
				}
				a, err := m.Auction(cmd.Context(), id)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "auction %d is %s: binding run of %d orders, %d rounds\n", id, a.Status, run.Orders, run.Rounds)
				if a.Status == exchange.AuctionFailed {
					return &exitError{1, fmt.Errorf("auction %d failed: %s", id, a.Failure)}
				}
				return nil
			})
		},
	}
	return cmd
}

func newAuctionTickCmd() *cobra.Command {
	var cfg server.Config
	cmd := &cobra.Command{
		Use:   "tick",
		Short: "Run the market's scheduled job once: open, preview, close and schedule auctions as due; charge reservations for the slots that passed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.ValidateCadence(); err != nil {
				return &exitError{2, err}
			}
			return withDB(cmd, func(db *store.DB) error {
				var rep exchange.TickReport
				var plan fleet.PlanTick
				ran, err := db.Exclusive(cmd.Context(), server.TickLock, func() error {
					m := server.MarketFor(db)
					var market, reservations error
					rep, market = m.Tick(cmd.Context(), cfg.Cadence())
					plan, reservations = fleet.NewReservations(db, m.Ledger(), time.Now, fleet.DefaultPlanConfig).Tick(cmd.Context())
					return errors.Join(market, reservations)
				})
				if err != nil {
					return err
				}
				if !ran {
					fmt.Fprintln(cmd.OutOrStdout(), "another server is running the job; nothing done")
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "opened %v, previewed %v, closed %v", rep.Opened, rep.Previewed, rep.Closed)
				if rep.Scheduled != nil {
					fmt.Fprintf(cmd.OutOrStdout(), ", scheduled auction %d opening %s", rep.Scheduled.ID, rep.Scheduled.OpensAt.Format(time.RFC3339))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "; reservations charged %s, ended %v\n", plan.Charged, plan.Done)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.AuctionEvery, "auction-every", 24*time.Hour, "time from one auction's opening to the next's (0: schedule none)")
	f.DurationVar(&cfg.AuctionWindow, "auction-window", time.Hour, "how long each auction takes bids")
	f.DurationVar(&cfg.PreviewEvery, "preview-every", 5*time.Minute, "refresh preliminary prices older than this")
	f.Float64Var(&cfg.FinalSeconds, "final-round-seconds", auction.DefaultFinalSeconds, "time limit of the final round after the binding clock of each auction scheduled automatically")
	f.BoolVar(&cfg.NoFinalRound, "no-final-round", false, "auctions scheduled automatically keep the clock's allocation: no final round")
	return cmd
}
