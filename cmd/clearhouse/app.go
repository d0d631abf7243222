package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/mailer"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/web"
	"github.com/robfig/cron/v3"
)

// Config is the server's whole configuration, from flags and CLEARHOUSE_* variables.
type Config struct {
	Addr           string
	DB             string
	Migrate        bool   // apply pending migrations at start
	ProxyHeader    string // trusted identity header of an authenticating proxy
	TrustedProxies string // comma-separated CIDRs the proxy header is trusted from
	PublicURL      string // where users reach the server; its scheme decides Secure cookies
	LoginRate      int    // failed sign-ins a minute per client address and email
	LoginRateAddr  int    // failed sign-ins a minute per client address; 0 is 3 x LoginRate
	Demo           bool
	Tick           time.Duration // how often the scheduled job runs
	AuctionEvery   time.Duration // opening to opening; 0 schedules no auctions
	AuctionWindow  time.Duration
	PreviewEvery   time.Duration
	FinalSeconds   float64       // the binding run's final round time limit; 0: auction.DefaultFinalSeconds
	NoFinalRound   bool          // scheduled auctions keep the clock's allocation
	Mail           mailer.Config // the SMTP server notifications are emailed through; empty: in-app only
}

// Cadence is the market's auction cadence from the configuration.
func (c Config) Cadence() exchange.Cadence {
	cad := exchange.DefaultCadence
	cad.Every, cad.Window, cad.PreviewEvery = c.AuctionEvery, c.AuctionWindow, c.PreviewEvery
	cad.Params.FinalRound = &auction.FinalParams{Seconds: c.FinalSeconds, Off: c.NoFinalRound}
	return cad
}

// Validate checks the configuration and names the setting at fault.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr %q: must be host:port: %v", c.Addr, err)
	}
	if c.DB == "" {
		return errors.New("--db: must name a SQLite file or a PostgreSQL URL")
	}
	if c.ProxyHeader != "" && c.TrustedProxies == "" {
		return errors.New("--proxy-header needs --trusted-proxies: the header is trusted only from the proxy's addresses")
	}
	if _, err := parseCIDRs(c.TrustedProxies); err != nil {
		return err
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--public-url %q: must be an http or https URL such as https://clearhouse.example.com", c.PublicURL)
		}
	}
	if c.LoginRate < 1 {
		return fmt.Errorf("--login-rate %d: must be at least 1", c.LoginRate)
	}
	if c.LoginRateAddr != 0 && c.LoginRateAddr < c.LoginRate { // 0: three times --login-rate
		return fmt.Errorf("--login-rate-address %d: must be at least --login-rate (%d)", c.LoginRateAddr, c.LoginRate)
	}
	if c.Tick < time.Second {
		return fmt.Errorf("--tick %s: must be at least 1s", c.Tick)
	}
	if c.AuctionEvery < 0 || (c.AuctionEvery > 0 && c.AuctionEvery < time.Minute) {
		return fmt.Errorf("--auction-every %s: must be 0 (no automatic auctions) or at least 1m", c.AuctionEvery)
	}
	if c.AuctionEvery > 0 && (c.AuctionWindow < time.Minute || c.AuctionWindow > c.AuctionEvery) {
		return fmt.Errorf("--auction-window %s: must be at least 1m and at most --auction-every (%s)", c.AuctionWindow, c.AuctionEvery)
	}
	if c.PreviewEvery < time.Second {
		return fmt.Errorf("--preview-every %s: must be at least 1s", c.PreviewEvery)
	}
	if !(c.FinalSeconds >= 0 && c.FinalSeconds <= auction.MaxFinalSeconds) {
		return fmt.Errorf("--final-round-seconds %v: must be from 0 (the default, %g) to %g", c.FinalSeconds, auction.DefaultFinalSeconds, auction.MaxFinalSeconds)
	}
	return c.Mail.Validate()
}

func parseCIDRs(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			if strings.Contains(part, ":") {
				part += "/128"
			} else {
				part += "/32"
			}
		}
		_, n, err := net.ParseCIDR(part)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxies: %q is not an address or CIDR", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// App is the running application: the production wiring, also used by end-to-end
