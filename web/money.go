package web

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// mon is an amount for a page; moneyfmt formats it there.
func mon(m ledger.Money) templates.Money { return templates.Money(m) }

// monOf is an auction payment (float dollars) rounded to the micro-dollar.
func monOf(dollars float64) templates.Money {
	m, _ := moneyfmt.FromDollars(dollars)
	return templates.Money(m)
}

var (
	refPattern  = regexp.MustCompile(`^(order|auction|reservation|best-effort):(\d+)$`)
	capturePat  = regexp.MustCompile(`^(partial )?capture of hold \d+ \((order|reservation|best-effort):(\d+)\)$`)
	soldPattern = regexp.MustCompile(`^order (\d+) sold in auction (\d+)$`)
	refNouns    = map[string]string{"order": "Order", "auction": "Auction", "reservation": "Reservation", "best-effort": "Best-effort job"}
	teamRefURLs = map[string]string{"auction": "/auctions/%s", "reservation": "/reservations#reservation-%s", "order": "/orders#order-%s",
		"best-effort": "/best-effort#job-%s"}
	financeRefURL = map[string]string{"auction": "/finance/auctions/%s", "best-effort": "/finance/best-effort#job-%s"}
)

// describeEntry puts a ledger entry's reference and memo in the market's words:
// "auction:7" becomes "Auction #7" with a link to it, "capture of hold 48
// (order:62)" becomes "Payment for order #62". forFinance picks the links finance
// can open (settlement reports) over the team's own pages.
// memoWords is an entry's memo as pages show it, for the CSV exports.
func memoWords(ref, memo string) string {
	_, _, words := describeEntry(ref, memo, false)
	return words
}

func describeEntry(ref, memo string, forFinance bool) (text, url, words string) {
	text, words = ref, memo
	if m := refPattern.FindStringSubmatch(ref); m != nil {
		text = refNouns[m[1]] + " #" + m[2]
		urls := teamRefURLs
		if forFinance {
			urls = financeRefURL
		}
		if f, ok := urls[m[1]]; ok {
			url = fmt.Sprintf(f, m[2])
		}
	}
	if pool, ok := strings.CutPrefix(ref, "pool:"); ok { // a holding charge
		text = "Pool " + pool
	}
	switch m := capturePat.FindStringSubmatch(memo); {
	case m != nil && m[2] == "order":
		words = "Payment for order #" + m[3]
	case m != nil && m[2] == "best-effort":
		words = "Charge for best-effort job #" + m[3] + " (its budget)"
	case m != nil:
		words = "Charge for reservation #" + m[3]
	}
	if m := soldPattern.FindStringSubmatch(memo); m != nil {
		words = "Order #" + m[1] + " sold quota"
	}
	if words == "" {
		words = strings.TrimSpace(memo)
	}
	return text, url, words
}

// reasonWords is an entry's reason as statements show it: a best-effort job's
// charge reads "best-effort job", also for the charges posted before migration
// 00014 under the reason reservation (recognised by their reference).
func reasonWords(reason ledger.Reason, ref string) string {
	if reason == ledger.ReasonBestEffort || strings.HasPrefix(ref, "best-effort:") {
		return "best-effort job"
	}
	if reason == ledger.ReasonHolding {
		return "holding charge"
	}
	return string(reason)
}

// holdRef names what a hold is for: "order:28" becomes "Order #28".
func holdRef(ref string) string {
	text, _, _ := describeEntry(ref, "", false)
	return text
}

// unitCost is a pool's operator cost per unit and period, with its unit.
func unitCost(p exchange.Pool) templates.Price {
	return templates.Price{Dollars: p.UnitCost.Dollars(), Unit: p.Unit}
}

// poolUnits maps each pool to its unit ("GiB").
func (s *Server) poolUnits(ctx context.Context) (map[string]string, error) {
	pools, err := s.svc.Market.Pools(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(pools))
	for _, p := range pools {
		out[p.ID] = p.Unit
	}
	return out, nil
}

// demandBalance says how demand met supply in a pool, in whole units: "120 short"
// (more wanted than offered), "40 unsold", or "balanced".
func demandBalance(excess float64) string {
	n := math.Round(excess)
	switch {
	case n > 0:
		return groupDigits(int64(n)) + " short"
	case n < 0:
		return groupDigits(int64(-n)) + " unsold"
	}
	return "balanced"
}

// userEmail names a user for a page, or "user N" when it cannot be read.
func (s *Server) userEmail(c *gin.Context, id int64) string {
	u, err := s.svc.Identity.UserByID(c.Request.Context(), id)
	if err != nil {
		return fmt.Sprintf("user %d", id)
	}
	return u.Email
}

// teamName is a team's name for a page, or its id when it has none.
func teamName(names map[string]string, id string) string {
	if n := names[id]; n != "" {
		return n
	}
	return id
}
