package web_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// loadOpenAPI reads web/openapi.json as plain JSON values, the way a linter sees it.
func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

// pathItemFields are the fields OpenAPI 3.1 allows in a path item; operationMethods
// are those among them that hold an operation.
var (
	operationMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}
	pathItemFields   = append([]string{"$ref", "summary", "description", "servers", "parameters"}, operationMethods...)
)

// openAPIOperation is one operation of the document with where it sits.
type openAPIOperation struct {
	method, path string
	op           map[string]any
}

func (o openAPIOperation) String() string { return strings.ToUpper(o.method) + " " + o.path }

// openAPIOperations lists the document's operations in a stable order and reports
// path items holding fields OpenAPI does not know (a misspelt method is never served
// and never linted).
func openAPIOperations(t *testing.T, doc map[string]any) []openAPIOperation {
	t.Helper()
	paths, ok := doc["paths"].(map[string]any)
	if !ok || len(paths) == 0 {
		t.Fatal("openapi.json has no paths")
	}
	var ops []openAPIOperation
	for path, v := range paths {
		item, ok := v.(map[string]any)
		if !ok {
			t.Errorf("path %s is a %T, not an object", path, v)
			continue
		}
		for key, v := range item {
			if !slices.Contains(pathItemFields, key) {
				t.Errorf("path %s has the field %q, which OpenAPI does not know", path, key)
				continue
			}
			if !slices.Contains(operationMethods, key) {
				continue
			}
			op, ok := v.(map[string]any)
			if !ok {
				t.Errorf("%s %s is a %T, not an operation object", strings.ToUpper(key), path, v)
				continue
			}
			ops = append(ops, openAPIOperation{method: key, path: path, op: op})
		}
	}
	slices.SortFunc(ops, func(a, b openAPIOperation) int { return strings.Compare(a.String(), b.String()) })
	return ops
}

// Every operation has an operationId, camelCase and unique, so a client generator
// names its method after it instead of after the path.
func TestOpenAPIOperationIDs(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	ops := openAPIOperations(t, doc)
	wellFormed := regexp.MustCompile(`^[a-z][a-z0-9]*([A-Z][a-z0-9]*)*$`)
	seen := map[string]string{}
	for _, o := range ops {
		id, _ := o.op["operationId"].(string)
		switch {
		case id == "":
			t.Errorf("%s has no operationId", o)
		case !wellFormed.MatchString(id):
			t.Errorf("%s: operationId %q is not lowerCamelCase", o, id)
		case seen[id] != "":
			t.Errorf("%s and %s share the operationId %q", seen[id], o, id)
		default:
			seen[id] = o.String()
		}
	}
	if len(ops) < 20 {
		t.Fatalf("only %d operations found: the listing is wrong", len(ops))
	}
}

// Every path parameter is declared as a required path parameter of each of its
// operations, and every declared path parameter is in the path.
func TestOpenAPIPathParameters(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	template := regexp.MustCompile(`\{([^}]+)\}`)
	for _, o := range openAPIOperations(t, doc) {
		var inPath []string
		for _, m := range template.FindAllStringSubmatch(o.path, -1) {
			inPath = append(inPath, m[1])
		}
		declared := map[string]bool{}
		params, _ := o.op["parameters"].([]any)
		if item, ok := doc["paths"].(map[string]any)[o.path].(map[string]any); ok {
			shared, _ := item["parameters"].([]any)
			params = append(params, shared...)
		}
		for _, p := range params {
			p, _ := resolveRef(doc, p).(map[string]any)
			if p == nil || p["in"] != "path" {
				continue
			}
			name, _ := p["name"].(string)
			declared[name] = true
			if p["required"] != true {
				t.Errorf("%s: path parameter %q is not required", o, name)
			}
			if !slices.Contains(inPath, name) {
				t.Errorf("%s declares the path parameter %q, which the path lacks", o, name)
			}
		}
		for _, name := range inPath {
			if !declared[name] {
				t.Errorf("%s: path parameter %q is not declared", o, name)
			}
		}
	}
}

// resolveRef follows a local $ref (one hop at a time, until a value without one);
// it returns nil when a reference does not resolve.
func resolveRef(doc map[string]any, v any) any {
	for range 32 {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		var err error
		if v, err = jsonPointer(doc, ref); err != nil {
			return nil
		}
	}
	return nil // a cycle of references
}

// jsonPointer resolves a local reference ("#/components/schemas/Order") in doc.
func jsonPointer(doc map[string]any, ref string) (any, error) {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("%q is not a reference inside the document", ref)
	}
	var v any = doc
	if rest == "" {
		return v, nil
	}
	if !strings.HasPrefix(rest, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer", ref)
	}
	for _, tok := range strings.Split(rest[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%q: %q is under a %T, not an object", ref, tok, v)
		}
		if v, ok = m[tok]; !ok {
			return nil, fmt.Errorf("%q: no %q", ref, tok)
		}
	}
	return v, nil
}

// Every $ref in the document resolves to something inside it, and every schema in
// components is used, so a renamed schema cannot leave a dangling reference.
func TestOpenAPIRefsResolve(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	used := map[string]bool{}
	var refs int
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				refs++
				used[ref] = true
				if _, err := jsonPointer(doc, ref); err != nil {
					t.Errorf("%s: $ref does not resolve: %v", at, err)
				}
			}
			for k, e := range v {
				walk(at+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s/%d", at, i), e)
			}
		}
	}
	walk("#", doc)
	if refs < 50 {
		t.Fatalf("only %d $refs found: the walk is wrong", refs)
	}
	components, _ := doc["components"].(map[string]any)
	for _, kind := range []string{"schemas", "responses", "parameters"} {
		defs, _ := components[kind].(map[string]any)
		for name := range defs {
			if !used["#/components/"+kind+"/"+name] {
				t.Errorf("components/%s/%s is never referenced", kind, name)
			}
		}
	}
}

// Every 2xx response says what its body is: content with a schema for each media
// type, or, for 204 alone, no content at all (documented empty). Every response has a
// description, as OpenAPI requires.
func TestOpenAPISuccessResponsesHaveSchemas(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	for _, o := range openAPIOperations(t, doc) {
		responses, _ := o.op["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s has no responses", o)
			continue
		}
		var success int
		for code, v := range responses {
			r, _ := resolveRef(doc, v).(map[string]any)
			if r == nil {
				t.Errorf("%s %s: the response does not resolve", o, code)
				continue
			}
			if d, _ := r["description"].(string); d == "" {
				t.Errorf("%s %s has no description", o, code)
			}
			if !strings.HasPrefix(code, "2") {
				continue
			}
			success++
			content, _ := r["content"].(map[string]any)
			if len(content) == 0 {
				if code != "204" {
					t.Errorf("%s %s has no content: document its schema, or answer 204 if the body is empty", o, code)
				}
				continue
			}
			if code == "204" {
				t.Errorf("%s 204 documents content, but a 204 has no body", o)
			}
			for media, v := range content {
				mt, _ := v.(map[string]any)
				if s, ok := mt["schema"].(map[string]any); !ok || len(s) == 0 {
					t.Errorf("%s %s %s has no schema", o, code, media)
				}
			}
		}
		if success == 0 {
			t.Errorf("%s documents no 2xx response", o)
		}
	}
}
