package ledger_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"pgregory.net/rapid"
)

// model is the simple in-memory ledger the real one must agree with.
type model struct {
	balance map[ledger.AccountID]ledger.Money
	holds   map[int64]*modelHold
	entries []ledger.Entry // posted, for reversal
	reverse map[int64]bool // entries already reversed
}

type modelHold struct {
	account            ledger.AccountID
	amount             ledger.Money
	captured, released ledger.Money
	active             bool
}

func (h *modelHold) remaining() ledger.Money { return h.amount - h.captured - h.released }

// modelPart is a part settled under a key.
type modelPart struct {
	hold             int64
	capture, release ledger.Money
}

func (m *model) available(a ledger.AccountID) ledger.Money {
	av := m.balance[a]
	for _, h := range m.holds {
		if h.active && h.account == a {
			av -= h.remaining()
		}
	}
	return av
}

var iteration atomic.Int64

// TestLedgerAgreesWithModel drives random grants, transfers, holds, captures,
// releases, partial settlements and reversals, with replayed keys, and checks the
// invariants after every step.
func TestLedgerAgreesWithModel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		clock := storetest.NewClock(time.Time{})
		l := ledger.New(db, clock.Now)
		ctx := context.Background()
		for _, a := range []ledger.AccountID{ledger.Treasury, ledger.Grants} {
			if err := l.OpenAccount(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		rapid.Check(t, func(rt *rapid.T) {
			it := iteration.Add(1)
			teams := []ledger.AccountID{ledger.AccountID(fmt.Sprintf("team:a%d", it)), ledger.AccountID(fmt.Sprintf("team:b%d", it))}
			for _, a := range teams {
				if err := l.OpenAccount(ctx, a); err != nil {
					rt.Fatal(err)
				}
			}
			base := map[ledger.AccountID]ledger.Money{}
			for _, a := range []ledger.AccountID{ledger.Treasury, ledger.Grants} {
				b, _ := l.Balance(ctx, a)
				base[a] = b.Posted
			}
			m := &model{balance: map[ledger.AccountID]ledger.Money{}, holds: map[int64]*modelHold{}, reverse: map[int64]bool{}}
			key := func(kind string) string {
				// Keys are sometimes reused, to exercise replays and conflicts.
				return fmt.Sprintf("%d/%s/%d", it, kind, rapid.IntRange(0, 6).Draw(rt, "key"))
			}
			amount := rapid.Custom(func(t *rapid.T) ledger.Money {
				return ledger.Money(rapid.Int64Range(1, 50).Draw(t, "dollars")) * ledger.Dollar / 2
			})
			posted := map[string]ledger.Entry{} // by key
			holdKeys := map[string]ledger.Hold{}
			parts := map[string]modelPart{}
			steps := rapid.IntRange(1, 30).Draw(rt, "steps")
			for range steps {
				clock.Advance(time.Minute)
				team := rapid.SampledFrom(teams).Draw(rt, "team")
				switch rapid.IntRange(0, 6).Draw(rt, "op") {
				case 0, 1: // grant or transfer team -> treasury
					amt := amount.Draw(rt, "amount")
					from := ledger.Grants
					if rapid.Bool().Draw(rt, "spend") {
						from = team
					}
					to := team
					if from == team {
						to = ledger.Treasury
					}
					e := ledger.NewEntry{Key: key("post"), Reason: ledger.ReasonAdjustment, Ref: "test",
						Postings: []ledger.Posting{{from, -amt}, {to, amt}}}
					got, err := l.Post(ctx, e)
					prior, replay := posted[e.Key]
					switch {
					case replay && samePostings(prior, e):
						if err != nil || got.ID != prior.ID {
							rt.Fatalf("replay of %s = %+v, %v", e.Key, got, err)
						}
					case replay:
						if clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
							rt.Fatalf("conflicting replay of %s = %v", e.Key, err)
						}
					case from == team && m.available(team) < amt:
						if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE {
							rt.Fatalf("overdraft of %s by %s (available %s) = %v", team, amt, m.available(team), err)
						}
					default:
						if err != nil {
							rt.Fatal(err)
						}
						posted[e.Key] = got
						m.balance[from] -= amt
						m.balance[to] += amt
						m.entries = append(m.entries, got)
					}
				case 2: // place a hold
					amt := amount.Draw(rt, "amount")
					k := key("hold")
					h, err := l.PlaceHold(ctx, k, team, amt, "order")
					prior, replay := holdKeys[k]
					switch {
					case replay && prior.Account == team && prior.Amount == amt:
						if err != nil || h.ID != prior.ID {
							rt.Fatalf("hold replay = %+v, %v", h, err)
						}
					case replay:
						if clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
							rt.Fatalf("conflicting hold replay = %v", err)
						}
					case m.available(team) < amt:
						if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE {
							rt.Fatalf("hold of %s with %s available = %v", amt, m.available(team), err)
						}
					default:
						if err != nil {
							rt.Fatal(err)
						}
						holdKeys[k] = h
						m.holds[h.ID] = &modelHold{account: team, amount: amt, active: true}
					}
				case 3, 4: // capture or release a hold
					if len(holdKeys) == 0 {
						continue
					}
					var ids []int64
					for _, h := range holdKeys {
						ids = append(ids, h.ID)
					}
					id := rapid.SampledFrom(sortedIDs(ids)).Draw(rt, "hold")
					mh := m.holds[id]
					k := fmt.Sprintf("%d/resolve/%d/%d", it, id, rapid.IntRange(0, 1).Draw(rt, "rk"))
					if rapid.Bool().Draw(rt, "capture") {
						amt := ledger.Money(rapid.Int64Range(0, int64(mh.amount)).Draw(rt, "captured"))
						_, err := l.CaptureHold(ctx, k, id, amt, ledger.Treasury, ledger.ReasonSettlement, "auction")
						if mh.active && amt > mh.remaining() {
							if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
								rt.Fatalf("capture of %s with %s remaining = %v", amt, mh.remaining(), err)
							}
							continue
						}
						if !mh.active {
							if err == nil {
								// Only a replay of the very same capture may succeed.
								if _, ok := posted["cap:"+k]; !ok && amt != 0 {
									rt.Fatalf("a resolved hold was captured again with %s", k)
								}
							}
							continue
						}
						if err != nil {
							rt.Fatal(err)
						}
						mh.active = false
						m.balance[mh.account] -= amt
						m.balance[ledger.Treasury] += amt
						posted["cap:"+k] = ledger.Entry{}
					} else {
						err := l.ReleaseHold(ctx, k, id)
						if !mh.active {
							continue
						}
						if err != nil {
							rt.Fatal(err)
						}
						mh.active = false
					}
				case 6: // settle a part of a hold
					if len(holdKeys) == 0 {
						continue
					}
					var ids []int64
					for _, h := range holdKeys {
						ids = append(ids, h.ID)
					}
					id := rapid.SampledFrom(sortedIDs(ids)).Draw(rt, "hold")
					mh := m.holds[id]
					k := key("part")
					p := modelPart{hold: id,
						capture: ledger.Money(rapid.Int64Range(0, int64(mh.amount)/2).Draw(rt, "capture")),
						release: ledger.Money(rapid.Int64Range(0, int64(mh.amount)/2).Draw(rt, "release"))}
					h, err := l.SettleHoldPart(ctx, k, id, p.capture, p.release, ledger.Treasury, ledger.ReasonReservation, "reservation")
					prior, replay := parts[k]
					switch {
					case p.capture == 0 && p.release == 0:
						if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
							rt.Fatalf("empty part = %v", err)
						}
					case replay && prior == p:
						if err != nil || h.ID != id || h.Captured != mh.captured || h.Released != mh.released {
							rt.Fatalf("part replay = %+v, %v; model %+v", h, err, *mh)
						}
					case replay:
						if clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
							rt.Fatalf("conflicting part replay = %v", err)
						}
					case !mh.active:
						if clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
							rt.Fatalf("part of a resolved hold = %v", err)
						}
					case p.capture+p.release > mh.remaining():
						if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
							rt.Fatalf("part %+v of %s remaining = %v", p, mh.remaining(), err)
						}
					default:
						if err != nil {
							rt.Fatal(err)
						}
						parts[k] = p
						mh.captured += p.capture
						mh.released += p.release
						mh.active = mh.remaining() > 0
						m.balance[mh.account] -= p.capture
						m.balance[ledger.Treasury] += p.capture
						if h.Captured != mh.captured || h.Released != mh.released || (h.Status == ledger.HoldActive) != mh.active {
							rt.Fatalf("after part %+v: hold %+v, model %+v", p, h, *mh)
						}
					}
				case 5: // reverse an entry
					if len(m.entries) == 0 {
						continue
					}
					e := rapid.SampledFrom(m.entries).Draw(rt, "entry")
					_, err := l.Reverse(ctx, fmt.Sprintf("%d/rev/%d", it, e.ID), e.ID, "")
					if m.reverse[e.ID] {
						if err != nil {
							rt.Fatalf("reversal replay: %v", err)
						}
						continue
					}
					ok := true
					for _, p := range e.Postings {
						if _, team := p.Account.Team(); team && m.available(p.Account) < p.Amount {
							ok = false
						}
					}
					if !ok {
						if clearhouse.ErrorCode(err) != clearhouse.EUNPROCESSABLE {
							rt.Fatalf("reversal that overdraws = %v", err)
						}
						continue
					}
					if err != nil {
						rt.Fatal(err)
					}
					m.reverse[e.ID] = true
					for _, p := range e.Postings {
						m.balance[p.Account] -= p.Amount
					}
				}
				checkInvariants(rt, l, db, m, teams, base)
			}
		})
	})
}

