// Package web is Clearhouse's HTTP layer: routes, handlers, authentication and the JSON
// API. Handlers translate HTTP into calls on domain services and domain results into
// view models for templates.
package web

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/static"
)

// Config is what the web layer needs to know.
type Config struct {
	Addr string // listen address, e.g. 127.0.0.1:8080
	// ProxyHeader, when set, names a header (e.g. X-Forwarded-Email) from which an
	// authenticating proxy's user email is trusted, but only on requests from
	// TrustedProxies.
	ProxyHeader    string
	TrustedProxies []*net.IPNet
	// LoginRate is how many failed sign-ins one client address may make a minute
	// with one email; LoginRatePerAddress how many with any emails (default three
	// times LoginRate). The client's address is the peer's, or, from TrustedProxies,
	// the one their X-Forwarded-For names.
	LoginRate           int
	LoginRatePerAddress int
	// PublicURL is the address users reach the server at (e.g.
	// https://clearhouse.example.com). Its scheme decides whether cookies are Secure;
	// without it, they are unless Addr is a loopback address.
	PublicURL string
	// Observer, when set, records every request (metrics).
	Observer Observer
	// Metrics serves /metrics to requests bearing MetricsToken; without both the
	// route does not exist on this address.
	Metrics      http.Handler
	MetricsToken string
	// Ready is /readyz's check: nil when the server can take traffic.
	Ready func(context.Context) error
	// OIDC is sign-in through the company's OpenID Provider; NoPasswordSignIn turns
	// the password form off (docs/access.md).
	OIDC             OIDCConfig
	NoPasswordSignIn bool
}

// Services are the domain services the handlers call.
type Services struct {
	Identity     *identity.Identity
	Market       *exchange.Market
	Notices      *notify.Service // what users are told; nil: the market's own
	Reservations *fleet.Reservations
	Utilization  *fleet.Utilization // measured utilization; nil: pages show none
	BestEffort   *besteffort.Service
}

// Server is the HTTP server. Open starts it, Close stops it.
type Server struct {
	cfg     Config
	svc     Services
	log     *slog.Logger
	now     func() time.Time
	engine  *gin.Engine
	http    *http.Server
	ln      net.Listener
	limiter *loginLimiter
	secure  bool        // cookies are Secure
	failed  chan error  // Serve's error when it stops on its own
	oidc    *oidcClient // nil: no sign-in through a provider
}

// NewServer wires the routes.
func NewServer(cfg Config, svc Services, log *slog.Logger, now func() time.Time) *Server {
	gin.SetMode(gin.ReleaseMode)
	if cfg.LoginRate <= 0 {
		cfg.LoginRate = 10
	}
	if cfg.LoginRatePerAddress <= 0 {
		cfg.LoginRatePerAddress = 3 * cfg.LoginRate
	}
	if svc.Notices == nil && svc.Market != nil { // a test's server on a market alone
		svc.Notices = svc.Market.Notices()
	}
	s := &Server{cfg: cfg, svc: svc, log: log, now: now, limiter: newLoginLimiter(cfg.LoginRate, cfg.LoginRatePerAddress, limiterCapacity, now), secure: secureCookies(cfg)}
	if cfg.OIDC.Enabled() {
		s.oidc = &oidcClient{cfg: cfg.OIDC, now: now}
	}
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	_ = e.SetTrustedProxies(nil)
	e.Use(withRequestID(), s.withMetrics(), s.withAccessLog(), s.withRecovery(), withSecurityHeaders(), s.withCleanInput())
	// A route takes the middleware added before it: the static files go without a
	// session lookup and a CSRF cookie, every other route and NoRoute with them.
	s.staticRoutes(e, static.FS)
	e.Use(s.withIdentity(), s.withCSRF())
	e.NoRoute(s.notFound)
	e.NoMethod(func(c *gin.Context) {
		s.abort(c, http.StatusMethodNotAllowed, "method_not_allowed", "That method is not allowed here.")
	})
	s.routes(e)
	s.probeRoutes(e)
	s.engine = e
	return s
}

// Handler returns the server's http.Handler, for tests.
func (s *Server) Handler() http.Handler { return s.engine }

// maxHeaderBytes bounds a request's line and headers (net/http's default is 1 MB).
const maxHeaderBytes = 64 << 10

// Open listens on the configured address and serves in the background.
func (s *Server) Open() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	s.ln = ln
	s.http = &http.Server{Handler: s.engine, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: maxHeaderBytes, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	s.failed = make(chan error, 1)
	go func() {
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "err", err)
			s.failed <- err
		}
		close(s.failed)
	}()
	return nil
}

// Failed delivers the error that stopped the server serving, or is closed when
// Close stopped it.
func (s *Server) Failed() <-chan error { return s.failed }

// URL is the address the server listens on, as a URL.
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Close stops accepting requests and waits for those in flight.
func (s *Server) Close(ctx context.Context) error {
	if s.http == nil {
		return nil
	}
	return s.http.Shutdown(ctx)
}
