package auction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"
)

// UnmarshalJSON decodes a bundle, a JSON object of pool ids to numbers, as
// encoding/json would decode a map[string]float64 (null for the whole bundle is a
// nil bundle; a null quantity is 0; a repeated pool id keeps its last quantity), at
// a fraction of its cost: a 10,000-order instance holds tens of thousands of
// bundles, and decoding them through reflection was most of `auction solve`'s time
// outside the clock. Pool ids are interned, so a thousand pools' ids are allocated
// once, not once per bundle that names them. encoding/json has checked the
// object's syntax before it calls this.
func (b *Bundle) UnmarshalJSON(data []byte) error {
	p := bundleParser{data: data}
	p.space()
	if p.literal("null") {
		*b = nil
		return nil
	}
	if !p.byte('{') {
		return p.typeError("object")
	}
	m := make(Bundle, bytes.Count(data, []byte{':'}))
	if p.space(); p.byte('}') {
		*b = m
		return nil
	}
	for {
		p.space()
		key, err := p.key()
		if err != nil {
			return err
		}
		p.space()
		if !p.byte(':') {
			return fmt.Errorf("bundle: expected ':' after pool id %q", key)
		}
		p.space()
		q, err := p.number()
		if err != nil {
			return err
		}
		m[key] = q
		p.space()
		if p.byte(',') {
			continue
		}
		if p.byte('}') {
			*b = m
			return nil
		}
		return fmt.Errorf("bundle: expected ',' or '}' after the quantity of %q", key)
	}
}

// bundleParser reads one bundle object.
type bundleParser struct {
	data []byte
	i    int
}

func (p *bundleParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *bundleParser) byte(c byte) bool {
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *bundleParser) literal(s string) bool {
	if bytes.HasPrefix(p.data[p.i:], []byte(s)) {
		p.i += len(s)
		return true
	}
	return false
}

func (p *bundleParser) typeError(what string) error {
	return &json.UnmarshalTypeError{Value: what, Type: bundleType, Offset: int64(p.i)}
}

// key reads a pool id: a JSON string, decoded by encoding/json when it holds an
// escape or invalid UTF-8 (which it replaces).
func (p *bundleParser) key() (string, error) {
	if !p.byte('"') {
		return "", fmt.Errorf("bundle: expected a pool id in quotes at offset %d", p.i)
	}
	start := p.i
	escaped := false
	for p.i < len(p.data) && p.data[p.i] != '"' {
		if p.data[p.i] == '\\' {
			escaped = true
			p.i++
		}
		p.i++
	}
	if p.i >= len(p.data) {
		return "", fmt.Errorf("bundle: unterminated pool id")
	}
	raw := p.data[start:p.i]
	p.i++
	if !escaped && utf8.Valid(raw) {
		return poolIDs.intern(raw), nil
	}
	var s string
	if err := json.Unmarshal(p.data[start-1:p.i], &s); err != nil {
		return "", err
	}
	return s, nil
}

// number reads a quantity: a JSON number, or null for 0.
func (p *bundleParser) number() (float64, error) {
	if p.literal("null") {
		return 0, nil
	}
	start := p.i
	for p.i < len(p.data) {
		c := p.data[p.i]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		p.i++
	}
	if p.i == start {
		return 0, &json.UnmarshalTypeError{Value: "non-number", Type: floatType, Offset: int64(p.i)}
	}
	q, err := strconv.ParseFloat(string(p.data[start:p.i]), 64) // no allocation: the conversion does not escape
	if err != nil {
		return 0, &json.UnmarshalTypeError{Value: "number " + string(p.data[start:p.i]), Type: floatType, Offset: int64(start)}
	}
	return q, nil
}

var (
	bundleType = reflect.TypeFor[Bundle]()
	floatType  = reflect.TypeFor[float64]()
)

// internTable keeps one copy of each pool id decoded, up to a bound (an instance's
// pools, not every string an attacker may send).
type internTable struct {
	mu   sync.Mutex
	strs map[string]string
}

// maxInterned bounds the interned pool ids, and maxInternedLen their length; past
// them ids are allocated as usual.
const (
	maxInterned    = 1 << 16
	maxInternedLen = 64
)

var poolIDs = internTable{strs: map[string]string{}}

func (t *internTable) intern(b []byte) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(t.strs) < maxInterned && len(s) <= maxInternedLen {
		t.strs[s] = s
	}
	return s
}
