// Package costs is what each team's budget paid for, line by line and pool by pool:
// the ledger's charges to teams (ledger.TeamCharges: auction payments and
// receipts, holding charges, reservations, best-effort jobs) attributed to the
// clusters and pools they were for. The spend page and the FOCUS export read it,
// so both add up to the ledger's own figures to the micro-dollar: a charge for
// several pools is split among them in exact integers that sum to it.
package costs

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/ledger"
)

// Line is one charge's part in one pool (or the whole charge, with PoolID "",
// when it names no pool). Amount is what it cost the team in micro-dollars, or for
// Kind ledger.SpendSold what it brought in; a reversal's line has the opposite
// sign. The lines of one ledger posting sum to it exactly.
type Line struct {
	Team      string
	Kind      string // ledger.SpendBought, SpendSold, SpendReservation, SpendBestEffort, SpendHolding
	ClusterID string // "" when the charge names no pool
	PoolID    string
	Unit      string
	Quantity  int64 // units of the pool it was for (bought, sold, held, reserved per task); 0 when unknown
	Amount    ledger.Money
	EntryID   int64
	Reversal  bool
	PostedAt  time.Time
	// PeriodStart and PeriodEnd bound what the charge is for, [start, end) UTC: a
	// holding charge's month (or the part of it charged), otherwise the day it was
	// posted.
	PeriodStart, PeriodEnd time.Time
	Memo                   string // the ledger entry's memo
}

// Reservations is what the reader needs of the reservation service.
type Reservations interface {
	Reservation(ctx context.Context, id int64) (fleet.ReservationView, error)
}

// Jobs is what the reader needs of the best-effort service.
type Jobs interface {
	Job(ctx context.Context, id int64) (besteffort.JobView, error)
}

// Reader attributes the ledger's charges to pools.
type Reader struct {
	market       *exchange.Market
	reservations Reservations
	jobs         Jobs
}

// NewReader reads the charges of the market; a reservation's or a job's charge is
// attributed through rs and js (either may be nil: its charges then name no pool).
func NewReader(m *exchange.Market, rs Reservations, js Jobs) *Reader {
	return &Reader{market: m, reservations: rs, jobs: js}
}

// Lines returns the lines of every charge to team ("" for every team) posted in
// [from, to), in posting order. Returns EINVALID when to is before from.
func (r *Reader) Lines(ctx context.Context, team string, from, to time.Time) ([]Line, error) {
	cs, err := r.market.Ledger().TeamCharges(ctx, team, from, to)
	if err != nil {
		return nil, err
	}
	pools, err := r.market.Pools(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]exchange.Pool, len(pools))
	for _, p := range pools {
		byID[p.ID] = p
	}
	a := attributor{r: r, ctx: ctx, pools: byID, auctions: map[int64]auctionParts{}}
	var out []Line
	for _, c := range cs {
		day := time.Date(c.PostedAt.Year(), c.PostedAt.Month(), c.PostedAt.Day(), 0, 0, 0, 0, time.UTC)
		base := Line{Team: c.Team, Kind: c.Kind, Amount: c.Amount, EntryID: c.EntryID, Reversal: c.EntryID != c.Source,
			PostedAt: c.PostedAt, PeriodStart: day, PeriodEnd: day.AddDate(0, 0, 1), Memo: c.Memo}
		parts, err := a.parts(c, &base)
		if err != nil {
			return nil, err
		}
		out = append(out, split(base, parts, byID)...)
	}
	return out, nil
}

// part is one pool's share of a charge: its units and its weight in the split.
type part struct {
	pool   string
	units  int64
	weight *big.Int
}

type auctionParts map[int64][]part // by entry: the pools of the order it settled

type attributor struct {
	r        *Reader
	ctx      context.Context
	pools    map[string]exchange.Pool
	auctions map[int64]auctionParts
}

// parts says which pools a charge was for, and in what proportion.
func (a *attributor) parts(c ledger.TeamCharge, base *Line) ([]part, error) {
	kind, id, _ := strings.Cut(c.Ref, ":")
	n, _ := strconv.ParseInt(id, 10, 64)
	switch {
	case c.Kind == ledger.SpendHolding && kind == "pool":
		return a.holding(c, id, base)
	case (c.Kind == ledger.SpendBought || c.Kind == ledger.SpendSold) && kind == "auction":
		ps, err := a.auction(n)
		return ps[c.Source], err
	case c.Kind == ledger.SpendReservation && kind == "reservation":
		return a.reservation(n)
	case c.Kind == ledger.SpendBestEffort && kind == "best-effort":
		return a.job(n)
	}
	return nil, nil
}