// tests. Open starts it; Close stops it in order: HTTP, then jobs, then the database.
type App struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	demoOut io.Writer

	DB       *store.DB
	cron     *cron.Cron
	Identity *exchange.Identity
	Market   *exchange.Market
	Ledger   *ledger.Ledger
	Plan     *fleet.Reservations
	Util     *fleet.Utilization
	Idle     *fleet.BestEffort
	Server   *web.Server
}

// NewApp returns an unopened App.
func NewApp(cfg Config, log *slog.Logger, now func() time.Time) *App {
	return &App{cfg: cfg, log: log, now: now}
}

// Open connects to the database (migrating if allowed), builds the services and starts
// serving.
func (a *App) Open(ctx context.Context) error {
	if err := a.cfg.Validate(); err != nil {
		return err
	}
	db, err := openMigrated(ctx, a.cfg.DB, a.cfg.Migrate, a.log)
	if err != nil {
		return err
	}
	a.DB = db
	a.Identity = exchange.NewIdentity(db, a.now, 0)
	a.Ledger = ledger.New(db, a.now)
	a.Market = exchange.NewMarket(db, a.Ledger, a.now)
	a.Plan = fleet.NewReservations(db, a.Ledger, a.now, fleet.DefaultPlanConfig)
	a.Market.UseQuotaCommitments(a.Plan)
	a.Util = fleet.NewUtilization(db, a.now, fleet.DefaultUtilizationConfig)
	a.Market.UseMeasuredUtilization(a.Util)
	a.Idle = fleet.NewBestEffort(db, a.Ledger, a.now, fleet.DefaultBestEffortConfig)
	proxies, _ := parseCIDRs(a.cfg.TrustedProxies)
	a.Server = web.NewServer(web.Config{
		Addr: a.cfg.Addr, ProxyHeader: a.cfg.ProxyHeader, TrustedProxies: proxies, LoginRate: a.cfg.LoginRate, LoginRatePerAddress: a.cfg.LoginRateAddr,
		PublicURL: a.cfg.PublicURL,
	}, web.Services{Identity: a.Identity, Market: a.Market, Reservations: a.Plan, BestEffort: a.Idle, Utilization: a.Util}, a.log, a.now)
	if a.cfg.Demo {
		if err := seedDemo(ctx, a, a.demoOut); err != nil {
			return errors.Join(fmt.Errorf("demo data: %w", err), a.DB.Close())
		}
	}
	a.Market.UseEmail(a.cfg.Mail.Enabled())
	a.cron = cron.New(cron.WithLocation(time.UTC), cron.WithChain(cron.Recover(cronLogger{a.log}), cron.SkipIfStillRunning(cronLogger{a.log})))
	if _, err := a.cron.AddFunc(fmt.Sprintf("@every %s", a.cfg.Tick), func() { a.RunTick(context.Background()) }); err != nil {
		return errors.Join(err, a.DB.Close())
	}
	if _, err := a.cron.AddFunc(fmt.Sprintf("@every %s", a.Util.Config().Slot), func() { a.RunUtilization(context.Background()) }); err != nil {
		return errors.Join(err, a.DB.Close())
	}
	if a.cfg.Mail.Enabled() {
		if _, err := a.cron.AddFunc(fmt.Sprintf("@every %s", a.cfg.Tick), func() { a.SendEmails(context.Background()) }); err != nil {
			return errors.Join(err, a.DB.Close())
		}
	}
	if _, err := a.cron.AddFunc("@every 1h", func() { a.RunFairness(context.Background()) }); err != nil {
		return errors.Join(err, a.DB.Close())
	}
	if _, err := a.cron.AddFunc(historySchedule, func() { a.RunHistory(context.Background()) }); err != nil {
		return errors.Join(err, a.DB.Close())
	}
	if err := a.Server.Open(); err != nil {
		return errors.Join(err, a.DB.Close())
	}
	a.cron.Start()
	go func() { // catch up at once after a restart
		a.RunUtilization(context.Background())
		a.RunTick(context.Background())
		a.RunHistory(context.Background()) // the current interval's point, if no server took it yet
		if stale, err := a.Idle.FairnessStale(context.Background(), time.Hour); err == nil && stale {
			a.RunFairness(context.Background()) // not an hour or more out of date until the hourly job
		}
	}()
	return nil
}

