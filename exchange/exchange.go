// Package exchange is the market: teams and their quota holdings, clusters and pools
// with their reserve curves, orders, scheduled auctions and settlement. Its services
// validate every input, run each use case in one database transaction and return
// domain errors (clearhouse.Error) that the web layer maps to statuses.
package exchange

import (
	"database/sql"
	"errors"
	"regexp"
	"time"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/store"
)

// Market is the market's service: teams, clusters, pools, holdings, orders and
// auctions.
type Market struct {
	db     *store.DB
	ledger *ledger.Ledger
	now    func() time.Time

	committed QuotaCommitments    // quota reservations need; nil: none
	measured  MeasuredUtilization // each pool's psi; nil: the pool's stored utilization
	interest  interestCache       // the last count of open interest
	notices   *notify.Service     // what users are told, in the app and by email
	closes    CloseObserver       // told of every binding close; nil: nobody
	placer    *store.Batcher      // placements of one group commit, together (placeBatch)
}

// NewMarket returns the market service on db, keeping budgets in l, with the clock
// now.
func NewMarket(db *store.DB, l *ledger.Ledger, now func() time.Time) *Market {
	utc := func() time.Time { return now().UTC() }
	m := &Market{db: db, ledger: l, now: utc, notices: notify.New(db, utc)}
	m.placer = &store.Batcher{Run: m.placeBatch}
	return m
}

// UseNotices makes the market tell its users through n: the one notification
// service the binary builds (App.Open) and passes to the market, the reservations,
// the web layer and the e-mail job. A market left without it keeps notifications in
// the app through a service of its own.
func (m *Market) UseNotices(n *notify.Service) { m.notices = n }

// Notices is the service the market tells its users through, for tests that build a
// market alone and read what it said; the binary passes the one it built instead.
func (m *Market) Notices() *notify.Service { return m.notices }

// Ledger is the budget ledger the market posts to.
func (m *Market) Ledger() *ledger.Ledger { return m.ledger }

var slug = regexp.MustCompile(`^[a-z][a-z0-9-]{0,38}[a-z0-9]$`)

// checkSlug returns EINVALID naming field unless s is a lower-case identifier.
func checkSlug(field, s string) error {
	if !slug.MatchString(s) {
		return clearhouse.Errorf(clearhouse.EINVALID,
			"%s: %q must be 2 to 40 lower-case letters, digits or dashes, starting with a letter", field, s)
	}
	return nil
}

// notFound turns gorm's ErrRecordNotFound into ENOTFOUND with message.
func notFound(err error, format string, args ...any) error {
	if errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, sql.ErrNoRows) {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, format, args...)
	}
	return err
}
