package web_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
)

// typePaths lists every JSON field path a Go type encodes: "a", "a[].b" for a
// slice's elements, "a{}" for a map's values (a time is one field).
func typePaths(t reflect.Type, at string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
	case t.Kind() == reflect.Slice:
		typePaths(t.Elem(), at+"[]", out)
	case t.Kind() == reflect.Map:
		typePaths(t.Elem(), at+"{}", out)
	case t.Kind() == reflect.Struct:
		for _, f := range jsonFields(t) {
			p := f.name
			if at != "" {
				p = at + "." + f.name
			}
			out[p] = true
			typePaths(f.typ, p, out)
		}
	}
}

// jsonField is one field of a struct as encoding/json encodes it.
type jsonField struct {
	name      string
	typ       reflect.Type
	omitEmpty bool
}

// jsonFields lists a struct's JSON fields, an embedded struct's promoted.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, f.Type, slices.Contains(strings.Split(opts, ","), "omitempty")})
	}
	return out
}

// apiBodies names, for each operation of openapi.json, the api/v1 type of its
// request body (nil: none) and of its 2xx answer; every other answer is an
// apiv1.Error.
var apiBodies = map[string]struct{ request, response any }{
	"getMarket":            {nil, apiv1.Market{}},
	"listAuctions":         {nil, apiv1.AuctionList{}},
	"getAuction":           {nil, apiv1.Auction{}},
	"closeAuction":         {nil, apiv1.Auction{}},
	"getAuctionSettlement": {nil, apiv1.Settlement{}},
	"listOrders":           {nil, apiv1.OrderList{}},
	"placeOrder":           {apiv1.NewOrder{}, apiv1.PlacedOrder{}},
	"getOrder":             {nil, apiv1.Order{}},
	"deleteOrder":          {nil, apiv1.Order{}},
	"withdrawOrder":        {nil, apiv1.Order{}},
	"getBudget":            {nil, apiv1.Budget{}},
	"getTeamBudget":        {nil, apiv1.Budget{}},
	"getTrialBalance":      {nil, apiv1.TrialBalance{}},
	"newReservationId":     {nil, apiv1.NewReservationID{}},
	"listReservations":     {nil, apiv1.ReservationList{}},
	"submitReservation":    {apiv1.Definition{}, apiv1.Reservation{}},
	"quoteReservation":     {apiv1.Definition{}, apiv1.Quote{}},
	"getReservation":       {nil, apiv1.Reservation{}},
	"cancelReservation":    {nil, apiv1.Reservation{}},
	"updateReservation":    {apiv1.Definition{}, apiv1.Reservation{}},
	"getClusterAllocation": {nil, apiv1.Allocation{}},
	"postClusterUpdates":   {apiv1.Updates{}, apiv1.Answer{}},
	"listBestEffortJobs":   {nil, apiv1.BestEffortJobList{}},
	"queueBestEffortJob":   {apiv1.NewBestEffortJob{}, apiv1.BestEffortJob{}},
	"getBestEffortJob":     {nil, apiv1.BestEffortJob{}},
	"cancelBestEffortJob":  {nil, apiv1.BestEffortJob{}},
	"getLostValue":         {nil, apiv1.LostValue{}},
}

// schemaCheck compares openapi.json's schemas with the Go types, noting each
// difference and each component schema it reaches.
type schemaCheck struct {
	doc     map[string]any
	reached map[string]bool
	errs    []string
}

func (c *schemaCheck) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// flat is a schema with its references followed and allOf merged: its JSON types
// (without "null"), whether it may be null, its properties, required fields,
// items and additionalProperties, and the alternatives of a oneOf or anyOf.
type flat struct {
	types      []string
	nullable   bool
	format     string
	props      map[string]any
	required   []string
	items      any
	additional any
	oneOf      []any
}

func (c *schemaCheck) flatten(schema any) flat {
	var f flat
	for range 32 {
		m, _ := schema.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok {
			c.reached[name] = true
		}
		schema = resolveRef(c.doc, m)
	}
	m, _ := schema.(map[string]any)
	switch ty := m["type"].(type) {
	case string:
		f.types = []string{ty}
	case []any:
		for _, x := range ty {
			f.types = append(f.types, fmt.Sprint(x))
		}
	}
	if i := slices.Index(f.types, "null"); i >= 0 {
		f.nullable, f.types = true, slices.Delete(f.types, i, i+1)
	}
	f.format, _ = m["format"].(string)
	if p, ok := m["properties"].(map[string]any); ok {
		f.props = map[string]any{}
		for k, v := range p {
			f.props[k] = v
		}
	}
	for _, r := range asList(m["required"]) {
		f.required = append(f.required, fmt.Sprint(r))
	}
	f.items = m["items"]
	if a, ok := m["additionalProperties"].(map[string]any); ok {
		f.additional = a
	}
	for _, part := range asList(m["allOf"]) {
		p := c.flatten(part)
		if len(f.types) == 0 {
			f.types = p.types
		}
		if p.props != nil && f.props == nil {
			f.props = map[string]any{}
		}
		for k, v := range p.props {
			f.props[k] = v
		}
		f.required = append(f.required, p.required...)
	}
	// A oneOf or anyOf with null among its alternatives is its other alternative, or
	// null; with several others it stays a choice.
	alts := append(asList(m["oneOf"]), asList(m["anyOf"])...)
	var rest []any
	for _, a := range alts {
		if p := c.flatten(a); p.nullable && len(p.types) == 0 && len(p.oneOf) == 0 && p.props == nil {
			f.nullable = true
		} else {
			rest = append(rest, a)
		}
	}
	if len(rest) == 1 {
		p := c.flatten(rest[0])
		p.nullable = p.nullable || f.nullable
		return p
	}
	f.oneOf = rest
	return f
}

