package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// notificationsPage lists the viewer's newest notifications.
func (s *Server) notificationsPage(c *gin.Context) {
	u := userOf(c)
	ns, err := s.svc.Notices.Notifications(c.Request.Context(), u.ID, 100)
	if err != nil {
		s.fail(c, err)
		return
	}
	rows := make([]templates.NotificationRow, len(ns))
	var unread int64
	for i, n := range ns {
		rows[i] = templates.NotificationRow{ID: n.ID, Subject: n.Subject, Lines: strings.Split(n.Body, "\n"), Link: n.Link, At: fmtTime(n.CreatedAt), Unread: n.ReadAt == nil}
		if n.ReadAt == nil {
			unread++
		}
	}
	mail := templates.EmailSetting{Server: s.svc.Notices.EmailOn(), On: u.EmailOffAt == nil, Email: u.Email}
	s.render(c, http.StatusOK, templates.NotificationsPage(s.page(c, "Notifications", "notifications"), rows, unread, mail))
}

// setEmailNotifications turns the viewer's notification emails on or off.
func (s *Server) setEmailNotifications(c *gin.Context) {
	var on bool
	switch c.PostForm("email") {
	case "on":
		on = true
	case "off":
	default:
		s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "email: on or off"))
		return
	}
	if err := s.svc.Notices.SetEmailNotifications(c.Request.Context(), userOf(c).ID, on); err != nil {
		s.fail(c, err)
		return
	}
	msg := "Emails are off: notifications are shown here only, and emails not yet sent are dropped."
	if on {
		msg = "Emails are on: each new notification is also emailed to you."
	}
	s.redirectWithFlash(c, "/notifications", "ok", msg)
}

// markNotificationsRead marks the viewer's notifications read, up to the newest one
// the page showed (so one that arrived since stays unread).
func (s *Server) markNotificationsRead(c *gin.Context) {
	upTo, err := strconv.ParseInt(c.PostForm("up_to"), 10, 64)
	if err != nil || upTo < 1 {
		s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "up_to: the newest notification shown"))
		return
	}
	n, err := s.svc.Notices.MarkRead(c.Request.Context(), userOf(c).ID, upTo)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/notifications", "ok", fmt.Sprintf("%d marked as read.", n))
}
