package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/clearhouse/clearhouse"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/demo"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/mailer"
	"github.com/clearhouse/clearhouse/metrics"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/web"
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
	MetricsAddr    string        // a separate address serving /metrics without auth; empty: none
	MetricsToken   string        // the bearer token that reads /metrics on Addr; empty: /metrics not served there
	VerifyEvery    time.Duration // how often the scheduled verify checks the invariants
	SignIn         SignInConfig  // the company's OpenID Provider; passwords on or off
	Version        string        // the binary's version, which /metrics reports; empty: "dev"
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
	if err := c.ValidateCadence(); err != nil {
		return err
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr %q: must be host:port: %v", c.MetricsAddr, err)
		}
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		return errors.New("CLEARHOUSE_METRICS_TOKEN: must be at least 16 characters (e.g. openssl rand -hex 24)")
	}
	if c.VerifyEvery != 0 && c.VerifyEvery < time.Minute {
		return fmt.Errorf("--verify-every %s: must be 0 (no scheduled verify) or at least 1m", c.VerifyEvery)
	}
	if err := c.SignIn.Validate(c.PublicURL); err != nil {
		return err
	}
	return c.Mail.Validate()
}

// ValidateCadence checks the flags of the auction cadence, which serve and auction
// tick share: both refuse the same values with the same message.
func (c Config) ValidateCadence() error {
	if c.AuctionEvery < 0 || (c.AuctionEvery > 0 && c.AuctionEvery < time.Minute) {
		return fmt.Errorf("--auction-every %s: must be 0 (no automatic auctions) or at least 1m", c.AuctionEvery)
	}
	if c.AuctionEvery > 0 && (c.AuctionWindow < time.Minute || c.AuctionWindow > c.AuctionEvery) {
		return fmt.Errorf("--auction-window %s: must be at least 1m and at most --auction-every (%s)", c.AuctionWindow, c.AuctionEvery)
	}
	if c.PreviewEvery < time.Second {
		return fmt.Errorf("--preview-every %s: must be at least 1s", c.PreviewEvery)
	}
	if err := auction.CheckFinalSeconds(c.FinalSeconds); err != nil {
		return fmt.Errorf("--final-round-seconds: %s", clearhouse.ErrorMessage(err))
	}
	return nil
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

// App is the running application: the production wiring, which `clearhouse serve`
// runs and the end-to-end tests (e2e/...) drive. Open starts it; Close stops it in
// order: HTTP, then jobs, then the database.
type App struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	// DemoOut receives the demo's logins when Config.Demo seeds an empty database
	// (nil: they are not printed).
	DemoOut io.Writer

	DB       *store.DB
	cron     *cron.Cron
	Identity *identity.Identity
	Market   *exchange.Market
	Notices  *notify.Service // notifications and the e-mail outbox, one for every service
	Ledger   *ledger.Ledger
	Plan     *fleet.Reservations
	Util     *fleet.Utilization
	Idle     *besteffort.Service
	Server   *web.Server

	metrics      *metrics.Metrics
	metricsSrv   *http.Server
	metricsLn    net.Listener
	jobs         context.Context // scheduled jobs run on it; Close cancels it
	stopJobs     context.CancelFunc
	running      sync.WaitGroup // goroutines Close waits for (the start-up catch-up)
	scheduling   atomic.Bool    // the scheduler runs
	planFollowed atomic.Bool    // this server's reservation plan was built once (Ready waits for it)
	failed       chan error     // a listener that stopped serving
}

// PasswordCost is the bcrypt cost of every password the server and the binary hash
// (sign-up, `user add`, the demo's logins); 0 is identity's production default. Only
// tests change it (their TestMain sets bcrypt's minimum): at the production cost one
// hash took about 0.25 s, and several seconds under the race detector.
var PasswordCost = 0

// Config returns the configuration the app was made with.
func (a *App) Config() Config { return a.cfg }

// NewApp returns an unopened App.
func NewApp(cfg Config, log *slog.Logger, now func() time.Time) *App {
	return &App{cfg: cfg, log: log, now: now}
}

// Open connects to the database (migrating if allowed), builds the services and starts
// serving.
func (a *App) Open(ctx context.Context) error {
	if err := a.OpenServices(ctx); err != nil {
		return err
	}
	return a.start(ctx)
}

