package web

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
)

// jsonMoney is an amount of dollars in a JSON body: a decimal string ("1234.56")
// or a JSON number (1234.56). Either way the amount is read from the text exactly
// as written, by ledger.ParseMoney, never through a float64: 0.1 is 100,000
// micro-dollars, and a seventh decimal is refused rather than rounded.
type jsonMoney struct {
	text string
	set  bool
}

// UnmarshalJSON keeps the text of a string or number; any other JSON is refused.
func (m *jsonMoney) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) > 0 && data[0] == '"':
		if err := json.Unmarshal(data, &m.text); err != nil {
			return err
		}
	case len(data) > 0 && (data[0] == '-' || (data[0] >= '0' && data[0] <= '9')):
		m.text = string(data) // checkJSON has already checked it is a JSON number
	default:
		return &json.UnmarshalTypeError{Value: string(data), Type: jsonMoneyType}
	}
	m.set = true
	return nil
}

// jsonMoneyType lets jsonDecodeError say "an amount of dollars".
var jsonMoneyType = reflect.TypeFor[jsonMoney]()

// money parses the amount; field names it in the error.
func (m jsonMoney) money(field string) (ledger.Money, error) {
	v, err := ledger.ParseMoney(m.text)
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

// MarshalJSON answers with the amount as a decimal string.
func (m jsonMoney) MarshalJSON() ([]byte, error) { return json.Marshal(m.text) }

// moneyOut is an amount for an answer that shares a type with a request body.
func moneyOut(m ledger.Money) jsonMoney { return jsonMoney{text: apiMoney(m), set: true} }
