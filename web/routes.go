package web

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// routes registers every route with the roles it allows.
func (s *Server) routes(e *gin.Engine) {
	e.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	e.GET("/login", s.loginPage)
	e.POST("/login", s.login)
	e.POST("/logout", s.logout)
	e.GET("/", s.requireRole(anyone...), s.marketSummary)
}
