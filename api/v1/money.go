package apiv1

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Money is an amount of dollars in a request body: a decimal string ("1234.56") or a
// JSON number (1234.56). Either way the text is kept exactly as written (Text), never
// read through a float64: the server parses it to micro-dollars and refuses a seventh
// decimal rather than rounding. It encodes as a string.
type Money struct {
	text string
}

// MoneyOf is the amount written as text (dollars, e.g. "12.50").
func MoneyOf(text string) Money { return Money{text: text} }

// Text is the amount as written.
func (m Money) Text() string { return m.text }

// UnmarshalJSON keeps the text of a string or number; any other JSON is refused.
func (m *Money) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) > 0 && data[0] == '"':
		if err := json.Unmarshal(data, &m.text); err != nil {
			return err
		}
	case len(data) > 0 && (data[0] == '-' || (data[0] >= '0' && data[0] <= '9')):
		m.text = string(data) // the decoder has already checked it is a JSON number
	default:
		return &json.UnmarshalTypeError{Value: string(data), Type: MoneyType}
	}
	return nil
}

// MarshalJSON answers with the amount as a decimal string.
func (m Money) MarshalJSON() ([]byte, error) { return json.Marshal(m.text) }

// MoneyType is Money's type, for decoders that name "an amount of dollars".
var MoneyType = reflect.TypeFor[Money]()
