package exchange

import (
	"context"
	"fmt"

	"github.com/clearhouse/clearhouse/ledger"
)

// Verify checks the market's invariants on its database and returns every
// violation (none in a sound market): a live order's money hold is active and a
// final order's is not; no live order in a settled or failed auction; a settled
// or failed auction has exactly one binding run; settlement lines only for won or
// lost orders, and one for every order a settled auction decided; quota set aside
// only for live orders and never more than the team holds; holdings within
// MaxCapacityFactor times each pool's configured capacity; a won order that pays has captured exactly its payment; each
// holding charge is its units times its rate (times its days over the month's for
// part of a month, rounded down) and its entry took that from the team.
func (m *Market) Verify(ctx context.Context) ([]ledger.Violation, error) {
	live := "('open', 'awaiting_approval', 'draft')"
	return ledger.RunChecks(ctx, m.db.Read, []ledger.Check{
		{Name: "live order holds money", Query: `SELECT o.id, o.status, h.status AS hold FROM orders o JOIN ledger_holds h ON h.id = o.hold_id
			WHERE o.status IN ` + live + ` AND h.status <> 'active' ORDER BY o.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("order %v is %v but its hold is %v", r["id"], r["status"], r["hold"])
			}},
		{Name: "final order holds nothing", Query: `SELECT o.id, o.status FROM orders o JOIN ledger_holds h ON h.id = o.hold_id
			WHERE o.status NOT IN ` + live + ` AND h.status = 'active' ORDER BY o.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("order %v is %v but its hold is still active", r["id"], r["status"])
			}},
		{Name: "no live order in a finished auction", Query: `SELECT o.id, o.status, a.id AS auction, a.status AS auction_status
			FROM orders o JOIN auctions a ON a.id = o.auction_id
			WHERE o.status IN ` + live + ` AND a.status IN ('settled', 'failed') ORDER BY o.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("order %v is %v in auction %v, which is %v", r["id"], r["status"], r["auction"], r["auction_status"])
			}},
		{Name: "one binding run per finished auction", Query: `SELECT a.id, a.status, COUNT(r.id) AS runs FROM auctions a
			LEFT JOIN auction_runs r ON r.auction_id = a.id AND r.binding
			GROUP BY a.id, a.status HAVING (a.status IN ('settled', 'failed') AND COUNT(r.id) <> 1)
			OR (a.status NOT IN ('settled', 'failed', 'closing') AND COUNT(r.id) > 0) ORDER BY a.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("auction %v is %v with %v binding runs", r["id"], r["status"], r["runs"])
			}},
		{Name: "settlement lines only for decided orders", Query: `SELECT l.auction_id, l.order_id, o.status FROM settlement_lines l
			JOIN orders o ON o.id = l.order_id WHERE o.status NOT IN ('won', 'lost') OR o.auction_id <> l.auction_id
			ORDER BY l.order_id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("order %v has a settlement line in auction %v but is %v", r["order_id"], r["auction_id"], r["status"])
			}},
		{Name: "every decided order has its line", Query: `SELECT o.id, o.status, o.auction_id FROM orders o JOIN auctions a ON a.id = o.auction_id
			WHERE a.status = 'settled' AND o.status IN ('won', 'lost')
			AND NOT EXISTS (SELECT 1 FROM settlement_lines l WHERE l.order_id = o.id AND l.auction_id = o.auction_id) ORDER BY o.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("order %v is %v in settled auction %v but has no settlement line", r["id"], r["status"], r["auction_id"])
			}},
		{Name: "quota set aside only for live orders", Query: `SELECT q.order_id, o.status, q.pool_id FROM quota_holds q JOIN orders o ON o.id = q.order_id
			WHERE o.status NOT IN ` + live + ` ORDER BY q.order_id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("order %v is %v but still sets aside quota of %v", r["order_id"], r["status"], r["pool_id"])
			}},
		{Name: "quota set aside within holdings", Query: `SELECT q.team_id, q.pool_id, SUM(q.quantity) AS offered, COALESCE(MAX(h.quantity), 0) AS held
			FROM quota_holds q LEFT JOIN holdings h ON h.team_id = q.team_id AND h.pool_id = q.pool_id
			GROUP BY q.team_id, q.pool_id HAVING SUM(q.quantity) > COALESCE(MAX(h.quantity), 0) ORDER BY q.team_id, q.pool_id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("team %v offers %v of %v but holds %v", r["team_id"], r["offered"], r["pool_id"], r["held"])
			}},
		// Supply follows the effective capacity, which may exceed the configured one
		// (a measurement or override up to MaxCapacityFactor times it) and may fall
		// below holdings later (an oversold pool: a metric and /operate, not a broken
		// invariant); no sale ever goes beyond MaxCapacityFactor times the configured.
		{Name: "holdings within capacity", Query: fmt.Sprintf(`SELECT p.id, p.capacity, SUM(h.quantity) AS held FROM pools p JOIN holdings h ON h.pool_id = p.id
			GROUP BY p.id, p.capacity HAVING SUM(h.quantity) > %d * (CASE WHEN p.capacity < 1 THEN 1 ELSE p.capacity END) ORDER BY p.id`, MaxCapacityFactor),
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("teams hold %v of %v, more than %d times its configured capacity of %v", r["held"], r["id"], MaxCapacityFactor, r["capacity"])
			}},
		{Name: "winners paid what they won", Query: `SELECT l.order_id, l.payment, h.captured, h.status FROM settlement_lines l
			JOIN orders o ON o.id = l.order_id JOIN ledger_holds h ON h.id = o.hold_id
			WHERE l.bundle_index >= 0 AND l.payment > 0 AND (h.status <> 'captured' OR h.captured <> l.payment) ORDER BY l.order_id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("order %v won for %v micro-dollars but its hold is %v with %v captured", r["order_id"], r["payment"], r["status"], r["captured"])
			}},
		{Name: "holding charges match their entries", Query: `SELECT c.pool_id, c.team_id, c.month, c.amount, c.entry_id FROM holding_charges c
			LEFT JOIN ledger_entries e ON e.id = c.entry_id AND e.reason = 'holding'
			LEFT JOIN ledger_postings p ON p.entry_id = e.id AND p.account_id = 'team:' || c.team_id
			WHERE c.amount <> CASE WHEN c.days = 0 OR c.days = c.month_days THEN c.units * c.rate ELSE c.units * c.rate * c.days / c.month_days END OR p.amount IS NULL OR p.amount <> -c.amount ORDER BY c.month, c.pool_id, c.team_id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("the holding charge of team %v for %v in %v (%v micro-dollars) does not match its entry %v", r["team_id"], r["pool_id"], r["month"], r["amount"], r["entry_id"])
			}},
	})
}
