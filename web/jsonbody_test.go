package web

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	ok := []string{
		`{}`, `[]`, `"x"`, `1`, `null`,
		`{"a":{"x":1},"b":{"x":1}}`,
		`[{"a":1},{"a":1}]`,
		`{"a":[{"b":[1,2,{"c":"\ud800"}]}]}`, // a lone surrogate decodes to U+FFFD: valid UTF-8
		` {"a":1} `,
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
	}
	for _, doc := range ok {
		if err := checkJSON([]byte(doc)); err != nil {
			t.Errorf("checkJSON(%q) = %v, want nil", doc, err)
		}
	}
	bad := map[string]string{
		`{"a":1,"a":2}`:                     `body: key "a" appears twice`,
		`{"a":{"b":1,"c":[{"d":1,"d":1}]}}`: `body.a.c[0]: key "d" appears twice`,
		`[1,{"x":"a\u0000"}]`:               `body[1].x: must not contain a NUL byte`,
		`{"a":{"k\u0000":1}}`:               `body.a key: must not contain a NUL byte`,
		"{\"a\":\"\xc3\x28\"}":              `body: must be valid UTF-8`,
		`{"a":1}x`:                          `unexpected data after the JSON value`,
		`{"a":1`:                            `incomplete`,
		`{"a" 1}`:                           `not valid JSON`,
		`[1,]`:                              `not valid JSON`,
		``:                                  `incomplete`,
		strings.Repeat("[", maxJSONDepth+1): `nests deeper than 32 levels`,
		`{"` + strings.Repeat("k", 5000) + `":1,"` + strings.Repeat("k", 5000) + `":2}`: `…(5000 bytes)" appears twice`,
	}
	for doc, want := range bad {
		err := checkJSON([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkJSON(%.60q) = %v, want an error with %q", doc, err, want)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("checkJSON(%.60q): a %d-byte message", doc, len(err.Error()))
		}
	}
}

// FuzzCheckJSON holds checkJSON to its promise on any bytes: it never panics, accepts
// only valid JSON, and what it accepts decodes strictly into a generic value.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"bundles":[{"us-east/cpu":5}],"limit":"10"}`, `[[[[]]]]`, `"\u0000"`, "\"\xff\"", `{"a":{"b":[1,{"c":null}]}}`, `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := checkJSON(data)
		if err == nil && !json.Valid(data) {
			t.Fatalf("checkJSON accepted invalid JSON %q", data)
		}
		if err == nil {
			var v any
			if derr := decodeStrict(data, &v); derr != nil {
				t.Fatalf("checkJSON accepted %q but decodeStrict refused it: %v", data, derr)
			}
		}
		if err != nil && len(err.Error()) > 400 {
			t.Fatalf("a %d-byte message", len(err.Error()))
		}
	})
}
