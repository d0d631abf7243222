package auction

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// errUnusual is what decodeFast returns for anything it leaves to encoding/json:
// an error of the input, or a form it does not read itself (an escape in a
// string, null, a key in another case, invalid UTF-8).
var errUnusual = errors.New("auction: left to encoding/json")

// decodeFast decodes an instance in one pass over data, as encoding/json with
// unknown fields refused would decode it, for the inputs it takes: the common
// form `auction gen` and the market write. For any other input it returns
// errUnusual and the caller decodes with encoding/json, whose result (or error)
// is then the answer; so decodeFast needs only be right when it succeeds
// (TestFastDecodingAgreesWithEncodingJSON and FuzzFastDecoding hold it to that).
// encoding/json reads a 10,000-order instance in three passes and through
// reflection: it was half of `auction solve`'s time.
func decodeFast(data []byte) (Instance, error) {
	p := fastParser{data: data}
	var inst Instance
	var seen fields
	err := p.object(func(key []byte) error {
		if seen.again(key, "pools", "bidders", "params") {
			return errUnusual
		}
		switch string(key) {
		case "pools":
			return p.array(func() error {
				var pl Pool
				var seen fields
				err := p.object(func(key []byte) error {
					if seen.again(key, "id", "supply", "reserve_price") {
						return errUnusual
					}
					var err error
					switch string(key) {
					case "id":
						pl.ID, err = p.str()
					case "supply":
						pl.Supply, err = p.num()
					case "reserve_price":
						pl.ReservePrice, err = p.num()
					default:
						return errUnusual
					}
					return err
				})
				inst.Pools = append(inst.Pools, pl)
				return err
			}, func() { inst.Pools = []Pool{} })
		case "bidders":
			return p.array(func() error {
				var b Bidder
				err := p.bidder(&b)
				inst.Bidders = append(inst.Bidders, b)
				return err
			}, func() { inst.Bidders = []Bidder{} })
		case "params":
			raw, err := p.skip()
			if err != nil {
				return err
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if dec.Decode(&inst.Params) != nil {
				return errUnusual
			}
			return nil
		}
		return errUnusual
	})
	if err != nil {
		return Instance{}, err
	}
	if p.space(); p.i != len(p.data) {
		return Instance{}, errUnusual
	}
	return inst, nil
}

// fields are the keys of one object met so far, by their place in a list.
type fields uint8

// again records key (one of names, or none) and reports whether it was met
// before: a repeated key is left to encoding/json, which decodes the second value
// over the first.
func (f *fields) again(key []byte, names ...string) bool {
	for i, n := range names {
		if string(key) == n {
			bit := fields(1) << i
			met := *f&bit != 0
			*f |= bit
			return met
		}
	}
	return false
}

// fastParser reads the JSON forms decodeFast takes, strictly.
type fastParser struct {
	data []byte
	i    int
}

func (p *fastParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c, taking it if so.
func (p *fastParser) next(c byte) bool {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object reads an object, calling member with each key once the parser stands
// before its value.
func (p *fastParser) object(member func(key []byte) error) error {
	if !p.next('{') {
		return errUnusual
	}
	if p.next('}') {
		return nil
	}
	for {
		p.space()
		key, err := p.rawStr()
		if err != nil {
			return err
		}
		if !p.next(':') {
			return errUnusual
		}
		if err := member(key); err != nil {
			return err
		}
		if p.next(',') {
			continue
		}
		if p.next('}') {
			return nil
		}
		return errUnusual
	}
}

// array reads an array, calling elem for each element and empty when it has none
// (encoding/json makes an empty, not a nil, slice of []).
func (p *fastParser) array(elem func() error, empty func()) error {
	if !p.next('[') {
		return errUnusual
	}
	if p.next(']') {
		empty()
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if p.next(',') {
			continue
		}
		if p.next(']') {
			return nil
		}
		return errUnusual
	}
}

func (p *fastParser) bidder(b *Bidder) error {
	var seen fields
	return p.object(func(key []byte) error {
		if seen.again(key, "id", "limit", "limits", "bundles") {
			return errUnusual
		}
		var err error
		switch string(key) {
		case "id":
			b.ID, err = p.str()
		case "limit":
			var l float64
			l, err = p.num()
			b.Limit = &l
		case "limits":
			err = p.array(func() error {
				l, err := p.num()
				b.Limits = append(b.Limits, l)
				return err
			}, func() { b.Limits = []float64{} })
		case "bundles":
			err = p.array(func() error {
				bundle := Bundle{}
				err := p.object(func(key []byte) error {
					q, err := p.num()
					bundle[poolIDs.intern(key)] = q
					return err
				})
				b.Bundles = append(b.Bundles, bundle)
				return err
			}, func() { b.Bundles = []Bundle{} })
		default:
			return errUnusual
		}
		return err
	})
}

// rawStr reads a string with no escape, no control character and valid UTF-8,
// returning its bytes (inside data).
func (p *fastParser) rawStr() ([]byte, error) {
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return nil, errUnusual
	}
	start := p.i + 1
	for j := start; j < len(p.data); j++ {
		switch c := p.data[j]; {
		case c == '"':
			if !utf8.Valid(p.data[start:j]) {
				return nil, errUnusual
			}
			p.i = j + 1
			return p.data[start:j], nil
		case c == '\\' || c < 0x20:
			return nil, errUnusual
		}
	}
	return nil, errUnusual
}

func (p *fastParser) str() (string, error) {
	p.space()
	b, err := p.rawStr()
	return string(b), err
}

// num reads a number in JSON's grammar (-? int frac? exp?) that float64 holds.
func (p *fastParser) num() (float64, error) {
	p.space()
	d, start := p.data, p.i
	i := start
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return 0, errUnusual
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return 0, errUnusual
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return 0, errUnusual
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	f, err := strconv.ParseFloat(string(d[start:i]), 64)
	if err != nil {
		return 0, errUnusual
	}
	p.i = i
	return f, nil
}

// skip reads any one JSON value and returns its bytes, for encoding/json to decode.
func (p *fastParser) skip() ([]byte, error) {
	p.space()
	start := p.i
	depth := 0
	for p.i < len(p.data) {
		switch c := p.data[p.i]; c {
		case '"':
			p.i++
			for p.i < len(p.data) && p.data[p.i] != '"' {
				if p.data[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
			if p.i >= len(p.data) {
				return nil, errUnusual
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return nil, errUnusual
			}
		case ',':
			if depth == 0 {
				return p.data[start:p.i], nil
			}
		}
		p.i++
		if depth == 0 && p.i > start && (p.data[p.i-1] == '}' || p.data[p.i-1] == ']' || p.data[p.i-1] == '"') {
			return p.data[start:p.i], nil
		}
	}
	return nil, errUnusual
}
