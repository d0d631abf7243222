package exchange

import (
	"database/sql"
	"fmt"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
)

// placement is one PlaceOrder waiting for its group commit on SQLite.
type placement struct {
	by     identity.User
	spec   OrderSpec
	digest string
	order  Order // the order placed, once it is
}

// placeBatch places, together, the bids among one group commit's placements (a
// store.Batcher's Run on SQLite's writer): it reads once what placeOrder reads for
// each (the auction taking bids, the teams, the limits and each team's live
// orders, the pools its live offers sell, the budgets), checks every bid in Go in
// the order they arrived against that state and the batch's earlier bids, and
// writes the ones that pass in a few multi-row statements: holds, orders, bundles,
// items. A bid that fails a check fails alone, with placeOrder's error, and writes
// nothing. It leaves to placeOrder, each in its own savepoint after the batch,
// every order that sells (its quota is set aside by holdQuota), one that would
// await approval (it notifies the owners), and one whose idempotency key is taken
// (placeOrder's duplicate key makes PlaceOrder replay the first order). Any error
// of the database rolls the batch back and every placement runs placeOrder.
//
// The outcome is the one placeOrder would give if the batch's bids ran one after
// another in their order, then the others.
func (m *Market) placeBatch(tx *gorm.DB, items []any) ([]store.BatchOutcome, error) {
	out := make([]store.BatchOutcome, len(items))
	var bids []int // indexes of the placements taken
	teamSet := map[string]bool{}
	var keys []string
	for i, it := range items {
		p := it.(*placement)
		if buys, sells := oneSidePools(p.spec); len(sells) > 0 || len(buys) > chunkSize {
			continue
		}
		bids = append(bids, i)
		teamSet[p.spec.Team] = true
		if p.spec.Key != "" {
			keys = append(keys, scopedKey(p.spec.Team, p.spec.Key))
		}
	}
	if len(bids) == 0 {
		return out, nil
	}
	now := m.now()
	a, err := biddingAuction(tx, now)
	if err != nil {
		if clearhouse.ErrorCode(err) == "" {
			return nil, err
		}
		for _, i := range bids {
			out[i] = store.BatchOutcome{Done: true, Err: err}
		}
		return out, nil
	}
	st, err := readBatchState(tx, a.ID, teamSet, keys)
	if err != nil {
		return nil, err
	}
	var accts []ledger.AccountID
	for t := range st.threshold {
		accts = append(accts, ledger.TeamAccount(t))
	}
	holds, err := m.ledger.NewHoldBatch(tx, accts)
	if err != nil {
		return nil, err
	}
	next, err := store.NextID(tx, "orders")
	if err != nil {
		return nil, err
	}

	var placed []*placement
	var held []int // indexes in placed of the orders holding money, in the order of their holds
	for _, i := range bids {
		p := items[i].(*placement)
		err := st.check(tx, p, a.ID)
		if err != nil && clearhouse.ErrorCode(err) == "" {
			return nil, err
		}
		if err != nil {
			out[i] = store.BatchOutcome{Done: true, Err: err}
			continue
		}
		o := Order{ID: next + int64(len(placed)), TeamID: p.spec.Team, AuctionID: &a.ID, CreatedBy: p.by.ID, Status: OrderOpen,
			CreatedAt: now, UpdatedAt: now, IdemDigest: p.digest}
		if thr := st.threshold[o.TeamID]; thr > 0 && int64(p.spec.MaxPayment()) > thr && p.by.Role != identity.RoleOwner {
			continue // awaits approval: placeOrder notifies the owners
		}
		if p.spec.Key != "" {
			k := scopedKey(o.TeamID, p.spec.Key)
			if st.keys[k] {
				continue // taken: placeOrder's duplicate key replays the first order
			}
			o.IdemKey = &k
		}
		if p.spec.Limit != nil {
			l := int64(*p.spec.Limit)
			o.SharedLimit = &l
		}
		if pay := p.spec.MaxPayment(); pay > 0 {
			if err := holds.Add(fmt.Sprintf("order/%d/hold", o.ID), ledger.TeamAccount(o.TeamID), pay, orderRef(o.ID)); err != nil {
				out[i] = store.BatchOutcome{Done: true, Err: err}
				continue
			}
			held = append(held, len(placed))
		}
		p.order = o
		placed = append(placed, p)
		out[i] = store.BatchOutcome{Done: true}
		st.live[o.TeamID]++
		if o.IdemKey != nil {
			st.keys[*o.IdemKey] = true
		}
	}
	if err := m.writeBatch(tx, placed, held, holds); err != nil {
		return nil, err
	}
	return out, nil
}

// batchState is what placeBatch reads once: the limits, and per team of the
// batch its approval threshold, its live orders in the auction, and the pools its
// live offers there sell; and the idempotency keys of the batch already taken.
type batchState struct {
	limits    Limits
	threshold map[string]int64           // the teams that exist
	live      map[string]int64           // counted on as the batch places orders
	offered   map[string]map[string]bool // team -> pool
	keys      map[string]bool            // scoped keys taken, by earlier orders or the batch's
}