func asList(v any) []any { l, _ := v.([]any); return l }

// compare checks that schema documents t at path at: the same JSON type, and for an
// object the same properties, each the same, and the same required ones (a field
// without omitempty is always sent and must be given). A pointer without omitempty
// in an answer may be null, so the document must say so.
func (c *schemaCheck) compare(at string, schema any, t reflect.Type, answer bool) {
	f := c.flatten(schema)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	want := func(types ...string) bool {
		for _, ty := range f.types {
			if !slices.Contains(types, ty) {
				c.errorf("%s: the document says %v, Go's %s encodes %v", at, f.types, t, types)
				return false
			}
		}
		if len(f.types) == 0 && len(f.oneOf) == 0 {
			c.errorf("%s: the document gives no type; Go's %s encodes %v", at, t, types)
			return false
		}
		return true
	}
	switch {
	case t == reflect.TypeFor[json.RawMessage]():
		// Any JSON the server reads itself (a value as text, a workload): only
		// the schemas it names are reached.
		c.reach(schema)
	case t == reflect.TypeFor[apiv1.Money]():
		if len(f.oneOf) > 0 {
			var types []string
			for _, a := range f.oneOf {
				types = append(types, c.flatten(a).types...)
			}
			slices.Sort(types)
			if !slices.Equal(types, []string{"number", "string"}) {
				c.errorf("%s: an amount of dollars is a string or a number; the document allows %v", at, types)
			}
		} else {
			want("string")
		}
	case t == reflect.TypeFor[time.Time]():
		if want("string") && f.format != "date-time" {
			c.errorf("%s: a time; the document's format is %q, not date-time", at, f.format)
		}
	case t.Kind() == reflect.String:
		want("string")
	case t.Kind() == reflect.Bool:
		want("boolean")
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		want("integer")
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		want("number")
	case t.Kind() == reflect.Slice:
		if want("array") {
			if f.items == nil {
				c.errorf("%s: an array without items", at)
			} else {
				c.compare(at+"[]", f.items, t.Elem(), answer)
			}
		}
	case t.Kind() == reflect.Map:
		if want("object") {
			if f.additional == nil || f.props != nil {
				c.errorf("%s: a map; the document must give additionalProperties and no properties", at)
			} else {
				c.compare(at+"{}", f.additional, t.Elem(), answer)
			}
		}
	case t.Kind() == reflect.Struct:
		if !want("object") {
			return
		}
		fields := jsonFields(t)
		var required []string
		for _, fd := range fields {
			p := at + "." + fd.name
			s, ok := f.props[fd.name]
			if !ok {
				c.errorf("%s: in Go's %s, not in the document", p, t)
				continue
			}
			if !fd.omitEmpty {
				required = append(required, fd.name)
			}
			if answer && !fd.omitEmpty && fd.typ.Kind() == reflect.Pointer && !c.flatten(s).nullable {
				c.errorf("%s: Go's %s sends null when it has none; the document must allow null", p, fd.typ)
			}
			c.compare(p, s, fd.typ, answer)
		}
		for name := range f.props {
			if !slices.ContainsFunc(fields, func(fd jsonField) bool { return fd.name == name }) {
				c.errorf("%s.%s: in the document, not in Go's %s", at, name, t)
			}
		}
		slices.Sort(required)
		docRequired := slices.Clone(f.required)
		slices.Sort(docRequired)
		if !slices.Equal(required, docRequired) {
			c.errorf("%s: required %v in the document; Go's %s always has %v", at, docRequired, t, required)
		}
	default:
		c.errorf("%s: Go's %s has no JSON type this check knows", at, t)
	}
}

// reach marks the component schemas schema names, without comparing.
func (c *schemaCheck) reach(schema any) {
	switch v := schema.(type) {
	case map[string]any:
		if ref, ok := v["$ref"].(string); ok {
			if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok && !c.reached[name] {
				c.reached[name] = true
				c.reach(resolveRef(c.doc, v))
			}
		}
		for _, x := range v {
			c.reach(x)
		}
	case []any:
		for _, x := range v {
			c.reach(x)
		}
	}
}