func (a *attributor) holding(c ledger.TeamCharge, pool string, base *Line) ([]part, error) {
	h, err := a.r.market.HoldingChargeOf(a.ctx, c.Source)
	if clearhouse.ErrorCode(err) == clearhouse.ENOTFOUND {
		return []part{{pool: pool, weight: big.NewInt(1)}}, nil
	}
	if err != nil {
		return nil, err
	}
	base.PeriodStart, base.PeriodEnd = h.Period()
	return []part{{pool: pool, units: h.Units, weight: big.NewInt(1)}}, nil
}

// auction reads a settled auction's orders once: each entry's bundle, weighted by
// its units at the binding prices.
func (a *attributor) auction(id int64) (auctionParts, error) {
	if ps, ok := a.auctions[id]; ok {
		return ps, nil
	}
	ps := auctionParts{}
	a.auctions[id] = ps
	rep, err := a.r.market.SettlementReport(a.ctx, id)
	if err != nil {
		return nil, err
	}
	_, prices, _, err := a.r.market.LatestRun(a.ctx, id)
	if err != nil {
		return nil, err
	}
	price := map[string]float64{}
	for _, p := range prices {
		price[p.PoolID] = p.Price
	}
	for _, l := range rep.Lines {
		if l.EntryID == nil || l.Bundle == nil {
			continue
		}
		var out []part
		for pool, q := range l.Bundle {
			if q < 0 {
				q = -q
			}
			w := int64(float64(q)*price[pool]*1e6 + 0.5) // micro-dollars at the published price
			out = append(out, part{pool: pool, units: q, weight: big.NewInt(max(w, 0))})
		}
		ps[*l.EntryID] = out
	}
	return ps, nil
}

// reservation weighs a reservation's pools by the units its requests reserve at
// each pool's unit cost.
func (a *attributor) reservation(id int64) ([]part, error) {
	if a.r.reservations == nil {
		return nil, nil
	}
	v, err := a.r.reservations.Reservation(a.ctx, id)
	if clearhouse.ErrorCode(err) == clearhouse.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	units := map[string]int64{}
	for _, q := range v.Requests {
		for pool, u := range q.Config() {
			units[pool] += u * q.Count
		}
	}
	return a.byCost(units), nil
}

// job weighs a best-effort job's pools by its units per task at each pool's unit cost.
func (a *attributor) job(id int64) ([]part, error) {
	if a.r.jobs == nil {
		return nil, nil
	}
	j, err := a.r.jobs.Job(a.ctx, id)
	if clearhouse.ErrorCode(err) == clearhouse.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return a.byCost(j.Config()), nil
}

func (a *attributor) byCost(units map[string]int64) []part {
	var out []part
	for pool, u := range units {
		w := new(big.Int).Mul(big.NewInt(u), big.NewInt(max(int64(a.pools[pool].UnitCost), 1)))
		out = append(out, part{pool: pool, units: u, weight: w})
	}
	return out
}

// split divides base's amount among parts in proportion to their weights, in
// whole micro-dollars that sum to it exactly (largest remainder, ties to the first
// pool by name). No part, or no weight, gives base whole, attributed to no pool.
func split(base Line, parts []part, pools map[string]exchange.Pool) []Line {
	sort.Slice(parts, func(i, j int) bool { return parts[i].pool < parts[j].pool })
	total := new(big.Int)
	for _, p := range parts {
		total.Add(total, p.weight)
	}
	if len(parts) == 0 || total.Sign() == 0 {
		if len(parts) == 1 {
			return []Line{withPool(base, parts[0], base.Amount, pools)}
		}
		return []Line{base}
	}
	neg := base.Amount < 0
	amount := big.NewInt(int64(base.Amount))
	amount.Abs(amount)
	shares := make([]int64, len(parts))
	rems := make([]*big.Int, len(parts))
	var given int64
	for i, p := range parts {
		q, r := new(big.Int).QuoRem(new(big.Int).Mul(amount, p.weight), total, new(big.Int))
		shares[i], rems[i] = q.Int64(), r
		given += shares[i]
	}
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return rems[order[i]].Cmp(rems[order[j]]) > 0 })
	for k := 0; given < amount.Int64(); k++ {
		shares[order[k%len(order)]]++
		given++
	}
	out := make([]Line, 0, len(parts))
	for i, p := range parts {
		s := ledger.Money(shares[i])
		if neg {
			s = -s
		}
		out = append(out, withPool(base, p, s, pools))
	}
	return out
}

func withPool(base Line, p part, amount ledger.Money, pools map[string]exchange.Pool) Line {
	l := base
	l.PoolID, l.Quantity, l.Amount = p.pool, p.units, amount
	if pl, ok := pools[p.pool]; ok {
		l.ClusterID, l.Unit = pl.ClusterID, pl.Unit
	} else if c, _, ok := strings.Cut(p.pool, "/"); ok {
		l.ClusterID = c
	}
	return l
}

// String names a line for test failures.
func (l Line) String() string {
	return fmt.Sprintf("%s %s %s %d %s entry %d", l.Team, l.Kind, l.PoolID, l.Quantity, l.Amount, l.EntryID)
}
