package web_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/web"
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
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			p := name
			if at != "" {
				p = at + "." + name
			}
			out[p] = true
			typePaths(f.Type, p, out)
		}
	}
}

// schemaPaths lists the same paths for an OpenAPI schema: properties, items
// ("[]"), additionalProperties ("{}"), through $ref and allOf.
func schemaPaths(doc map[string]any, schema any, at string, out map[string]bool) {
	s, _ := resolveRef(doc, schema).(map[string]any)
	for _, part := range asList(s["allOf"]) {
		schemaPaths(doc, part, at, out)
	}
	if items, ok := s["items"]; ok {
		schemaPaths(doc, items, at+"[]", out)
	}
	if extra, ok := s["additionalProperties"].(map[string]any); ok {
		schemaPaths(doc, extra, at+"{}", out)
	}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		path := name
		if at != "" {
			path = at + "." + name
		}
		out[path] = true
		schemaPaths(doc, p, path, out)
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// The cluster agent's two bodies, as the server's types encode and decode them, are
// what openapi.json documents, field for field (nested ones included), so a field
// added to the server's types and not to the document (or the other way) fails.
func TestOpenAPIDocumentsTheAgentWireTypes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	for _, c := range []struct {
		schema string
		typ    reflect.Type
	}{
		{"Allocation", reflect.TypeFor[web.APIAllocation]()},
		{"Updates", reflect.TypeFor[web.APIUpdates]()},
	} {
		inGo, inDoc := map[string]bool{}, map[string]bool{}
		typePaths(c.typ, "", inGo)
		schemaPaths(doc, map[string]any{"$ref": "#/components/schemas/" + c.schema}, "", inDoc)
		if len(inGo) < 10 || len(inDoc) < 10 {
			t.Fatalf("%s: %d fields in Go, %d in the document: the listing is wrong", c.schema, len(inGo), len(inDoc))
		}
		var onlyGo, onlyDoc []string
		for p := range inGo {
			if !inDoc[p] {
				onlyGo = append(onlyGo, p)
			}
		}
		for p := range inDoc {
			if !inGo[p] {
				onlyDoc = append(onlyDoc, p)
			}
		}
		slices.Sort(onlyGo)
		slices.Sort(onlyDoc)
		if len(onlyGo) > 0 {
			t.Errorf("%s (%s) has fields openapi.json does not document: %v", c.typ, c.schema, onlyGo)
		}
		if len(onlyDoc) > 0 {
			t.Errorf("openapi.json's %s documents fields %s lacks: %v", c.schema, c.typ, onlyDoc)
		}
	}
}
