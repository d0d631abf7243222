package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/templates"
)

// maxEmail is the longest email address an account may have.
const maxEmail = identity.MaxEmail

// loginPage shows the sign-in form.
func (s *Server) loginPage(c *gin.Context) {
	if _, ok := userFrom(c); ok {
		c.Redirect(http.StatusSeeOther, safeNext(c.Query("next")))
		return
	}
	next := safeNext(c.Query("next"))
	s.render(c, http.StatusOK, templates.LoginPage(s.page(c, "", ""), s.loginForm(templates.LoginForm{Next: next})))
}

// login checks the credentials, starts a session and redirects. An email longer than
// any address is refused first: it takes no limiter bucket and is never logged or
// shown. Failed attempts are limited per client address and email and per client
// address; a success gives its attempt back.
func (s *Server) login(c *gin.Context) {
	if s.cfg.NoPasswordSignIn {
		s.fail(c, clearhouse.Errorf(clearhouse.EFORBIDDEN, "Sign-in with a password is turned off; sign in with your company account."))
		return
	}
	raw := c.Request.PostForm.Get("email")
	if len(raw) > maxEmail {
		s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "email: must be at most %d bytes", maxEmail))
		return
	}
	email := strings.ToLower(strings.TrimSpace(raw))
	next := safeNext(c.Request.PostForm.Get("next"))
	form := templates.LoginForm{Email: email, Next: next}
	addr := "unknown"
	if ip := s.clientIP(c.Request); ip != nil {
		addr = limiterAddr(ip)
	}
	if !s.limiter.attempt(addr, email) {
		s.log.Warn("sign-in rate limited", "request_id", requestID(c), "client", addr, "email", email)
		form.Error = "Too many sign-in attempts. Wait a minute and try again."
		s.render(c, http.StatusTooManyRequests, templates.LoginPage(s.page(c, "", ""), s.loginForm(form)))
		return
	}
	u, err := s.svc.Identity.Authenticate(c.Request.Context(), email, c.Request.PostForm.Get("password"))
	if clearhouse.ErrorCode(err) == clearhouse.EUNAUTHORIZED {
		form.Error = clearhouse.ErrorMessage(err)
		s.render(c, http.StatusUnauthorized, templates.LoginPage(s.page(c, "", ""), s.loginForm(form)))
		return
	} else if err != nil {
		s.fail(c, err)
		return
	}
	s.limiter.succeeded(addr, email)
	token, _, err := s.svc.Identity.StartSession(c.Request.Context(), u.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.setCookie(c, sessionCookie, token, int(identity.SessionAbsolute.Seconds()))
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

// loginForm adds the provider's link and whether passwords are on to the form's state.
func (s *Server) loginForm(f templates.LoginForm) templates.LoginForm {
	f.Provider, f.NoPasswords = s.providerLoginURL(f.Next), s.cfg.NoPasswordSignIn
	return f
}
