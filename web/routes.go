package web

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clearhouse/clearhouse/identity"
)

// Role sets used by the routes.
var (
	anyone   = identity.Roles
	onTeam   = []identity.Role{identity.RoleMember, identity.RoleOwner}
	owner    = []identity.Role{identity.RoleOwner}
	finance  = []identity.Role{identity.RoleFinance}
	operator = []identity.Role{identity.RoleOperator}
)

// healthPath answers "ok" to anyone: load balancers probe it, and identity and CSRF
// checks skip it, so a stale token or cookie cannot make it fail.
const healthPath = "/healthz"

// routes registers every route with the roles it allows. Every page and API call
// needs a signed-in user (or token) with one of the listed roles; others get 403.
func (s *Server) routes(e *gin.Engine) {
	e.GET(healthPath, func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	e.GET("/login", s.loginPage)
	e.POST("/login", s.login)
	e.POST("/logout", s.logout)
	if s.oidc != nil { // sign-in through the company's provider: public, like /login
		e.GET("/login/oidc", s.providerLogin)
		e.GET("/login/oidc/callback", s.providerCallback)
	}

	all := e.Group("", s.requireRole(anyone...))
	all.GET("/", s.marketSummary)
	all.GET("/auctions", s.auctionsPage)
	all.GET("/auctions/:id", s.auctionPage)
	all.GET("/search", s.searchPage)
	all.GET("/help", s.helpPage)
	all.GET("/spend", s.spendPage)            // finance and operators: every team; members and owners: their own
	all.GET("/spend.csv", s.spendCSV)         // the same, as CSV
	all.GET("/spend/focus.csv", s.spendFOCUS) // the same charges as FOCUS 1.0 rows
	all.GET("/notifications", s.notificationsPage)
	all.POST("/notifications/read", s.markNotificationsRead)
	all.POST("/notifications/email", s.setEmailNotifications)

	team := e.Group("", s.requireRole(onTeam...))
	team.GET("/orders", s.ordersPage)
	team.GET("/orders/new", s.newBidPage)
	team.POST("/orders", s.placeBid)
	team.GET("/orders/offer", s.offerPage)
	team.POST("/orders/offer", s.placeOffer)
	team.GET("/orders/move", s.movePage)
	team.POST("/orders/move", s.placeMove)
	team.POST("/orders/:id/withdraw", s.withdrawOrder)
	team.POST("/drafts/:id/place", s.placeDraft)
	team.POST("/drafts/:id/delete", s.deleteDraft)
	team.POST("/drafts/place-all", s.placeAllDrafts)
	team.GET("/team", s.teamPage)
	team.GET("/team/statement.csv", s.teamStatementCSV)
	team.GET("/reservations", s.reservationsPage)
	team.POST("/reservations", s.reserve)
	team.POST("/reservations/:id/cancel", s.cancelReservation)
	team.GET("/best-effort", s.bestEffortPage)
	team.POST("/best-effort", s.submitBestEffort)
	team.POST("/best-effort/:id/cancel", s.cancelBestEffort)

	own := e.Group("", s.requireRole(owner...))
	own.POST("/team/threshold", s.setThreshold)
	own.GET("/approvals", s.approvalsPage)
	own.POST("/approvals/:id", s.decideOrder)

	fin := e.Group("/finance", s.requireRole(finance...))
	fin.GET("", s.financePage)
	fin.POST("/grants", s.grant)
	fin.GET("/teams/:team", s.financeTeamPage)
	fin.GET("/teams/:team/statement.csv", s.financeTeamCSV)
	fin.GET("/journal.csv", s.journalCSV)
	fin.GET("/best-effort", s.financeBestEffortPage)
	fin.GET("/auctions/:id", s.settlementPage)
	fin.GET("/auctions/:id/settlement.csv", s.settlementCSV)

	// The audit trail: finance and operators read and export it.
	trail := e.Group("", s.requireRole(identity.RoleFinance, identity.RoleOperator))
	trail.GET("/audit", s.auditPage)
	trail.GET("/audit.csv", s.auditCSV)
	trail.GET("/audit.jsonl", s.auditJSONLines)

	op := e.Group("/operate", s.requireRole(operator...))
	op.GET("", s.operatePage)
	op.POST("/clusters", s.addCluster)
	op.POST("/pools", s.addPool)
	op.POST("/clusters/:id/remove", s.removeCluster)
	op.POST("/pools/:cluster/:resource/remove", s.removePool)
	op.POST("/pools/:cluster/:resource/reference", s.setReferencePrice)
	op.POST("/pools/:cluster/:resource/holding", s.setHoldingCharge)
	op.GET("/pools/:cluster/:resource", s.editPoolPage)
	op.POST("/pools/:cluster/:resource", s.updatePool)
	op.POST("/pools/:cluster/:resource/utilization", s.savePsiPolicy)
	op.POST("/pools/:cluster/:resource/override", s.overridePsi)
	op.POST("/pools/:cluster/:resource/override/clear", s.clearPsiOverride)
	op.POST("/pools/:cluster/:resource/capacity", s.overrideCapacity)
	op.POST("/pools/:cluster/:resource/capacity/clear", s.clearCapacityOverride)
	op.GET("/curves/:id", s.curvePage)
	op.POST("/curves/:id", s.saveCurve)
	op.POST("/auctions", s.scheduleAuction)
	op.POST("/auctions/:id/preview", s.previewAuction)
	op.GET("/auctions/:id/close", s.closeConfirmPage)
	op.POST("/auctions/:id/close", s.closeAuction)
	op.POST("/auctions/:id/cancel", s.cancelAuction)
	op.POST("/limits", s.saveLimits)
	op.POST("/over-limit", s.saveOverLimitPolicy)
	op.GET("/trades", s.tradesPage)
	op.GET("/stats", s.statsPage)
	op.GET("/schedule", s.schedulePage)
	op.POST("/schedule/:cluster/:resource", s.savePolicy)
	op.GET("/shapes", s.shapesPage)
	op.POST("/shapes", s.saveShape)
	op.POST("/shapes/:id/delete", s.deleteShape)
	op.GET("/schedule/lost-value.csv", s.lostValueCSV)
	op.GET("/access", s.accessPage)
	op.GET("/idle", s.idlePage)
	op.POST("/idle/:cluster/:resource", s.saveIdleSettings)
	op.POST("/access/tokens/:id/revoke", s.revokeToken)
	op.POST("/access/users/:id/sessions/end", s.endUserSessions)
	op.POST("/access/users/:id/disable", s.disableUser)
	op.POST("/access/users/:id/enable", s.enableUser)

	s.apiRoutes(e.Group("/api/v1"))
}
