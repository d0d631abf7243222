package apiv1

import "time"

// Market is the body of GET /market: the auction taking bids (null between
// auctions) and every pool with its holdings, prices and open interest.
type Market struct {
	Auction *Auction `json:"auction"`
	Pools   []Pool   `json:"pools"`
}

// Pool is one pool of the market.
type Pool struct {
	ID       string `json:"id"`
	Cluster  string `json:"cluster"`
	Resource string `json:"resource"`
	Unit     string `json:"unit"`
	Capacity int64  `json:"capacity"` // configured
	// EffectiveCapacity is what the market sells: an operator's override, else the
	// agent's measured capacity, else the configured one.
	EffectiveCapacity int64   `json:"effective_capacity"`
	CapacitySource    string  `json:"capacity_source"` // configured, measured or override
	Held              int64   `json:"held"`
	UnitCost          string  `json:"unit_cost"`
	Utilization       float64 `json:"utilization"`
	// UtilizationSource says where psi comes from: measured, override or held (no usage data).
	UtilizationSource string  `json:"utilization_source,omitempty"`
	ReservePrice      *string `json:"reserve_price"`
	Price             *string `json:"price"`
	PriceBasis        string  `json:"price_basis,omitempty"` // "traded" or "indicative" (nothing traded at it)
	Bids              int     `json:"open_bids"`
	Offers            int     `json:"open_offers"`
}

// Auction is one auction; Pools and Run only in GET /auctions/{id}.
type Auction struct {
	ID       int64         `json:"id"`
	Status   string        `json:"status"`
	OpensAt  time.Time     `json:"opens_at"`
	ClosesAt time.Time     `json:"closes_at"`
	ClosedAt *time.Time    `json:"closed_at"`  // when it actually stopped taking bids; null while it takes them
	Settled  *time.Time    `json:"settled_at"` // null until it settles
	Failure  string        `json:"failure,omitempty"`
	Pools    []AuctionPool `json:"pools,omitempty"`
	Run      *Run          `json:"latest_run,omitempty"`
}

// AuctionPool is one pool of an auction: its reserve price, supply and, once the
// clock has run, its price.
type AuctionPool struct {
	Pool         string   `json:"pool"`
	ReservePrice string   `json:"reserve_price"`
	Supply       int64    `json:"supply"`
	Price        *string  `json:"price"`
	PriceBasis   string   `json:"price_basis,omitempty"` // "traded" or "indicative" (nothing traded at it)
	TradedUnits  int64    `json:"traded_units"`          // units bought at the price
	ExcessDemand *float64 `json:"excess_demand"`
}

// Run is an auction's latest run of the clock.
type Run struct {
	Binding   bool      `json:"binding"`
	Converged bool      `json:"converged"`
	Rounds    int       `json:"rounds"`
	Orders    int       `json:"orders"`
	RanAt     time.Time `json:"ran_at"`
}

// AuctionList is the body of GET /auctions, newest first.
type AuctionList struct {
	Auctions []Auction `json:"auctions"`
}

// NewOrder is the body of POST /orders: a bid (positive quantities), an offer
// (negative) or a swap, as bundles of pool -> units, with one limit for all bundles
// or one per bundle.
type NewOrder struct {
	Team    string             `json:"team,omitempty"`
	Bundles []map[string]int64 `json:"bundles"`
	Limit   *Money             `json:"limit,omitempty"`
	Limits  []Money            `json:"limits,omitempty"`
}

// Order is an order as the API returns it.
type Order struct {
	ID          int64              `json:"id,omitempty"`
	Team        string             `json:"team,omitempty"`
	Auction     *int64             `json:"auction,omitempty"`
	Status      string             `json:"status,omitempty"`
	Bundles     []map[string]int64 `json:"bundles"`
	Limit       *string            `json:"limit,omitempty"`
	Limits      []string           `json:"limits,omitempty"`
	Provisional *Outcome           `json:"provisional,omitempty"`
	CreatedAt   *time.Time         `json:"created_at,omitempty"`
}

// Outcome is what an order wins or loses if the auction closed now.
type Outcome struct {
	BundleNumber int    `json:"bundle_number,omitempty"` // counted from 1, as pages and CSV count; absent: loses
	BundleIndex  int    `json:"bundle_index"`            // deprecated: counted from 0; -1: loses
	Payment      string `json:"payment"`                 // dollars; negative: received
	// PaymentRule is the rule the winner's payment followed (clock_prices, core,
	// core_least_revenue, capped_prices; docs/final-round.md); absent for an
	// order that gets nothing and for runs recorded before it was.
	PaymentRule string `json:"payment_rule,omitempty"`
	// VCGPayment is, for a core payment (core or core_least_revenue), the
	// winner's VCG payment in dollars: what its bundle cost the other orders, the
	// least a core payment could be (the payment is at least this and at most the
	// limit). Absent otherwise, and for runs recorded before it was.
	VCGPayment string `json:"vcg_payment,omitempty"`
}

// PlacedOrder is the answer to POST /orders: the new order with what its client
// should know (a bid whose limit is below the cost at reserve prices is placed, with
// a warning that it cannot win in this auction).
type PlacedOrder struct {
	Order
	Warnings []string `json:"warnings,omitempty"`
}

// OrderList is the body of GET /orders, newest first; Next is the next page's URL.
type OrderList struct {
	Orders []Order `json:"orders"`
	Next   string  `json:"next,omitempty"`
}

// Budget is a team's budget account.
type Budget struct {
	Team      string `json:"team"`
	Posted    string `json:"posted"`
	Held      string `json:"held"`
	Available string `json:"available"`
}

