package web

import (
	"bytes"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

const flashCookie = "ch_flash"

// render writes a templ component with a status. It renders into a buffer first so a
// failing component becomes a clean error page, never half a page.
func (s *Server) render(c *gin.Context, status int, comp templ.Component) {
	var buf bytes.Buffer
	if err := comp.Render(c.Request.Context(), &buf); err != nil {
		s.log.Error("render failed", "request_id", requestID(c), "err", clip(err.Error(), maxLoggedError))
		c.Data(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("Internal error."))
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// page builds the layout's view model for this request, consuming any flash message.
func (s *Server) page(c *gin.Context, title, active string) templates.Page {
	p := templates.Page{Title: title, Active: active, User: viewerFrom(c), CSRF: s.csrfToken(c)}
	if u, ok := userFrom(c); ok && p.User != nil && s.svc.Market != nil {
		if n, err := s.svc.Notices.UnreadCount(c.Request.Context(), u.ID); err == nil {
			p.Unread = n
		}
	}
	if ck, err := c.Cookie(flashCookie); err == nil && ck != "" {
		if raw, err := base64.RawURLEncoding.DecodeString(ck); err == nil {
			kind, msg, _ := strings.Cut(string(raw), "|")
			if kind == "ok" || kind == "error" || kind == "info" {
				p.Flash = &templates.Flash{Kind: kind, Message: msg}
			}
		}
		s.clearCookie(c, flashCookie)
	}
	return p
}

// redirectWithFlash is post/redirect/get with a one-time message on the next page.
func (s *Server) redirectWithFlash(c *gin.Context, to, kind, message string) {
	s.setCookie(c, flashCookie, base64.RawURLEncoding.EncodeToString([]byte(kind+"|"+message)), 60)
	c.Redirect(http.StatusSeeOther, to)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// safeNext returns a local path to go to after sign-in, or "/" for anything else, so
// the login form cannot be used to redirect off-site.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Host != "" || u.Scheme != "" {
		return "/"
	}
	return next
}

func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
