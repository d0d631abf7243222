package web

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/gin-gonic/gin"
)

const requestIDKey = "request_id"

// withRequestID gives every request an id, echoed in X-Request-Id and in logs.
func withRequestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		c.Set(requestIDKey, id)
		c.Header("X-Request-Id", id)
		c.Next()
	}
}

func requestID(c *gin.Context) string {
	return c.GetString(requestIDKey)
}

// withAccessLog logs one line per request.
func (s *Server) withAccessLog() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		if isProbe(c.FullPath()) && c.Writer.Status() < 500 {
			return // probes and scrapes come every few seconds: log only their failures
		}
		attrs := append(logAttrs(c), "status", c.Writer.Status(), "duration", time.Since(start))
		if u := viewerFrom(c); u != nil {
			attrs = append(attrs, "user", u.Email)
		}
		s.log.Info("request", attrs...)
	}
}

// withRecovery turns a panic into a logged internal error.
func (s *Server) withRecovery() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("panic", append(logAttrs(c), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))...)
				s.fail(c, fmt.Errorf("panic: %v", r))
			}
		}()
		c.Next()
	}
}

// withSecurityHeaders sets headers that every response should carry.
func withSecurityHeaders() gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		c.Next()
	}
}

// notFound answers unknown routes.
func (s *Server) notFound(c *gin.Context) {
	s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "There is no page at %s.", clip(c.Request.URL.Path, maxLoggedPath)))
}