// utilizationLock names the advisory lock that keeps the utilization job on one
// replica.
const utilizationLock = 0x75746c7a // "utlz"

// RunUtilization runs the utilization job once (fill, downsample, prune, measure),
// on one replica at a time, and logs what it did.
func (a *App) RunUtilization(ctx context.Context) {
	var rep fleet.RefreshReport
	ran, err := a.DB.Exclusive(ctx, utilizationLock, func() error {
		var err error
		rep, err = a.Util.Refresh(ctx)
		return err
	})
	switch {
	case err != nil:
		a.log.Error("utilization job failed", "err", err)
	case ran:
		a.log.Debug("utilization job", "plan_samples", rep.PlanSamples, "hours", rep.Hours, "measured", rep.Measured, "no_data", len(rep.NoData))
	}
}

// tickLock names the advisory lock that keeps the market's job on one replica.
const tickLock = 0x636c6561 // "clea"

// RunTick runs the market's scheduled job once, on one replica at a time, and
// logs what it did: the auction cadence, then the reservation plan (charges for
// slots that passed, reservations that ended, a rebuild after a settlement).
func (a *App) RunTick(ctx context.Context) {
	var rep exchange.TickReport
	var plan fleet.PlanTick
	ran, err := a.DB.Exclusive(ctx, tickLock, func() error {
		var market, reservations error
		rep, market = a.Market.Tick(ctx, a.cfg.Cadence())
		plan, reservations = a.Plan.Tick(ctx) // charges go on when an auction fails to close
		idle, idleErr := a.Idle.Tick(ctx)     // accounts up to now; silent agents' tasks requeued
		if len(idle.Requeued) > 0 {
			a.log.Info("best-effort tick", "requeued", idle.Requeued)
		}
		return errors.Join(market, reservations, idleErr)
	})
	if ran && err == nil && (plan.Charged > 0 || len(plan.Done) > 0) {
		a.log.Info("reservation tick", "charged", plan.Charged.String(), "ended", plan.Done)
	}
	switch {
	case err != nil:
		a.log.Error("market tick failed", "err", err)
	case !ran:
		a.log.Debug("market tick skipped: another replica runs it")
	case len(rep.Opened)+len(rep.Closed)+len(rep.Previewed) > 0 || rep.Scheduled != nil:
		attrs := []any{"opened", rep.Opened, "previewed", rep.Previewed, "closed", rep.Closed}
		if rep.Scheduled != nil {
			attrs = append(attrs, "scheduled", rep.Scheduled.ID)
		}
		a.log.Info("market tick", attrs...)
	}
}

// cronLogger adapts slog to cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "err", err)...)
}

// Close stops the HTTP server, then the background jobs, then closes the database.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	if a.Server != nil {
		errs = append(errs, a.Server.Close(ctx))
	}
	if a.cron != nil {
		select { // wait for a running job before closing the database
		case <-a.cron.Stop().Done():
		case <-ctx.Done():
			errs = append(errs, ctx.Err())
		}
	}
	if a.DB != nil {
		errs = append(errs, a.DB.Close())
	}
	return errors.Join(errs...)
}

// openMigrated opens the database and makes sure its schema is current: it applies
// pending migrations when migrate is true and refuses to go on otherwise.
func openMigrated(ctx context.Context, dsn string, migrate bool, log *slog.Logger) (*store.DB, error) {
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if migrate {
		if err := store.Migrate(ctx, db); err != nil {
			return nil, errors.Join(err, db.Close())
		}
	} else if err := store.CheckCurrent(ctx, db); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return db, nil
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
