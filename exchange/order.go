package exchange

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
)

// OrderStatus is where an order is in its life.
type OrderStatus string

// Order statuses. Draft and awaiting approval come before open; won, lost, withdrawn
// and rejected are final.
const (
	OrderDraft            OrderStatus = "draft"
	OrderAwaitingApproval OrderStatus = "awaiting_approval"
	OrderOpen             OrderStatus = "open"
	OrderWon              OrderStatus = "won"
	OrderLost             OrderStatus = "lost"
	OrderWithdrawn        OrderStatus = "withdrawn"
	OrderRejected         OrderStatus = "rejected"
)

// Live reports whether the order still holds money or quota.
func (s OrderStatus) Live() bool {
	return s == OrderDraft || s == OrderAwaitingApproval || s == OrderOpen
}

// Bundle maps pool ids to signed whole quantities: positive buys, negative sells.
type Bundle map[string]int64

// MaxQuantity bounds any one quantity in a bundle, so that no sum of them overflows.
const MaxQuantity = 1_000_000_000_000

// MaxBundles bounds the XOR alternatives of one order.
const MaxBundles = 64

// OrderSpec is what a team asks for: an XOR list of bundles and either one limit for
// whichever it gets or one limit per bundle. A limit is the most the team pays
// (positive) or the least it must receive (negative).
type OrderSpec struct {
	Team    string
	Bundles []Bundle
	Limit   *ledger.Money  // one limit for every bundle
	Limits  []ledger.Money // or one per bundle, in bundle order
	// Key, when set, makes placing the order idempotent: placing again with the same
	// key and the same order returns the first; with another order it is ECONFLICT.
	Key string
}

// digest identifies what the order asks for, and who asks, for idempotent replays.
func (o OrderSpec) digest(by int64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%d|", o.Team, by)
	if o.Limit != nil {
		fmt.Fprintf(h, "limit=%d|", *o.Limit)
	}
	for _, l := range o.Limits {
		fmt.Fprintf(h, "limits=%d|", l)
	}
	for _, b := range o.Bundles {
		fmt.Fprintf(h, "[%s]", b.String())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Validate checks the spec's shape (not that its pools exist, which needs the market).
// It returns EINVALID naming the field and the rule.
func (o OrderSpec) Validate() error {
	if o.Team == "" {
		return clearhouse.Errorf(clearhouse.EINVALID, "team: required")
	}
	if len(o.Key) > 200 {
		return clearhouse.Errorf(clearhouse.EINVALID, "idempotency key: at most 200 characters")
	}
	if len(o.Bundles) == 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "bundles: at least one bundle is required")
	}
	if len(o.Bundles) > MaxBundles {
		return clearhouse.Errorf(clearhouse.EINVALID, "bundles: at most %d alternatives, got %d", MaxBundles, len(o.Bundles))
	}
	if (o.Limit == nil) == (o.Limits == nil) {
		return clearhouse.Errorf(clearhouse.EINVALID, "limit: give either one limit or one limit per bundle")
	}
	if o.Limits != nil && len(o.Limits) != len(o.Bundles) {
		return clearhouse.Errorf(clearhouse.EINVALID, "limits: %d limits for %d bundles; give one per bundle", len(o.Limits), len(o.Bundles))
	}
	for i, b := range o.Bundles {
		if len(b) == 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "bundles[%d]: empty; name at least one pool with a quantity", i)
		}
		for pool, q := range b {
			if q == 0 {
				return clearhouse.Errorf(clearhouse.EINVALID, "bundles[%d][%s]: quantity must not be zero", i, pool)
			}
			if q > MaxQuantity || q < -MaxQuantity {
				return clearhouse.Errorf(clearhouse.EINVALID, "bundles[%d][%s]: quantity %d is out of range (at most %d units)", i, pool, q, int64(MaxQuantity))
			}
		}
	}
	return o.checkLimitSigns()
}

// checkLimitSigns refuses limits that make no sense for the order's kind: a bid
// (every bundle only buys) pays something, so its limits are positive; an offer
// (every bundle only sells) receives something, so its limits (the least it must
// receive, negated) are zero or negative. A trade may have either.
func (o OrderSpec) checkLimitSigns() error {
	kind := o.Kind()
	for k := range o.Bundles {
		l := o.LimitOf(k)
		field := "limit"
		if o.Limits != nil {
			field = fmt.Sprintf("limits[%d]", k)
		}
		if kind == "bid" && l <= 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "%s: a bid's limit is the most it pays and must be positive, got %s", field, l)
		}
		if kind == "offer" && l > 0 {
			return clearhouse.Errorf(clearhouse.EINVALID, "%s: an offer's limit is the least it must receive (as a negative amount, or zero), got %s", field, l)
		}
	}
	return nil
}

// LimitOf returns the limit that applies to bundle k.
func (o OrderSpec) LimitOf(k int) ledger.Money {
	if o.Limits != nil {
		return o.Limits[k]
	}
	return *o.Limit
}

// MaxPayment is the most the order could ever pay: the largest positive limit over its
// bundles, or zero when every limit is a receipt. The order's money hold is this much.
func (o OrderSpec) MaxPayment() ledger.Money {
	var m ledger.Money
	for k := range o.Bundles {
		if l := o.LimitOf(k); l > m {
			m = l
		}
	}
	return m
}

// QuotaToHold is, per pool, the most quota any one alternative would sell: the quota
// an offer must set aside while it is open.
func (o OrderSpec) QuotaToHold() map[string]int64 {
	out := map[string]int64{}
	for _, b := range o.Bundles {
		for pool, q := range b {
			if q < 0 && -q > out[pool] {
				out[pool] = -q
			}
		}
	}
	return out
}

// Kind says whether the order buys, sells or trades (both, e.g. moving clusters).
func (o OrderSpec) Kind() string {
	buys, sells := false, false
	for _, b := range o.Bundles {
		for _, q := range b {
			buys = buys || q > 0
			sells = sells || q < 0
		}
	}
	switch {
	case buys && sells:
		return "trade"
	case sells:
		return "offer"
	default:
		return "bid"
	}
}

// String renders a bundle as "us-east/cpu +100, us-east/ram +400", pools sorted.
func (b Bundle) String() string {
	pools := make([]string, 0, len(b))
	for p := range b {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	parts := make([]string, len(pools))
	for i, p := range pools {
		parts[i] = fmt.Sprintf("%s %+d", p, b[p])
	}
	return strings.Join(parts, ", ")
}