// jsonSchemaOf is the application/json schema of a request body or response (nil:
// none).
func jsonSchemaOf(doc map[string]any, v any) any {
	m, _ := resolveRef(doc, v).(map[string]any)
	content, _ := m["content"].(map[string]any)
	js, _ := content["application/json"].(map[string]any)
	return js["schema"]
}

// openapi.json documents the api/v1 types field by field: every operation's request
// body and answers have the properties, JSON types and required fields of the Go
// type the handler decodes or encodes (apiBodies), nested ones included, and every
// component schema is one of them. A field added to a type and not to the document,
// or the other way, fails here.
func TestOpenAPIMatchesTheGoTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	c := &schemaCheck{doc: doc, reached: map[string]bool{}}
	seen := map[string]bool{}
	for _, o := range openAPIOperations(t, doc) {
		id, _ := o.op["operationId"].(string)
		bodies, ok := apiBodies[id]
		if !ok {
			t.Errorf("%s (%s): apiBodies does not say which api/v1 types it takes and answers", o, id)
			continue
		}
		seen[id] = true
		body := jsonSchemaOf(doc, o.op["requestBody"])
		switch {
		case bodies.request == nil && body != nil:
			t.Errorf("%s: the document gives a JSON body; apiBodies none", o)
		case bodies.request != nil && body == nil:
			t.Errorf("%s: apiBodies gives a %T body; the document none", o, bodies.request)
		case body != nil:
			c.compare(id+" request", body, reflect.TypeOf(bodies.request), false)
		}
		responses, _ := o.op["responses"].(map[string]any)
		answered := false
		for code, r := range responses {
			schema := jsonSchemaOf(doc, r)
			if schema == nil {
				continue
			}
			var typ reflect.Type
			if strings.HasPrefix(code, "2") {
				typ, answered = reflect.TypeOf(bodies.response), true
			} else {
				typ = reflect.TypeFor[apiv1.Error]()
			}
			c.compare(id+" "+code, schema, typ, true)
		}
		if !answered {
			t.Errorf("%s: no JSON answer in the document", o)
		}
	}
	for id := range apiBodies {
		if !seen[id] {
			t.Errorf("apiBodies lists %s, which the document does not have", id)
		}
	}
	schemas, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
	if len(schemas) < 10 {
		t.Fatalf("openapi.json has %d component schemas: the document is not what this test expects", len(schemas))
	}
	for name := range schemas {
		if !c.reached[name] {
			t.Errorf("components.schemas.%s documents no body of an operation", name)
		}
	}
	slices.Sort(c.errs)
	for _, e := range c.errs {
		t.Error(e)
	}
}

// The check can fail: a document that lacks a field, adds one, gives a wrong type,
// or the wrong required fields, is reported.
func TestOpenAPICheckFindsDifferences(t *testing.T) {
	type body struct {
		ID    int64     `json:"id"`
		Note  string    `json:"note,omitempty"`
		At    time.Time `json:"at"`
		Gone  *string   `json:"gone"`
		Sizes []float64 `json:"sizes,omitempty"`
	}
	good := map[string]any{"type": "object", "required": []any{"id", "at", "gone"}, "properties": map[string]any{
		"id": map[string]any{"type": "integer"}, "note": map[string]any{"type": "string"},
		"at": map[string]any{"type": "string", "format": "date-time"}, "gone": map[string]any{"type": []any{"string", "null"}},
		"sizes": map[string]any{"type": "array", "items": map[string]any{"type": "number"}}}}
	check := func(schema map[string]any) []string {
		c := &schemaCheck{doc: map[string]any{}, reached: map[string]bool{}}
		c.compare("body", schema, reflect.TypeFor[body](), true)
		return c.errs
	}
	if errs := check(good); len(errs) > 0 {
		t.Fatalf("the matching schema: %v", errs)
	}
	for name, change := range map[string]func(s map[string]any){
		"a field missing": func(s map[string]any) { delete(s["properties"].(map[string]any), "note") },
		"a field extra":   func(s map[string]any) { s["properties"].(map[string]any)["extra"] = map[string]any{"type": "string"} },
		"a wrong type":    func(s map[string]any) { s["properties"].(map[string]any)["id"] = map[string]any{"type": "string"} },
		"an item's type": func(s map[string]any) {
			s["properties"].(map[string]any)["sizes"] = map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}
		},
		"required too few":  func(s map[string]any) { s["required"] = []any{"id", "at"} },
		"required too many": func(s map[string]any) { s["required"] = []any{"id", "at", "gone", "note"} },
		"null not allowed":  func(s map[string]any) { s["properties"].(map[string]any)["gone"] = map[string]any{"type": "string"} },
		"a time not a time": func(s map[string]any) { s["properties"].(map[string]any)["at"] = map[string]any{"type": "string"} },
	} {
		s := deepCopy(good)
		change(s)
		if errs := check(s); len(errs) == 0 {
			t.Errorf("%s: not reported", name)
		}
	}
}

// deepCopy copies a schema built of maps and lists.
func deepCopy(m map[string]any) map[string]any {
	raw, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}