// Settlement is the body of GET /auctions/{id}/settlement.
type Settlement struct {
	Auction    Auction           `json:"auction"`
	Lines      []SettlementLine  `json:"lines"`
	Totals     SettlementTotals  `json:"totals"`
	FinalRound *FinalRoundReport `json:"final_round,omitempty"`
}

// SettlementLine is one order's settlement.
type SettlementLine struct {
	Order        int64            `json:"order"`
	Team         string           `json:"team"`
	BundleNumber int              `json:"bundle_number,omitempty"` // counted from 1, as pages and CSV count; absent: lost
	BundleIndex  int              `json:"bundle_index"`            // deprecated: counted from 0; -1: lost
	Bundle       map[string]int64 `json:"bundle,omitempty"`
	Payment      string           `json:"payment"`
	ClockPayment string           `json:"clock_payment"` // the engine's payment (clock and final round), unrounded
	AtPrices     string           `json:"at_prices"`     // the bundle at the published prices
	EntryID      *int64           `json:"entry_id,omitempty"`
	// PaymentRule is the rule the winner's payment followed: clock_prices,
	// core, core_least_revenue or capped_prices (docs/final-round.md); absent
	// for an order that lost, and for auctions settled before it was recorded.
	PaymentRule string `json:"payment_rule,omitempty"`
	// VCGPayment is, for a core payment, the winner's VCG payment in dollars,
	// unrounded as clock_payment is: the least a core payment could be. Absent
	// otherwise, and for auctions settled before it was recorded.
	VCGPayment string `json:"vcg_payment,omitempty"`
}

// SettlementTotals are a settlement's sums: what buyers paid, sellers received, the
// treasury kept, and the rounding to the micro-dollar.
type SettlementTotals struct {
	BuyersPaid      string `json:"buyers_paid"`
	SellersReceived string `json:"sellers_received"`
	TreasuryNet     string `json:"treasury_net"`
	Rounding        string `json:"rounding"`
}

// FinalRoundReport is what an auction's final round found: its welfare against the
// clock's and the bound, whether it proved the optimum, and how long it took.
type FinalRoundReport struct {
	Welfare      float64 `json:"welfare"`
	ClockWelfare float64 `json:"clock_welfare"`
	Bound        float64 `json:"bound"`
	Optimal      bool    `json:"optimal"`
	Seconds      float64 `json:"seconds"`
	// Payments is the rule that set the winners' payments: "core" (the core point
	// nearest VCG, or a least-revenue core point where that step failed on a
	// degenerate system), "capped_prices" (the bundle at the clock's prices, capped
	// at the limit) or "mixed" (core where a part was proved optimal;
	// docs/final-round.md).
	Payments string `json:"payments"`
	// Parts is how many independent parts (sharing no pool and no order) the final
	// round split the market into, CoreParts how many of them paid core payments
	// (the rest capped prices), LeastRevenueParts how many of those paid the
	// least-revenue core point because the step to the point nearest VCG failed.
	// Absent when not recorded (runs settled before they were).
	Parts             *int `json:"parts,omitempty"`
	CoreParts         *int `json:"core_parts,omitempty"`
	LeastRevenueParts *int `json:"least_revenue_parts,omitempty"`
	// SupportingPrices are, when the final round changed the clock's allocation,
	// per-pool prices that support it as well as possible, beside the clock's;
	// Unsupported the orders they fail to support (docs/final-round.md).
	SupportingPrices []SupportingPrice  `json:"supporting_prices,omitempty"`
	Unsupported      []UnsupportedOrder `json:"unsupported,omitempty"`
}

// SupportingPrice is one pool's clock price and supporting price, dollars per unit
// to the micro-dollar.
type SupportingPrice struct {
	Pool       string `json:"pool"`
	ClockPrice string `json:"clock_price"`
	Price      string `json:"price"`
}

// UnsupportedOrder is an order the supporting prices fail to support: a winner
// whose bundle costs more than its limit at them ("too_dear") or that would rather
// have another of its bundles ("prefers_other"), a loser that would want one of its
// bundles ("wants"), or "" when only rounding to the micro-dollar separates it from
// supported. Text says it in words.
type UnsupportedOrder struct {
	Order  int64  `json:"order"`
	Team   string `json:"team"`
	Won    bool   `json:"won"`
	Reason string `json:"reason"`
	Text   string `json:"text"`
}

// TrialBalance is the body of GET /ledger/trial-balance: every account's balance,
// summing to Total (zero).
type TrialBalance struct {
	Accounts []Account `json:"accounts"`
	Total    string    `json:"total"`
}

// Account is one ledger account's balance.
type Account struct {
	Account string `json:"account"`
	Kind    string `json:"kind"`
	Balance string `json:"balance"`
	Held    string `json:"held"`
}

// LostValue is the body of GET /lost-value: per pool and day from From to To, the
// value of bids refused (no room, priced out) and of reservations not honoured.
type LostValue struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	Days []LostDay `json:"days"`
}

// LostDay is one pool's lost value on one day.
type LostDay struct {
	Day         string `json:"day"`
	Pool        string `json:"pool"`
	NoRoom      string `json:"no_room"`
	PricedOut   string `json:"priced_out"`
	NotHonoured string `json:"not_honoured"`
	Total       string `json:"total"`
	Bids        int    `json:"bids"`
}

// Error is the body of every error answer.
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is an error's code (the domain's: invalid, not_found, conflict, ...),
// a message safe to show, and the request's id for the logs.
type ErrorBody struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id,omitempty"`
}
