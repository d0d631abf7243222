package web

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gin-gonic/gin"
	"golang.org/x/oauth2"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/templates"
)

// oidcCookie binds a sign-in through the provider to the browser that started it.
const oidcCookie = "ch_oidc"

// providerLoginURL is the login page's link to the provider, or "" when none is set.
func (s *Server) providerLoginURL(next string) string {
	if s.oidc == nil {
		return ""
	}
	return "/login/oidc?next=" + urlQueryEscape(next)
}

// providerLogin starts a sign-in through the provider: it records the state, nonce and
// PKCE verifier, binds them to this browser by a cookie, and sends the browser to the
// provider's authorization endpoint.
func (s *Server) providerLogin(c *gin.Context) {
	if s.oidc == nil {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "Sign-in through a company account is not set up."))
		return
	}
	ctx := c.Request.Context()
	p, err := s.oidc.discover(ctx)
	if err != nil {
		s.log.Error("OpenID Provider unreachable", "request_id", requestID(c), "err", err)
		s.render(c, http.StatusBadGateway, templates.ProviderRefusedPage(s.page(c, "Sign-in", ""), templates.ProviderRefusal{
			Title: "The company sign-in is unreachable", Message: "Clearhouse could not reach the company's sign-in service. Try again in a minute; operators can sign in with a password."}))
		return
	}
	var b [32]byte
	_, _ = rand.Read(b[:])
	nonce := base64.RawURLEncoding.EncodeToString(b[:])
	verifier := oauth2.GenerateVerifier()
	state, browser, err := s.svc.Identity.BeginProviderLogin(ctx, nonce, verifier, safeNext(c.Query("next")))
	if err != nil {
		s.fail(c, err)
		return
	}
	s.setCookie(c, oidcCookie, browser, int(identity.LoginTTL.Seconds()))
	url := s.oidc.oauth2Config(p).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	c.Redirect(http.StatusSeeOther, url)
}

// providerCallback finishes a sign-in through the provider: it takes the sign-in under
// way that the state and this browser's cookie name (once), exchanges the code, verifies
// the ID token, applies the group mapping and starts a session. Each refusal is a page
// saying why, never a session.
func (s *Server) providerCallback(c *gin.Context) {
	if s.oidc == nil {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "Sign-in through a company account is not set up."))
		return
	}
	ctx := c.Request.Context()
	refuse := func(status int, r templates.ProviderRefusal) {
		s.render(c, status, templates.ProviderRefusedPage(s.page(c, "Sign-in refused", ""), r))
	}
	browser, _ := c.Cookie(oidcCookie)
	login, err := s.svc.Identity.TakeProviderLogin(ctx, c.Query("state"), browser)
	if clearhouse.ErrorCode(err) == clearhouse.EUNAUTHORIZED {
		s.log.Warn("provider sign-in refused", "request_id", requestID(c), "reason", "unknown, used or expired state")
		refuse(http.StatusUnauthorized, templates.ProviderRefusal{Title: "Sign-in expired", Message: clearhouse.ErrorMessage(err)})
		return
	} else if err != nil {
		s.fail(c, err)
		return
	}
	s.clearCookie(c, oidcCookie)
	if e := c.Query("error"); e != "" {
		s.log.Warn("provider sign-in refused", "request_id", requestID(c), "reason", "the provider answered "+clip(e, 64))
		refuse(http.StatusUnauthorized, templates.ProviderRefusal{Title: "Sign-in refused", Message: "The company sign-in did not sign you in (" + clip(e, 64) + "): " + clip(c.Query("error_description"), 200)})
		return
	}
	person, err := s.oidc.exchange(ctx, c.Query("code"), login.Verifier, login.Nonce)
	if err != nil {
		s.log.Warn("provider sign-in refused", "request_id", requestID(c), "reason", clip(err.Error(), maxLoggedError))
		msg := "Clearhouse could not verify the company sign-in's answer. Sign in again; if it keeps failing, tell the operators."
		if !errors.Is(err, errToken) {
			msg = "Clearhouse could not finish the company sign-in. Try again in a minute; if it keeps failing, tell the operators."
		}
		refuse(http.StatusUnauthorized, templates.ProviderRefusal{Title: "Sign-in refused", Message: msg})
		return
	}
	u, err := s.svc.Identity.SignInFromProvider(ctx, person, s.oidc.cfg.Mapping)
	switch {
	case errors.Is(err, identity.ErrNoMappedGroup):
		groups := person.Groups
		if groups == nil {
			groups = []string{}
		}
		s.log.Info("provider sign-in without a mapped group", "request_id", requestID(c), "email", person.Email)
		refuse(http.StatusForbidden, templates.ProviderRefusal{Title: "No access to Clearhouse yet", Message: clearhouse.ErrorMessage(err), Email: person.Email, Groups: groups})
		return
	case err != nil && clearhouse.ErrorCode(err) != clearhouse.EINTERNAL:
		refuse(statusOf(clearhouse.ErrorCode(err)), templates.ProviderRefusal{Title: "Sign-in refused", Message: clearhouse.ErrorMessage(err), Email: person.Email})
		return
	case err != nil:
		s.fail(c, err)
		return
	}
	token, _, err := s.svc.Identity.StartSession(ctx, u.ID)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.log.Info("signed in through the provider", "request_id", requestID(c), "user", u.ID, "role", string(u.Role), "team", u.TeamID, "group", u.AccessGroup)
	s.setCookie(c, sessionCookie, token, int(identity.SessionAbsolute.Seconds()))
	s.clearCookie(c, csrfCookie)
	c.Redirect(http.StatusSeeOther, login.Next)
}

// accessSource says, for the operators' access page, where a user's role and team came from.
func accessSource(u identity.User) string {
	switch u.AccessSource {
	case identity.SourceProvider:
		return "provider group " + u.AccessGroup
	case identity.SourceRevoked:
		return "removed by provider"
	}
	return "local grant"
}
