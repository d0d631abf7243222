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
	ns, err := s.svc.Market.Notifications(c.Request.Context(), u.ID, 100)
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
	s.render(c, http.StatusOK, templates.NotificationsPage(s.page(c, "Notifications", "notifications"), rows, unread))
}

// markNotificationsRead marks the viewer's notifications read, up to the newest one
// the page showed (so one that arrived since stays unread).
func (s *Server) markNotificationsRead(c *gin.Context) {
	upTo, err := strconv.ParseInt(c.PostForm("up_to"), 10, 64)
	if err != nil || upTo < 1 {
		s.fail(c, clearhouse.Errorf(clearhouse.EINVALID, "up_to: the newest notification shown"))
		return
	}
	n, err := s.svc.Market.MarkRead(c.Request.Context(), userOf(c).ID, upTo)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/notifications", "ok", fmt.Sprintf("%d marked as read.", n))
}
