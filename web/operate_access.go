package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/templates"
)

// accessPageSize is how many users, and how many tokens, one page of /operate/access
// shows.
const accessPageSize = 100

// accessPage shows every user with their live sessions, and every API token, newest
// first, a page at a time (?users_after=EMAIL, ?tokens_before=ID).
func (s *Server) accessPage(c *gin.Context) {
	ctx := c.Request.Context()
	after := c.Query("users_after")
	before, _ := strconv.ParseInt(c.Query("tokens_before"), 10, 64)
	accounts, err := s.svc.Identity.Accounts(ctx, after, accessPageSize)
	if err != nil {
		s.fail(c, err)
		return
	}
	tokens, err := s.svc.Identity.Tokens(ctx, identity.TokenFilter{Before: before, Limit: accessPageSize})
	if err != nil {
		s.fail(c, err)
		return
	}
	me, now := userOf(c), s.now()
	var v templates.AccessView
	for _, a := range accounts {
		row := templates.AccessUserRow{ID: a.ID, Email: a.Email, Name: a.Name, Role: string(a.Role), Team: a.TeamID,
			Disabled: a.DisabledAt != nil, Sessions: a.Sessions, Tokens: a.ActiveTokens, LastSeen: "—", Self: a.ID == me.ID,
			Source: accessSource(a.User)}
		if a.LastSeenAt != nil {
			row.LastSeen = fmtTime(*a.LastSeenAt)
		}
		v.Users = append(v.Users, row)
	}
	for _, t := range tokens {
		row := templates.TokenRow{ID: t.ID, Name: t.Name, Owner: t.Owner, Created: fmtTime(t.CreatedAt), LastUsed: timeOr(t.LastUsedAt, "never"),
			Expires: timeOr(t.ExpiresAt, "never"), State: "live", Revocable: t.RevokedAt == nil, Live: t.Live(now)}
		if t.Scope == identity.ScopeAgent {
			row.Owner = "agent of " + t.ClusterID
		}
		switch {
		case t.RevokedAt != nil:
			row.State, row.Since = "revoked", fmtTime(*t.RevokedAt)
		case !row.Live:
			row.State = "expired"
		}
		v.Tokens = append(v.Tokens, row)
	}
	if len(accounts) == accessPageSize {
		v.NextUsers = "/operate/access?users_after=" + url.QueryEscape(accounts[len(accounts)-1].Email)
	}
	if len(tokens) == accessPageSize {
		v.NextTokens = fmt.Sprintf("/operate/access?tokens_before=%d", tokens[len(tokens)-1].ID)
	}
	s.render(c, http.StatusOK, templates.AccessPage(s.page(c, "Access", "access"), v))
}

func timeOr(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return fmtTime(*t)
}

// pathID reads a positive id from the path, or ENOTFOUND naming what.
func pathID(c *gin.Context, what string) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such %s.", what)
	}
	return id, nil
}

// revokeToken revokes one token and goes back to the access page.
func (s *Server) revokeToken(c *gin.Context) {
	id, err := pathID(c, "token")
	if err != nil {
		s.fail(c, err)
		return
	}
	t, err := s.svc.Identity.RevokeToken(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/operate/access", "ok", fmt.Sprintf("Token %d (%s) is revoked.", t.ID, clip(t.Name, 100)))
}

// changeUser applies one change to the user in the path and goes back to the access
// page saying what happened.
func (s *Server) changeUser(c *gin.Context, change func(u identity.User) (string, error)) {
	id, err := pathID(c, "user")
	if err != nil {
		s.fail(c, err)
		return
	}
	u, err := s.svc.Identity.UserByID(c.Request.Context(), id)
	if err != nil {
		s.fail(c, err)
		return
	}
	msg, err := change(u)
	if err == errConfirming { // the confirmation page is the answer
		return
	}
	if clearhouse.ErrorCode(err) == clearhouse.EINVALID {
		s.redirectWithFlash(c, "/operate/access", "error", clearhouse.ErrorMessage(err))
		return
	} else if err != nil {
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/operate/access", "ok", msg)
}

func (s *Server) endUserSessions(c *gin.Context) {
	s.changeUser(c, func(u identity.User) (string, error) {
		n, err := s.svc.Identity.EndSessions(c.Request.Context(), u.ID)
		return fmt.Sprintf("Ended %s of %s.", countOf(int64(n), "session"), u.Email), err
	})
}

func (s *Server) disableUser(c *gin.Context) {
	s.changeUser(c, func(u identity.User) (string, error) {
		if u.ID == userOf(c).ID {
			return "", clearhouse.Errorf(clearhouse.EINVALID, "You cannot disable your own account.")
		}
		if !s.confirmed(c, "operate", templates.Confirm{
			Question: fmt.Sprintf("Disable %s?", u.Email),
			Lines: []string{"Their sessions end at once and their API tokens stop working; they cannot sign in.",
				"Their team's orders and reservations stay as they are. You can enable them again here."},
			Button: "Disable " + u.Email, Back: "/operate/access", Keep: "Keep them enabled",
		}) {
			return "", errConfirming
		}
		return fmt.Sprintf("Disabled %s: their sessions ended and their tokens stop working.", u.Email), s.svc.Identity.DisableUser(c.Request.Context(), u.ID)
	})
}

func (s *Server) enableUser(c *gin.Context) {
	s.changeUser(c, func(u identity.User) (string, error) {
		return fmt.Sprintf("Enabled %s.", u.Email), s.svc.Identity.EnableUser(c.Request.Context(), u.ID)
	})
}
