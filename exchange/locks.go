package exchange

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Lock order. Several servers may share one PostgreSQL database, so every use case
// that locks more than one row takes its locks in this one order; writers then
// wait for each other but never deadlock (SQLite has one writer and never waits):
//
//  1. the auction's gate: shared by every write to its orders (place, withdraw,
//     approve, reject), exclusive by close while it marks the auction closing. On
//     PostgreSQL it is a transaction-scoped advisory lock, whose queue is fair: a
//     close waits for the writes in flight, and writes arriving after it wait for
//     the close (a row lock shared by a stream of writers would starve the close);
//     then the auction's row (FOR UPDATE by close and opening);
//  2. the team's row (FOR UPDATE) while placing an order, so per-team limits hold;
//  3. order rows (FOR UPDATE), by ascending id;
//  4. pool rows (FOR UPDATE) when quota is granted or capacity changes;
//  5. holdings rows (FOR UPDATE), by team then pool;
//  6. the reservation plan's row (plan_state), which every quota change moves;
//  7. quota_holds rows;
//  8. the ledger's rows: holds by ascending id, then accounts by ascending id;
//  9. the audit trail's head (audit_head, FOR UPDATE), taken by audit.Record as the
//     last write of a use case that changes the market's money, quota or rules.
//
// A use case may skip levels but never goes back up. Close runs in two
// transactions: the first only marks the auction closing (waiting for order writes
// in flight, which hold the auction's row shared); every later order write finds
// it closing and is refused, so the second, the binding run and its settlement,
// sees exactly the orders whose writes were confirmed.

// gateKeys is the advisory-lock key space of auctions' gates: key gateKeys + id.
const gateKeys = 0x4348_4741_0000_0000 // "CHGA"

// enterGate takes auction id's gate until tx ends: shared for an order write,
// exclusive for a close. SQLite has one writer, which is gate enough.
func enterGate(tx *gorm.DB, id int64, exclusive bool) error {
	if tx.Dialector.Name() != "postgres" {
		return nil
	}
	fn := "pg_advisory_xact_lock_shared"
	if exclusive {
		fn = "pg_advisory_xact_lock"
	}
	return tx.Exec("SELECT "+fn+"(?)", gateKeys+id).Error
}

// shareAuction takes auction id's gate shared and reads the auction as it is once
// the gate is held.
func shareAuction(tx *gorm.DB, id int64) (Auction, error) {
	if err := enterGate(tx, id, false); err != nil {
		return Auction{}, err
	}
	var a Auction
	err := tx.Take(&a, "id = ?", id).Error
	return a, notFound(err, "auction: no auction %d", id)
}

// lockAuction reads auction id and locks its row exclusively until tx ends.
func lockAuction(tx *gorm.DB, id int64) (Auction, error) {
	var a Auction
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&a, "id = ?", id).Error
	return a, notFound(err, "auction: no auction %d", id)
}

// lockOrder reads order id and locks its row until tx ends.
func lockOrder(tx *gorm.DB, id int64) (Order, error) {
	var o Order
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&o, "id = ?", id).Error
	return o, notFound(err, "order: no order %d", id)
}

// lockHoldings locks a team's holdings of pools (those that exist), in pool order.
func lockHoldings(tx *gorm.DB, team string, pools []string) error {
	sorted := slices.Clone(pools)
	slices.Sort(sorted)
	var hs []Holding
	return tx.Clauses(clause.Locking{Strength: "UPDATE"}).Where("team_id = ? AND pool_id IN ?", team, sorted).
		Order("pool_id").Find(&hs).Error
}

// setStatus moves orders ids from status from to status to, and fails unless every
// one of them was in from: a final status is never written over a state it did not
// expect. Any number of ids is fine: on SQLite they go in one statement (as one JSON
// array), since each statement that may fail part-way journals every page it changes
// once, and a settlement's orders touch the same pages of the orders' indexes from
// every thousand; on PostgreSQL too, as one array parameter (= ANY): a thousand a
// statement spent 6 s of the server's time on 100,000 orders.
func setStatus(tx *gorm.DB, ids []int64, from []OrderStatus, to OrderStatus, at any) error {
	if len(ids) > 1 && tx.Dialector.Name() != store.Postgres {
		list, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		res := tx.Model(&Order{}).Where("id IN (SELECT value FROM json_each(?)) AND status IN ?", string(list), from).
			Updates(map[string]any{"status": to, "updated_at": at})
		return statusSet(res, len(ids))
	}
	switch len(ids) {
	case 0:
		return nil
	case 1:
		res := tx.Model(&Order{}).Where("id = ? AND status IN ?", ids[0], from).Updates(map[string]any{"status": to, "updated_at": at})
		return statusSet(res, 1)
	}
	res := tx.Model(&Order{}).Where("id = ANY(CAST(? AS BIGINT[])) AND status IN ?", store.BigintArray(ids), from).
		Updates(map[string]any{"status": to, "updated_at": at})
	return statusSet(res, len(ids))
}

// statusSet is res's error, or ECONFLICT unless it changed all n orders.
func statusSet(res *gorm.DB, n int) error {
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != int64(n) {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "order: %d of %d orders changed state concurrently; nothing was changed",
			int64(n)-res.RowsAffected, n)
	}
	return nil
}

// chunkSize bounds the parameters any one statement takes (SQLite allows 32,766,
// PostgreSQL 65,535).
const chunkSize = 1000

// isDuplicate reports a unique-key violation (gorm's TranslateError).
func isDuplicate(err error) bool { return errors.Is(err, gorm.ErrDuplicatedKey) }

// closingError is what every write to an order of a closing auction gets.
func closingError(a Auction) error {
	switch {
	case a.Halted():
		return clearhouse.Errorf(clearhouse.ECONFLICT, "auction %d could not close (%s); its orders can only be withdrawn until an operator retries the close or cancels it", a.ID, a.Failure)
	case a.Status == AuctionClosing:
		return clearhouse.Errorf(clearhouse.ECONFLICT, "auction %d is closing; its orders can no longer change", a.ID)
	case a.Status == AuctionSettled || a.Status == AuctionFailed:
		return clearhouse.Errorf(clearhouse.ECONFLICT, "auction %d is %s; its orders can no longer change", a.ID, a.Status)
	}
	return fmt.Errorf("auction %d is %s", a.ID, a.Status)
}

// forUpdate is the clause that locks the rows a SELECT reads until tx ends, for
// statements written by hand: " FOR UPDATE" on PostgreSQL; nothing on SQLite,
// whose one writer already holds the whole database.
func forUpdate(tx *gorm.DB) string {
	if tx.Dialector.Name() == store.Postgres {
		return " FOR UPDATE"
	}
	return ""
}
