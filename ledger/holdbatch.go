package ledger

import (
	"database/sql"
	"slices"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// HoldBatch places many new holds (each as PlaceNewHold would) inside one SQLite
// write transaction in a few statements: Add checks each hold against its
// account's available balance less the holds added before it, in Go, and Write
// inserts them all in multi-row statements and adds each account's total to its
// held column once. It is for a group commit's batch of placements (the market's
// busiest write); the schema's CHECK still guards every account when Write runs.
type HoldBatch struct {
	l     *Ledger
	tx    *gorm.DB
	accts map[AccountID]*batchAccount
	order []AccountID // accounts in the order of their first hold
	holds []Hold
}

type batchAccount struct {
	balance, held Money // as read
	added         Money // by the batch's holds
}

// NewHoldBatch reads accts' balances in tx, a SQLite write transaction, for a batch
// of new holds on them.
func (l *Ledger) NewHoldBatch(tx *gorm.DB, accts []AccountID) (*HoldBatch, error) {
	b := &HoldBatch{l: l, tx: tx, accts: map[AccountID]*batchAccount{}}
	ids := slices.Compact(slices.Sorted(slices.Values(accts)))
	in, args := store.InSet(ids)
	err := store.QueryRows(tx, "SELECT id, balance, held FROM ledger_accounts WHERE id IN "+in, args, func(rs *sql.Rows) error {
		var id AccountID
		var a batchAccount
		if err := rs.Scan(&id, &a.balance, &a.held); err != nil {
			return err
		}
		b.accts[id] = &a
		return nil
	})
	return b, err
}

// Add adds a hold of amount on acct to the batch when its account's available
// balance (less the batch's earlier holds on it) covers it. It returns the error
// PlaceNewHold would, and then the batch is as it was: EINVALID for a bad key,
// account or amount, ENOTFOUND for an account not read by NewHoldBatch,
// EUNPROCESSABLE when the balance does not cover the hold.
func (b *HoldBatch) Add(key string, acct AccountID, amount Money, ref string) error {
	key, err := checkHold(key, acct, amount)
	if err != nil {
		return err
	}
	a := b.accts[acct]
	if a == nil {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, "account: no account %s", acct)
	}
	added, err := a.added.Add(amount)
	if err != nil {
		return err
	}
	held, err := a.held.Add(added)
	if err != nil {
		return err
	}
	if a.balance-held < 0 {
		return insufficientFunds(acct)
	}
	if a.added == 0 {
		b.order = append(b.order, acct)
	}
	a.added = added
	b.holds = append(b.holds, Hold{Key: key, Account: acct, Amount: amount, Ref: ref, Status: HoldActive, CreatedAt: b.l.now()})
	return nil
}

// Write inserts the batch's holds and returns them with their ids, in the order
// they were added. An error leaves tx to be rolled back.
func (b *HoldBatch) Write() ([]Hold, error) {
	if len(b.holds) == 0 {
		return nil, nil
	}
	next, err := store.NextID(b.tx, "ledger_holds")
	if err != nil {
		return nil, err
	}
	rows := make([][]any, len(b.holds))
	for i := range b.holds {
		h := &b.holds[i]
		h.ID = next + int64(i)
		rows[i] = []any{h.ID, h.Key, h.Account, h.Amount, h.Ref, h.Status, h.Captured, h.Released, h.CreatedAt}
	}
	for _, acct := range b.order { // the schema's CHECK guards each account again
		if err := addToAccount(b.tx, acct, "held", b.accts[acct].added); err != nil {
			return nil, err
		}
	}
	err = store.InsertKept(b.tx, "ledger_holds", []string{"id", "idem_key", "account_id", "amount", "ref", "status", "captured", "released", "created_at"}, rows)
	return b.holds, err
}
