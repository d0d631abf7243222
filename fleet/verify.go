package fleet

import (
	"context"
	"fmt"

	"github.com/clearhouse/clearhouse/ledger"
)

// Verify checks the reservations' invariants on the database and returns every
// violation (none when sound): what a reservation has charged and released equals
// its hold's captured and released parts and never exceeds its price; a finished
// reservation holds nothing; an accepted one with charges still to come holds them.
func (s *Reservations) Verify(ctx context.Context) ([]ledger.Violation, error) {
	return ledger.RunChecks(ctx, s.db.Read, []ledger.Check{
		{Name: "reservation charges match its hold", Query: `SELECT r.id, r.captured, r.released, h.captured AS hold_captured, h.released AS hold_released
			FROM reservations r JOIN ledger_holds h ON h.id = r.hold_id
			WHERE r.captured <> h.captured OR r.released <> h.released OR r.captured + r.released > r.price ORDER BY r.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("reservation %v charged %v and released %v, but its hold captured %v and released %v",
					r["id"], r["captured"], r["released"], r["hold_captured"], r["hold_released"])
			}},
		{Name: "finished reservation holds nothing", Query: `SELECT r.id, r.status FROM reservations r JOIN ledger_holds h ON h.id = r.hold_id
			WHERE r.status IN ('done', 'cancelled', 'failed', 'rejected') AND h.status = 'active' ORDER BY r.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("reservation %v is %v but its hold is still active", r["id"], r["status"])
			}},
		{Name: "accepted reservation holds its charges", Query: `SELECT r.id, r.price, r.price - r.captured - r.released AS unsettled, h.status FROM reservations r
			JOIN ledger_holds h ON h.id = r.hold_id
			WHERE r.status = 'accepted' AND r.captured + r.released < r.price AND h.status <> 'active' ORDER BY r.id`,
			Describe: func(r map[string]any) string {
				return fmt.Sprintf("reservation %v is accepted with %v of its price of %v still to settle, but its hold is %v",
					r["id"], r["unsettled"], r["price"], r["status"])
			}},
	})
}
