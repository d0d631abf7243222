package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
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
	LoginRate      int
	Demo           bool
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
	if c.LoginRate < 1 {
		return fmt.Errorf("--login-rate %d: must be at least 1", c.LoginRate)
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

// App is the running application: the production wiring, also used by end-to-end
// tests. Open starts it; Close stops it in order: HTTP, then jobs, then the database.
type App struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	DB       *store.DB
	Identity *exchange.Identity
	Market   *exchange.Market
	Ledger   *ledger.Ledger
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
	proxies, _ := parseCIDRs(a.cfg.TrustedProxies)
	a.Server = web.NewServer(web.Config{
		Addr: a.cfg.Addr, ProxyHeader: a.cfg.ProxyHeader, TrustedProxies: proxies, LoginRate: a.cfg.LoginRate,
	}, web.Services{Identity: a.Identity, Market: a.Market}, a.log, a.now)
	if err := a.Server.Open(); err != nil {
		return errors.Join(err, a.DB.Close())
	}
	return nil
}

// Close stops the HTTP server, then the background jobs, then closes the database.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	if a.Server != nil {
		errs = append(errs, a.Server.Close(ctx))
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
