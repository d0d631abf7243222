package web

import (
	"errors"
	"net/http"

	"github.com/clearhouse/clearhouse/exchange"

	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// confirmValue is what a risky action's second POST carries (as closing an
// auction's does): without it the action is only described, never done.
const confirmValue = "yes"

// confirmed reports whether a risky POST carries its confirmation. When it does
// not, it renders the confirmation page, which posts the same form again with
// confirm=yes, and returns false: nothing has changed. The page needs no
// JavaScript, so the first click on Withdraw, Cancel, Remove or Disable asks.
func (s *Server) confirmed(c *gin.Context, active string, v templates.Confirm) bool {
	if c.PostForm("confirm") == confirmValue {
		return true
	}
	if v.Action == "" {
		v.Action = c.Request.URL.Path
	}
	s.render(c, http.StatusOK, templates.ConfirmPage(s.page(c, v.Question, active), v))
	return false
}

// errConfirming tells a shared handler that the confirmation page was rendered.
var errConfirming = errors.New("web: waiting for confirmation")

// zeroCostConfirmed asks before a pool is saved at a $0 unit cost, which makes its
// reserve price zero: every unit could sell for nothing. The confirmation posts
// the same pool form again.
func (s *Server) zeroCostConfirmed(c *gin.Context, f templates.PoolForm, spec exchange.PoolSpec, back string) bool {
	if spec.UnitCost != 0 {
		return true
	}
	var fields []templates.Hidden
	for _, name := range []string{"cluster", "resource", "unit", "capacity", "unit_cost", "utilization", "curve"} {
		if v, ok := c.GetPostForm(name); ok {
			fields = append(fields, templates.Hidden{Name: name, Value: v})
		}
	}
	pool := f.ID
	if pool == "" {
		pool = f.Cluster + "/" + f.Resource
	}
	return s.confirmed(c, "operate", templates.Confirm{
		Question: "Save pool " + pool + " with a unit cost of $0?",
		Lines: []string{"A $0 unit cost makes the pool's reserve price $0: its units can sell for nothing, and sellers receive nothing for them.",
			"Give the pool's real cost per " + f.Unit + " per month unless it is truly free."},
		Fields: fields, Button: "Save at $0 unit cost", Back: back, Keep: "Go back and change the cost",
	})
}
