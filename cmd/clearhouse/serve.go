package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

// defaultDB is the embedded SQLite file every command uses unless told otherwise.
const defaultDB = "clearhouse.db"

func newServeCmd() *cobra.Command {
	var cfg server.Config
	var logs logFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the web application and the scheduled auction jobs",
		Long: `Run the Clearhouse web application, its JSON API and the scheduled jobs that run
preliminary auction rounds and close and settle auctions.

By default it uses the embedded SQLite file clearhouse.db in the working directory and
applies pending migrations at start. With a PostgreSQL URL in --db several replicas may
share one database; run 'clearhouse migrate' once and start them with --migrate=false.`,
		Example: `  clearhouse serve --demo
  clearhouse serve --addr 0.0.0.0:8080 --db postgres://clearhouse@db/clearhouse --migrate=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.DB = dbFlag(cmd)
			cfg.Mail.Password = os.Getenv("CLEARHOUSE_SMTP_PASSWORD") // not a flag: command lines are visible to every user
			cfg.MetricsToken = os.Getenv("CLEARHOUSE_METRICS_TOKEN")
			cfg.SignIn.ClientSecret = os.Getenv("CLEARHOUSE_OIDC_CLIENT_SECRET") // likewise
			log, err := logs.logger(cmd.ErrOrStderr())
			if err != nil {
				return &exitError{2, err}
			}
			cfg.Version = version
			app := server.NewApp(cfg, log, time.Now)
			app.DemoOut = cmd.OutOrStdout()
			if err := app.Open(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), servingMessage(app.Server.URL(), cfg.DB))
			envDB, ok := os.LookupEnv("CLEARHOUSE_DB")
			if hint, err := firstUserHint(cmd.Context(), app, ok && envDB == cfg.DB); err != nil {
				log.Warn("could not count the users", "err", err)
			} else if hint != "" {
				fmt.Fprintln(cmd.OutOrStdout(), hint)
			}
			return serveUntilDone(cmd.Context(), app, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	f.BoolVar(&cfg.Migrate, "migrate", true, "apply pending migrations at start (refuse to start on an old schema otherwise)")
	f.StringVar(&cfg.ProxyHeader, "proxy-header", "", "trust this header (e.g. X-Forwarded-Email) for the user's email from --trusted-proxies")
	f.StringVar(&cfg.TrustedProxies, "trusted-proxies", "", "comma-separated addresses or CIDRs of the reverse proxies: their X-Forwarded-For names the client, and --proxy-header is trusted from them")
	f.StringVar(&cfg.PublicURL, "public-url", "", "the URL users reach Clearhouse at (https://... makes cookies Secure); unset: Secure unless --addr is a loopback address")
	f.IntVar(&cfg.LoginRate, "login-rate", 10, "failed sign-ins allowed per minute from one client address with one email")
	f.IntVar(&cfg.LoginRateAddr, "login-rate-address", 30, "failed sign-ins allowed per minute from one client address (an IPv6 /64) with any emails")
	f.BoolVar(&cfg.Demo, "demo", false, "fill an empty database with a demo market and print the demo logins")
	f.DurationVar(&cfg.Tick, "tick", time.Minute, "how often the market's job opens, previews, closes and schedules auctions")
	f.DurationVar(&cfg.AuctionEvery, "auction-every", 24*time.Hour, "time from one auction's opening to the next's (0: operators schedule auctions by hand)")
	f.DurationVar(&cfg.AuctionWindow, "auction-window", time.Hour, "how long each auction takes bids")
	f.DurationVar(&cfg.PreviewEvery, "preview-every", 5*time.Minute, "how often an open auction's preliminary prices are refreshed")
	f.Float64Var(&cfg.FinalSeconds, "final-round-seconds", auction.DefaultFinalSeconds, "time limit of the final round after the binding clock of each auction scheduled automatically")
	f.BoolVar(&cfg.NoFinalRound, "no-final-round", false, "auctions scheduled automatically keep the clock's allocation: no final round")
	f.StringVar(&cfg.Mail.Addr, "smtp-addr", "", "host:port of the SMTP server notifications are emailed through (STARTTLS when offered); unset: notifications stay in the app")
	f.StringVar(&cfg.Mail.From, "smtp-from", "", "the address notification emails come from, e.g. \"Clearhouse <market@example.com>\"")
	f.StringVar(&cfg.Mail.Username, "smtp-user", "", "user name for the SMTP server (its password in CLEARHOUSE_SMTP_PASSWORD)")
	f.DurationVar(&cfg.Mail.Timeout, "smtp-timeout", 30*time.Second, "the longest one email may take to send")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", "", "also serve /metrics, without authentication, on this host:port (e.g. 0.0.0.0:9090); on --addr /metrics needs CLEARHOUSE_METRICS_TOKEN")
	f.DurationVar(&cfg.VerifyEvery, "verify-every", time.Hour, "how often a scheduled verify checks the invariants (clearhouse_verify_violations); 0: never")
	cfg.SignIn.RegisterFlags(f)
	logs.register(f)
	return cmd
}

// shutdownTimeout bounds a graceful shutdown: requests in flight and running jobs.
const shutdownTimeout = 30 * time.Second

// serveUntilDone waits until ctx ends (an interrupt) or a listener fails, then
// closes the app. A failed listener makes the process exit non-zero.
func serveUntilDone(ctx context.Context, app *server.App, log *slog.Logger) error {
	var failure error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case failure = <-app.Failed():
		log.Error("a listener failed; shutting down", "err", failure)
	}
	closing, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := app.Close(closing)
	if failure != nil {
		return &exitError{1, errors.Join(failure, err)}
	}
	return err
}

// servingMessage is the line serve prints once it listens; the database's password,
// if its URL has one, is hidden.
func servingMessage(url, dsn string) string {
	return fmt.Sprintf("Clearhouse is serving on %s (database %s)", url, store.Redact(dsn))
}
