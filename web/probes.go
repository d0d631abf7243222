package web

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/gin-gonic/gin"
)

// Probe and metrics paths. They answer whoever asks, whatever credentials they
// carry (a stale cookie or token cannot make a probe fail), are not logged per
// request, and skip the identity and CSRF checks; /metrics checks its own token.
const (
	livePath    = "/livez"
	readyPath   = "/readyz"
	metricsPath = "/metrics"
)

// isProbe reports whether the matched route is a probe or /metrics.
func isProbe(route string) bool {
	switch route {
	case healthPath, livePath, readyPath, metricsPath:
		return true
	}
	return false
}

// Observer records what the web layer sees, for metrics.
type Observer interface {
	// ObserveRequest records one answered request by method, route pattern, status.
	ObserveRequest(method, route string, status int, took time.Duration)
	// AgentReported records a report posted by an agent authenticated for cluster.
	AgentReported(cluster string, status int)
}

// agentReportRoute is the route agents post their reports to.
const agentReportRoute = "/api/v1/clusters/:cluster/updates"

// withMetrics records every request with the observer, if there is one.
func (s *Server) withMetrics() gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.cfg.Observer == nil {
			c.Next()
			return
		}
		start := time.Now()
		c.Next()
		status, route := c.Writer.Status(), c.FullPath()
		s.cfg.Observer.ObserveRequest(c.Request.Method, route, status, time.Since(start))
		if cluster := c.GetString(ctxAgentCluster); route == agentReportRoute && cluster != "" {
			s.cfg.Observer.AgentReported(cluster, status) // the token's cluster, never the path's: a bounded label
		}
	}
}

// probeRoutes registers /livez, /readyz and, with a metrics token, /metrics.
func (s *Server) probeRoutes(e *gin.Engine) {
	e.GET(livePath, func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	e.GET(readyPath, s.ready)
	if s.cfg.Metrics != nil && s.cfg.MetricsToken != "" {
		e.GET(metricsPath, s.metrics)
	}
}

// readyTimeout bounds one readiness check.
const readyTimeout = 5 * time.Second

// ready answers 200 "ok" when the server can take traffic (Config.Ready passes), and
// 503 with the reason otherwise.
func (s *Server) ready(c *gin.Context) {
	if s.cfg.Ready == nil {
		c.String(http.StatusOK, "ok")
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
	defer cancel()
	if err := s.cfg.Ready(ctx); err != nil {
		c.String(http.StatusServiceUnavailable, "not ready: %s", clearhouse.ErrorMessage(err))
		return
	}
	c.String(http.StatusOK, "ok")
}

// metrics serves the Prometheus metrics to a request bearing the metrics token.
// The token opens nothing else: every other route resolves bearer tokens through
// the identity service, which does not know it.
func (s *Server) metrics(c *gin.Context) {
	token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.cfg.MetricsToken)) != 1 {
		c.Header("WWW-Authenticate", `Bearer realm="metrics"`)
		c.String(http.StatusUnauthorized, "the metrics token is required")
		return
	}
	s.cfg.Metrics.ServeHTTP(c.Writer, c.Request)
}