func samePostings(e ledger.Entry, n ledger.NewEntry) bool {
	if len(e.Postings) != len(n.Postings) {
		return false
	}
	for _, p := range n.Postings {
		found := false
		for _, q := range e.Postings {
			found = found || p == q
		}
		if !found {
			return false
		}
	}
	return true
}

func sortedIDs(ids []int64) []int64 {
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[j] < ids[i] {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
	return ids
}

func checkInvariants(rt *rapid.T, l *ledger.Ledger, db *store.DB, m *model, teams []ledger.AccountID, base map[ledger.AccountID]ledger.Money) {
	ctx := context.Background()
	for _, a := range teams {
		b, err := l.Balance(ctx, a)
		if err != nil {
			rt.Fatal(err)
		}
		var held ledger.Money
		for _, h := range m.holds {
			if h.active && h.account == a {
				held += h.remaining()
			}
		}
		if b.Posted != m.balance[a] || b.Held != held {
			rt.Fatalf("%s: ledger %+v, model posted %s held %s", a, b, m.balance[a], held)
		}
		if b.Available < 0 {
			rt.Fatalf("%s: available %s below zero", a, b.Available)
		}
	}
	for _, a := range []ledger.AccountID{ledger.Treasury, ledger.Grants} {
		b, _ := l.Balance(ctx, a)
		if b.Posted-base[a] != m.balance[a] {
			rt.Fatalf("%s moved by %s, model %s", a, b.Posted-base[a], m.balance[a])
		}
	}
	var unbalanced, total, mismatched int64
	db.Read.Raw("SELECT COUNT(*) FROM (SELECT entry_id FROM ledger_postings GROUP BY entry_id HAVING SUM(amount) <> 0) x").Scan(&unbalanced)
	db.Read.Raw("SELECT COALESCE(SUM(amount), 0) FROM ledger_postings").Scan(&total)
	db.Read.Raw(`SELECT COUNT(*) FROM ledger_accounts a WHERE a.balance <> (SELECT COALESCE(SUM(amount), 0) FROM ledger_postings p WHERE p.account_id = a.id)
		OR a.held <> (SELECT COALESCE(SUM(amount - captured - released), 0) FROM ledger_holds h WHERE h.account_id = a.id AND h.status = 'active')`).Scan(&mismatched)
	if unbalanced != 0 || total != 0 || mismatched != 0 {
		rt.Fatalf("%d unbalanced entries, postings sum to %d, %d accounts disagree with their postings or holds", unbalanced, total, mismatched)
	}
}
