package web

import (
	"net"
	"net/http"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// loginPage shows the sign-in form.
func (s *Server) loginPage(c *gin.Context) {
	if _, ok := userFrom(c); ok {
		c.Redirect(http.StatusSeeOther, safeNext(c.Query("next")))
		return
	}
	s.render(c, http.StatusOK, templates.LoginPage(s.page(c, "", ""), templates.LoginForm{Next: safeNext(c.Query("next"))}))
}

// login checks the credentials, starts a session and redirects.
func (s *Server) login(c *gin.Context) {
	email := strings.ToLower(strings.TrimSpace(c.PostForm("email")))
	next := safeNext(c.PostForm("next"))
	form := templates.LoginForm{Email: email, Next: next}
	ip, _, _ := net.SplitHostPort(c.Request.RemoteAddr)
	if !s.limiter.allow("ip:"+ip, "email:"+email) {
		s.log.Warn("sign-in rate limited", "ip", ip, "email", email)
		form.Error = "Too many sign-in attempts. Wait a minute and try again."
		s.render(c, http.StatusTooManyRequests, templates.LoginPage(s.page(c, "", ""), form))
		return
	}
	u, err := s.svc.Identity.Authenticate(c.Request.Context(), email, c.PostForm("password"))
	if clearhouse.ErrorCode(err) == clearhouse.EUNAUTHORIZED {
		form.Error = clearhouse.ErrorMessage(err)
		s.render(c, http.StatusUnauthorized, templates.LoginPage(s.page(c, "", ""), form))
		return
	} else if err != nil {
		s.fail(c, err)
		return
	}
	token, _, err := s.svc.Identity.StartSession(c.Request.Context(), u.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.setCookie(c, sessionCookie, token, int(exchange.SessionAbsolute.Seconds()))
	s.clearCookie(c, csrfCookie)
	c.Redirect(http.StatusSeeOther, next)
}

// logout ends the session.
func (s *Server) logout(c *gin.Context) {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		if err := s.svc.Identity.EndSession(c.Request.Context(), ck); err != nil {
			s.fail(c, err)
			return
		}
	}
	s.clearCookie(c, sessionCookie)
	c.Redirect(http.StatusSeeOther, "/login")
}
