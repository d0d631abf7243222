package web

import (
	"github.com/clearhouse/clearhouse"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/ledger"
)

// parseMoney is an amount of dollars in a JSON body (apiv1.Money: a decimal string
// "1234.56" or a JSON number 1234.56), read from the text exactly as written by
// ledger.ParseMoney, never through a float64: 0.1 is 100,000 micro-dollars, and a
// seventh decimal is refused rather than rounded. field names it in the error.
func parseMoney(m apiv1.Money, field string) (ledger.Money, error) {
	v, err := ledger.ParseMoney(m.Text())
	if err != nil {
		return 0, clearhouse.Errorf(clearhouse.EINVALID, "%s: %s (give dollars as a string such as \"12.50\" or a plain number such as 12.5, with at most six decimals)", field, clearhouse.ErrorMessage(err))
	}
	return v, nil
}

// apiMoney is an amount as the API answers it: a decimal string of dollars
// without separators ("1234.56", "-0.000001").
func apiMoney(m ledger.Money) string { return m.Plain() }

// apiPrice is a price per unit as the API answers it: the engine's float rounded to
// the micro-dollar, as a decimal string ("3.515012").
func apiPrice(dollars float64) string { return ledger.Money(monOf(dollars)).Plain() }

// apiVCG is a core winner's VCG payment as apiPrice writes it; "" (absent) for nil.
func apiVCG(dollars *float64) string {
	if dollars == nil {
		return ""
	}
	return apiPrice(*dollars)
}