func readBatchState(tx *gorm.DB, auctionID int64, teamSet map[string]bool, keys []string) (*batchState, error) {
	st := &batchState{threshold: map[string]int64{}, live: map[string]int64{}, offered: map[string]map[string]bool{}, keys: map[string]bool{}}
	teams := make([]string, 0, len(teamSet))
	for t := range teamSet {
		teams = append(teams, t)
	}
	in, args := store.InSet(teams)
	err := store.QueryRows(tx, "SELECT id, approval_threshold FROM teams WHERE id IN "+in, args, func(rs *sql.Rows) error {
		var id string
		var thr int64
		err := rs.Scan(&id, &thr)
		st.threshold[id] = thr
		return err
	})
	if err != nil {
		return nil, err
	}
	l := &st.limits
	if err := store.ScanRow(tx, "SELECT open_orders_per_team, bundles_per_order, pools_per_bundle FROM market_limits WHERE id = 1", nil,
		&l.OpenOrdersPerTeam, &l.BundlesPerOrder, &l.PoolsPerBundle); err != nil || l.OpenOrdersPerTeam == 0 {
		return nil, fmt.Errorf("exchange: the market's limits are missing (migration 00007): %v", err)
	}
	err = store.QueryRows(tx, "SELECT team_id, COUNT(*) FROM orders WHERE team_id IN "+in+" AND auction_id = ? AND status IN (?, ?) GROUP BY team_id",
		append(args, auctionID, OrderOpen, OrderAwaitingApproval), func(rs *sql.Rows) error {
			var id string
			var n int64
			err := rs.Scan(&id, &n)
			st.live[id] = n
			return err
		})
	if err != nil {
		return nil, err
	}
	if len(keys) > 0 {
		kin, kargs := store.InSet(keys)
		err = store.QueryRows(tx, "SELECT idem_key FROM orders WHERE idem_key IN "+kin, kargs, func(rs *sql.Rows) error {
			var k string
			err := rs.Scan(&k)
			st.keys[k] = true
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	// Only live offers set quota aside (verify checks it): a few rows, not the teams' bids.
	err = store.QueryRows(tx, `SELECT DISTINCT q.team_id, q.pool_id FROM quota_holds q JOIN orders o ON o.id = q.order_id
		WHERE q.team_id IN `+in+` AND o.auction_id = ?`, append(args, auctionID), func(rs *sql.Rows) error {
		var team, pool string
		if err := rs.Scan(&team, &pool); err != nil {
			return err
		}
		if st.offered[team] == nil {
			st.offered[team] = map[string]bool{}
		}
		st.offered[team][pool] = true
		return nil
	})
	return st, err
}

// check refuses p's bid as placeOrder would, in its order: an unknown team, the
// limits, a pool the team's live offers sell. The idempotency key is placeBatch's.
func (st *batchState) check(tx *gorm.DB, p *placement, auctionID int64) error {
	team := p.spec.Team
	if _, ok := st.threshold[team]; !ok {
		return notFound(sql.ErrNoRows, "team: no team %q", team)
	}
	if err := st.limits.check(p.spec, team, st.live[team], auctionID); err != nil {
		return err
	}
	buys, _ := oneSidePools(p.spec)
	for _, pool := range buys {
		if st.offered[team][pool] {
			return checkOneSide(tx, p.spec, team, auctionID) // names the order and the pool
		}
	}
	return nil
}

// writeBatch writes placeBatch's orders: their money holds (placed[held[k]]'s is
// hold k), then the orders, holding their holds' ids, and their bundles and items.
func (m *Market) writeBatch(tx *gorm.DB, placed []*placement, held []int, holds *ledger.HoldBatch) error {
	if len(placed) == 0 {
		return nil
	}
	hs, err := holds.Write()
	if err != nil {
		return err
	}
	if len(hs) != len(held) {
		return fmt.Errorf("exchange: %d holds written for %d orders", len(hs), len(held))
	}
	for k, j := range held {
		placed[j].order.HoldID = &hs[k].ID
	}
	orders := make([][]any, len(placed))
	var bundles, items [][]any
	for i, p := range placed {
		o := p.order
		orders[i] = []any{o.ID, o.TeamID, o.AuctionID, o.CreatedBy, o.Status, o.SharedLimit, o.HoldID, o.Note, o.IdemKey, o.IdemDigest, o.CreatedAt, o.UpdatedAt}
		bundles, items = bundleRows(bundles, items, o.ID, p.spec)
	}
	if err := store.InsertKept(tx, "orders", []string{"id", "team_id", "auction_id", "created_by", "status", "shared_limit", "hold_id",
		"note", "idem_key", "idem_digest", "created_at", "updated_at"}, orders); err != nil {
		return err
	}
	if err := store.InsertKept(tx, "order_bundles", bundleColumns, bundles); err != nil {
		return err
	}
	return store.InsertKept(tx, "order_items", itemColumns, items)
}
