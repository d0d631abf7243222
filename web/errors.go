package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/clearhouse/clearhouse"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// statusOf maps a domain error code to its HTTP status. This is the one place the
// mapping lives.
func statusOf(code string) int {
	switch code {
	case clearhouse.EINVALID:
		return http.StatusBadRequest
	case clearhouse.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case clearhouse.EFORBIDDEN:
		return http.StatusForbidden
	case clearhouse.ENOTFOUND:
		return http.StatusNotFound
	case clearhouse.ECONFLICT:
		return http.StatusConflict
	case clearhouse.EUNPROCESSABLE:
		return http.StatusUnprocessableEntity
	case clearhouse.ENOTIMPLEMENTED:
		return http.StatusNotImplemented
	default:
		return http.StatusInternalServerError
	}
}

// statusClientClosed is logged for requests the client abandoned (nginx's 499).
const statusClientClosed = 499

func isAPI(c *gin.Context) bool {
	return strings.HasPrefix(c.Request.URL.Path, "/api/")
}

// fail answers the request with err: JSON under /api, an error page elsewhere.
// Internal errors are logged once, with the request id, and shown without detail.
func (s *Server) fail(c *gin.Context, err error) {
	if errors.Is(err, context.Canceled) && c.Request.Context().Err() != nil {
		// The client went away: nobody reads the answer, and it is not the server's fault.
		s.log.Info("request abandoned by the client", "request_id", requestID(c), "path", clip(c.Request.URL.Path, maxLoggedPath))
		c.AbortWithStatus(statusClientClosed)
		return
	}
	code := clearhouse.ErrorCode(err)
	status := statusOf(code)
	if status >= 500 {
		s.log.Error("request failed", "request_id", requestID(c), "path", clip(c.Request.URL.Path, maxLoggedPath), "err", clip(err.Error(), maxLoggedError))
	}
	s.abort(c, status, code, clearhouse.ErrorMessage(err))
}

// abort answers with a status, code and message, in the request's kind.
func (s *Server) abort(c *gin.Context, status int, code, message string) {
	if isAPI(c) {
		c.AbortWithStatusJSON(status, apiv1.Error{Error: apiv1.ErrorBody{Code: code, Message: message, RequestID: requestID(c)}})
		return
	}
	c.Abort()
	s.render(c, status, templates.ErrorPage(s.page(c, statusTitle(status), ""), status, message))
}

func statusTitle(status int) string {
	switch status {
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusNotFound:
		return "Not found"
	case http.StatusUnauthorized:
		return "Sign in needed"
	default:
		if status >= 500 {
			return "Something went wrong"
		}
		return "Request refused"
	}
}

// No log line carries unbounded input: methods (any token a client sends), paths and
// error texts (which may quote input) are clipped to these lengths; emails are at most maxEmail bytes (longer ones are
// refused before anything logs them); other logged values are ids, addresses,
// statuses and durations.
const (
	maxLoggedMethod = 16
	maxLoggedPath   = 200
	maxLoggedError  = 1000
)

// logAttrs is a small helper for structured logging of a request.
func logAttrs(c *gin.Context) []any {
	return []any{slog.String("request_id", requestID(c)), slog.String("method", clip(c.Request.Method, maxLoggedMethod)), slog.String("path", clip(c.Request.URL.Path, maxLoggedPath))}
}

// clip shortens s to at most n bytes (on a rune boundary) for messages and logs, and
// says how long it was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:cut], len(s))
}