// OpenServices validates the configuration, opens the database, builds the services
// on it and seeds the demo when configured; it starts no job and no listener. On an
// error the database is closed. (Tests seed the demo once with it and copy the file;
// Open calls it.)
func (a *App) OpenServices(ctx context.Context) error {
	if err := a.cfg.Validate(); err != nil {
		return err
	}
	db, err := OpenMigrated(ctx, a.cfg.DB, a.cfg.Migrate, a.log)
	if err != nil {
		return err
	}
	a.DB = db
	a.Identity = identity.NewIdentity(db, a.now, PasswordCost)
	a.Ledger = ledger.New(db, a.now)
	a.Notices = notify.New(db, a.now)
	a.Market = exchange.NewMarket(db, a.Ledger, a.now)
	a.Market.UseNotices(a.Notices)
	a.Plan = fleet.NewReservations(db, a.Ledger, a.now, fleet.DefaultPlanConfig)
	a.Market.UseQuotaCommitments(a.Plan)
	a.Plan.UseNotices(a.Notices) // teams hear of reservations their cluster refused and of work beyond their limits
	a.Util = fleet.NewUtilization(db, a.now, fleet.DefaultUtilizationConfig)
	a.Market.UseMeasuredUtilization(a.Util)
	a.Idle = besteffort.New(db, a.Ledger, a.now, besteffort.DefaultConfig)
	a.metrics = metrics.New(db, cmp.Or(a.cfg.Version, "dev"), a.now)
	a.metrics.Jobs(jobNames...)
	a.Market.ObserveCloses(a.metrics)
	a.Plan.ObservePlan(a.metrics)
	a.failed = make(chan error, 2)
	proxies, _ := parseCIDRs(a.cfg.TrustedProxies)
	signIn, _ := a.cfg.SignIn.OIDCConfig(a.cfg.PublicURL) // checked by Validate
	a.Server = web.NewServer(web.Config{
		Addr: a.cfg.Addr, ProxyHeader: a.cfg.ProxyHeader, TrustedProxies: proxies, LoginRate: a.cfg.LoginRate, LoginRatePerAddress: a.cfg.LoginRateAddr,
		PublicURL: a.cfg.PublicURL, Observer: a.metrics, Metrics: a.metrics.Handler(), MetricsToken: a.cfg.MetricsToken, Ready: a.Ready,
		OIDC: signIn, NoPasswordSignIn: a.cfg.SignIn.NoPasswordSignIn,
	}, web.Services{Identity: a.Identity, Market: a.Market, Notices: a.Notices, Reservations: a.Plan, BestEffort: a.Idle, Utilization: a.Util}, a.log, a.now)
	if a.cfg.Demo {
		services := demo.Services{DB: a.DB, Ledger: a.Ledger, Market: a.Market, Identity: a.Identity, BestEffort: a.Idle,
			Now: a.now, AuctionWindow: a.cfg.AuctionWindow, AuctionEvery: a.cfg.AuctionEvery, DBName: a.cfg.DB}
		if err := demo.Seed(ctx, services, cmp.Or(a.DemoOut, io.Discard)); err != nil {
			return errors.Join(fmt.Errorf("demo data: %w", err), a.DB.Close())
		}
	}
	a.Notices.UseEmail(a.cfg.Mail.Enabled())
	return nil
}

// start runs the scheduled jobs, the HTTP servers and the start-up catch-up of the
// services openServices built. On an error the jobs stop and the database is closed.
func (a *App) start(ctx context.Context) error {
	// Scheduled jobs change the market as the server, not as whoever started it.
	jobs := audit.WithActor(context.WithoutCancel(ctx), audit.Actor{Kind: audit.KindSystem, Name: "scheduled job"})
	a.jobs, a.stopJobs = context.WithCancel(jobs)
	a.cron = cron.New(cron.WithLocation(time.UTC), cron.WithChain(cron.Recover(cronLogger{a.log}), cron.SkipIfStillRunning(cronLogger{a.log})))
	if err := a.scheduleJobs(); err != nil {
		a.stopJobs()
		return errors.Join(err, a.DB.Close())
	}
	if err := a.Server.Open(); err != nil {
		a.stopJobs()
		return errors.Join(err, a.DB.Close())
	}
	if err := a.openMetrics(); err != nil {
		a.stopJobs()
		return errors.Join(err, a.Server.Close(ctx), a.DB.Close())
	}
	go func() { // a listener that stops serving stops the process (serve returns non-zero)
		if err := <-a.Server.Failed(); err != nil {
			a.failed <- fmt.Errorf("http server on %s: %w", a.cfg.Addr, err)
		}
	}()
	a.cron.Start()
	a.scheduling.Store(true)
	a.goJob(func(ctx context.Context) { // catch up at once after a restart
		_ = a.runJob(ctx, jobPlan, a.followPlan) // the plan in memory before anything reads it
		_ = a.RunUtilization(ctx)
		_ = a.RunTick(ctx)
		_ = a.RunHistory(ctx) // the current interval's point, if no server took it yet
		if stale, err := a.Idle.FairnessStale(ctx, time.Hour); err == nil && stale {
			_ = a.RunFairness(ctx) // not an hour or more out of date until the hourly job
		}
	})
	return nil
}

