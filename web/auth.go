package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/templates"
)

const (
	sessionCookie = "ch_session"
	csrfCookie    = "ch_csrf"
	ctxUser       = "user"
	ctxSession    = "session"
	ctxToken      = "token"
	// ctxAgentCluster is the cluster of the agent token requireAgent accepted.
	ctxAgentCluster = "agent_cluster"
)

// withIdentity finds who is calling: a bearer token, a session cookie, or an
// authenticating proxy's header from a trusted address. Nobody is an error only when
// a route requires someone.
func (s *Server) withIdentity() gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		if isProbe(c.FullPath()) { // answers whoever asks, whatever credentials they carry
			c.Next()
			return
		}
		if h := c.GetHeader("Authorization"); h != "" {
			token, ok := strings.CutPrefix(h, "Bearer ")
			if !ok {
				s.fail(c, clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "Authorization must be a Bearer token."))
				return
			}
			t, u, err := s.svc.Identity.TokenUser(ctx, strings.TrimSpace(token))
			if err != nil {
				s.fail(c, err)
				return
			}
			c.Set(ctxToken, t)
			if t.UserID != nil {
				c.Set(ctxUser, u)
			}
		} else if ck, err := c.Cookie(sessionCookie); err == nil && ck != "" {
			sess, u, err := s.svc.Identity.SessionUser(ctx, ck)
			if err == nil {
				c.Set(ctxSession, sess)
				c.Set(ctxUser, u)
			} else if clearhouse.ErrorCode(err) != clearhouse.EUNAUTHORIZED {
				s.fail(c, err)
				return
			} else {
				s.clearCookie(c, sessionCookie)
			}
		} else if s.cfg.ProxyHeader != "" && s.fromTrustedProxy(c.Request) {
			if email := c.GetHeader(s.cfg.ProxyHeader); email != "" {
				u, err := s.svc.Identity.UserByEmail(ctx, email)
				if err != nil || u.DisabledAt != nil {
					s.fail(c, clearhouse.Errorf(clearhouse.EFORBIDDEN, "%s has no Clearhouse account.", email))
					return
				}
				c.Set(ctxUser, u)
			}
		}
		c.Request = c.Request.WithContext(audit.WithActor(ctx, s.actorOf(c)))
		c.Next()
	}
}

// actorOf is who the audit trail records for this request's changes: the token (and
// its person) or the signed-in person, with the client's address. A request with
// neither (signing in) is recorded with its address only.
func (s *Server) actorOf(c *gin.Context) audit.Actor {
	a := audit.Actor{Kind: audit.KindSystem, Name: "anonymous"}
	if ip := s.clientIP(c.Request); ip != nil {
		a.Address = ip.String()
	}
	if u, ok := userFrom(c); ok {
		a.Kind, a.Name, a.UserID, a.Email = audit.KindUser, "", u.ID, u.Email
	}
	if v, ok := c.Get(ctxToken); ok {
		t := v.(identity.APIToken)
		a.Kind, a.TokenID = audit.KindToken, t.ID
		if t.ClusterID != nil {
			a.Name = "of cluster " + *t.ClusterID
		}
	}
	return a
}

// userFrom returns the signed-in user, if any.
func userFrom(c *gin.Context) (identity.User, bool) {
	v, ok := c.Get(ctxUser)
	if !ok {
		return identity.User{}, false
	}
	u, ok := v.(identity.User)
	return u, ok
}

// viewerFrom returns the signed-in user as the templates see them, or nil.
func viewerFrom(c *gin.Context) *templates.Viewer {
	u, ok := userFrom(c)
	if !ok {
		return nil
	}
	return &templates.Viewer{Email: u.Email, Name: u.Name, Role: string(u.Role), Team: u.TeamID}
}

// requireRole lets through signed-in users with one of the roles. Without a user, a
// page redirects to sign-in and the API answers 401; with the wrong role, 403.
func (s *Server) requireRole(roles ...identity.Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		u, ok := userFrom(c)
		if !ok {
			if isAPI(c) || c.Request.Method != http.MethodGet {
				s.fail(c, clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "Sign in first."))
				return
			}
			c.Redirect(http.StatusSeeOther, "/login?next="+urlQueryEscape(c.Request.URL.RequestURI()))
			c.Abort()
			return
		}
		for _, r := range roles {
			if u.Role == r {
				c.Next()
				return
			}
		}
		s.fail(c, clearhouse.Errorf(clearhouse.EFORBIDDEN, "This needs the %s role.", joinRoles(roles)))
	}
}

func joinRoles(roles []identity.Role) string {
	parts := make([]string, len(roles))
	for i, r := range roles {
		parts[i] = string(r)
	}
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
