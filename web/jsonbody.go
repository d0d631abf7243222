package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clearhouse/clearhouse"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/gin-gonic/gin"
)

// maxJSONDepth bounds how deeply a JSON body may nest; no API body nests beyond 4.
const maxJSONDepth = 32

// jsonFrame is one open object or array while checkJSON walks a document.
type jsonFrame struct {
	object  bool
	keys    map[string]struct{}
	key     string // the object's current key
	wantKey bool
	index   int // the array's current index
}

// jsonPath names where in the body the walk is, e.g. body.bundles[0].
func jsonPath(stack []*jsonFrame) string {
	var b strings.Builder
	b.WriteString("body")
	for _, f := range stack {
		if f.object {
			if f.wantKey {
				continue
			}
			b.WriteString("." + clip(f.key, 64))
		} else {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return b.String()
}

// checkJSON accepts exactly one JSON value that is valid UTF-8, whose strings and
// object keys hold no NUL byte, whose objects have no key twice and which nests at
// most maxJSONDepth deep. Any other input is EINVALID naming where and the rule.
func checkJSON(data []byte) error {
	if !utf8.Valid(data) {
		return clearhouse.Errorf(clearhouse.EINVALID, "body: must be valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*jsonFrame
	for done := false; !done; {
		tok, err := dec.Token()
		if err != nil {
			return jsonSyntaxError(err)
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
			} else {
				key := tok.(string) // the decoder only gives strings or '}' here
				if err := checkText(jsonPath(stack)+" key", key); err != nil {
					return err
				}
				if _, dup := top.keys[key]; dup {
					return clearhouse.Errorf(clearhouse.EINVALID, "%s: key %q appears twice", jsonPath(stack), clip(key, 64))
				}
				top.keys[key] = struct{}{}
				top.key, top.wantKey = key, false
				continue
			}
		} else {
			switch tok {
			case json.Delim('{'), json.Delim('['):
				if len(stack) >= maxJSONDepth {
					return clearhouse.Errorf(clearhouse.EINVALID, "%s: nests deeper than %d levels", jsonPath(stack), maxJSONDepth)
				}
				stack = append(stack, &jsonFrame{object: tok == json.Delim('{'), keys: map[string]struct{}{}, wantKey: true})
				continue
			case json.Delim(']'):
				stack = stack[:len(stack)-1]
			default:
				if str, ok := tok.(string); ok {
					if err := checkText(jsonPath(stack), str); err != nil {
						return err
					}
				}
			}
		}
		// A value ended: the enclosing object wants a key, the array its next item.
		if len(stack) == 0 {
			done = true
		} else if top := stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return clearhouse.Errorf(clearhouse.EINVALID, "body: unexpected data after the JSON value")
	}
	return nil
}

func jsonSyntaxError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return clearhouse.Errorf(clearhouse.EINVALID, "body: not valid JSON at byte %d: %s", syn.Offset, clip(syn.Error(), 100))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return clearhouse.Errorf(clearhouse.EINVALID, "body: the JSON value is incomplete")
	}
	return clearhouse.Errorf(clearhouse.EINVALID, "body: not valid JSON: %s", clip(err.Error(), 100))
}

// decodeJSON is the one strict decoder of every JSON body the API reads: the body
// (bounded and checked by withCleanInput, or read and checked here when a handler is
// reached another way) must be one JSON value that passes checkJSON (valid UTF-8, no
// NUL, no duplicate key) and has no field v does not know. Errors are EINVALID and
// name the field.
func decodeJSON(c *gin.Context, v any) error {
	var data []byte
	if b, ok := c.Get(ctxBody); ok {
		data = b.([]byte)
	} else {
		var err error
		if data, err = io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, bodyLimit(c))); err != nil {
			return clearhouse.Errorf(clearhouse.EINVALID, "body: must be at most %d KiB", bodyLimit(c)>>10)
		}
	}
	return decodeStrict(data, v)
}

// decodeStrict is decodeJSON on bytes.
func decodeStrict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "body: a JSON object is required")
	}
	if err := checkJSON(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonDecodeError(err)
	}
	return nil
}

// jsonDecodeError turns encoding/json's errors into messages that name the field in
// the API's words and never repeat long input.
func jsonDecodeError(err error) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		where := "body"
		if typ.Field != "" {
			where += "." + clip(typ.Field, 100)
		}
		kind := jsonKind(typ.Type.Kind().String())
		if typ.Type == apiv1.MoneyType {
			kind = "an amount of dollars (a string such as \"12.50\" or a number such as 12.5)"
		}
		return clearhouse.Errorf(clearhouse.EINVALID, "%s: must be %s, not %s", where, kind, clip(typ.Value, 40))
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return clearhouse.Errorf(clearhouse.EINVALID, "body: unknown field %s", clip(f, 80))
	}
	return clearhouse.Errorf(clearhouse.EINVALID, "body: %s", clip(msg, 120))
}

// jsonKind says what JSON a Go kind takes.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "a whole number"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "map", kind == "struct":
		return "an object"
	}
	return fmt.Sprintf("a %s", kind)
}