// UtilizationLock names the advisory lock that keeps the utilization job on one
// replica.
const UtilizationLock = 0x75746c7a // "utlz"

// RunUtilization runs the utilization job once (fill, downsample, prune, measure),
// on one replica at a time, and logs what it did.
func (a *App) RunUtilization(ctx context.Context) error {
	return a.runJob(ctx, jobUtilization, a.utilization)
}

func (a *App) utilization(ctx context.Context) (bool, error) {
	var rep fleet.RefreshReport
	ran, err := a.DB.Exclusive(ctx, UtilizationLock, func() error {
		var err error
		rep, err = a.Util.Refresh(ctx)
		return err
	})
	if ran && err == nil {
		a.log.Info("utilization job", "plan_samples", rep.PlanSamples, "hours", rep.Hours, "measured", rep.Measured, "no_data", len(rep.NoData))
	}
	return ran, err
}

// TickLock names the advisory lock that keeps the market's job on one replica.
const TickLock = 0x636c6561 // "clea"

// RunTick runs the market's scheduled job once, on one replica at a time, and
// logs what it did: the auction cadence, then the reservation plan (charges for
// slots that passed, reservations that ended, a rebuild after a settlement).
func (a *App) RunTick(ctx context.Context) error {
	return a.runJob(ctx, jobTick, a.tick)
}

func (a *App) tick(ctx context.Context) (bool, error) {
	var rep exchange.TickReport
	var plan fleet.PlanTick
	ran, err := a.DB.Exclusive(ctx, TickLock, func() error {
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
		return ran, fmt.Errorf("market tick: %w", err)
	case !ran:
		a.log.Debug("market tick skipped: another replica runs it")
	case len(rep.Opened)+len(rep.Closed)+len(rep.Previewed) > 0 || rep.Scheduled != nil:
		attrs := []any{"opened", rep.Opened, "previewed", rep.Previewed, "closed", rep.Closed}
		if rep.Scheduled != nil {
			attrs = append(attrs, "scheduled", rep.Scheduled.ID)
		}
		a.log.Info("market tick", attrs...)
	}
	return ran, nil
}

// cronLogger adapts slog to cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "err", err)...)
}

// Close stops the HTTP servers, then cancels the scheduled jobs and the start-up
// catch-up and waits for them, then closes the database, last. When ctx ends before
// the jobs return, the database is left open (the process is about to exit) rather
// than closed under them.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	if a.Server != nil {
		errs = append(errs, a.Server.Close(ctx))
	}
	if a.metricsSrv != nil {
		errs = append(errs, a.metricsSrv.Shutdown(ctx))
	}
	if a.stopJobs != nil {
		a.scheduling.Store(false)
		a.stopJobs()
		stopped := make(chan struct{}, 1)
		go func() {
			<-a.cron.Stop().Done()
			a.running.Wait()
			stopped <- struct{}{} // close is shadowed in this package
		}()
		select {
		case <-stopped:
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("jobs still running at shutdown: %w", ctx.Err()))...)
		}
	}
	if a.DB != nil {
		errs = append(errs, a.DB.Close())
	}
	return errors.Join(errs...)
}

// Failed delivers the error of a listener that stopped serving.
func (a *App) Failed() <-chan error { return a.failed }

// OpenMigrated opens the database and makes sure its schema is current; a SQLite
// file's in-use lock is held until the database is closed (store.HoldInUse). A schema
// newer than this binary knows is refused whatever migrate says (after a rollback,
// an older binary must not write to a newer schema). Otherwise it applies pending
// migrations when migrate is true, first copying a SQLite file that holds data to
// a backup beside it, and refuses an old schema when migrate is false. On
// PostgreSQL a session advisory lock makes replicas that start at once migrate once.
func OpenMigrated(ctx context.Context, dsn string, migrate bool, log *slog.Logger) (*store.DB, error) {
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if path, ok := store.SQLitePath(dsn); ok {
		// Held until db closes: restore refuses to replace a file a server uses.
		if err := db.HoldInUse(path); err != nil {
			return nil, errors.Join(err, db.Close())
		}
	}
	if err := store.CheckNotNewer(ctx, db); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if !migrate {
		if err := store.CheckCurrent(ctx, db); err != nil {
			return nil, errors.Join(err, db.Close())
		}
		return db, nil
	}
	if path, ok := store.SQLitePath(dsn); ok {
		backup, err := store.BackupBeforeMigrate(ctx, db, path)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("backup before migrating: %w", err), db.Close())
		}
		if backup != "" {
			log.Info("database backed up before migrating", "backup", backup)
		}
	}
	if err := store.Migrate(ctx, db); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return db, nil
}
