package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
)

const ctxCSRF = "csrf"

// crossOrigin refuses unsafe cross-origin browser requests by their Sec-Fetch-Site or
// Origin headers: a second line behind the tokens.
var crossOrigin = http.NewCrossOriginProtection()

// withCSRF requires a matching token on every unsafe request that a browser could send
// with ambient credentials (a session cookie, or an authenticating proxy's header).
// Signed-in users' tokens live in their session; before sign-in a random cookie is the
// token (double submit). Bearer-token requests carry no ambient credential and pass.
func (s *Server) withCSRF() gin.HandlerFunc {
	return func(c *gin.Context) {
		if _, bearer := c.Get(ctxToken); bearer || isProbe(c.FullPath()) {
			c.Next()
			return
		}
		if _, known := c.Get(ctxUser); !known && isAPI(c) {
			// Nobody is signed in and nothing ambient identifies the caller: there is no
			// credential a forged request could ride on, and every unsafe API route
			// requires someone, so its 401 says what is missing (a token).
			c.Next()
			return
		}
		want := s.csrfToken(c)
		switch c.Request.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			c.Next()
			return
		}
		if err := crossOrigin.Check(c.Request); err != nil {
			s.fail(c, clearhouse.Errorf(clearhouse.EFORBIDDEN, "Cross-origin requests are not allowed."))
			return
		}
		// The token comes from a header, or from a URL-encoded form that withCleanInput
		// has parsed within its bound; this never parses a body (PostForm is nil
		// unless the body was such a form).
		got := c.GetHeader("X-CSRF-Token")
		if got == "" && !isAPI(c) {
			got = c.Request.PostForm.Get("csrf_token")
		}
		if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			s.fail(c, clearhouse.Errorf(clearhouse.EFORBIDDEN, "The form has expired or did not come from Clearhouse; reload the page and try again."))
			return
		}
		c.Next()
	}
}

// csrfToken returns the token forms must carry for this request, setting the
// pre-session cookie when there is none yet.
func (s *Server) csrfToken(c *gin.Context) string {
	if v, ok := c.Get(ctxCSRF); ok {
		return v.(string)
	}
	var token string
	if v, ok := c.Get(ctxSession); ok {
		token = v.(identity.Session).CSRFToken
	} else if ck, err := c.Cookie(csrfCookie); err == nil && len(ck) >= 32 {
		token = ck
	} else if c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead {
		var b [32]byte
		_, _ = rand.Read(b[:])
		token = base64.RawURLEncoding.EncodeToString(b[:])
		s.setCookie(c, csrfCookie, token, 0)
	}
	c.Set(ctxCSRF, token)
	return token
}

// setCookie sets an HttpOnly, SameSite=Lax cookie, Secure as secureCookies decided
// when the server was made. maxAge 0 is a browser session cookie; negative deletes.
func (s *Server) setCookie(c *gin.Context, name, value string, maxAge int) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode,
	})
}

func (s *Server) clearCookie(c *gin.Context, name string) { s.setCookie(c, name, "", -1) }

// secureCookies decides, once, whether cookies are Secure: as the public URL's
// scheme says when one is configured (https: yes, http: no); otherwise yes unless
// the server listens on a loopback address, where it serves plain HTTP to a
// developer's browser. Never from a request's Host header, which the client writes.
func secureCookies(cfg Config) bool {
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		return err != nil || u.Scheme != "http"
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	return err != nil || !isLoopbackHost(host)
}
