package web_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// Every route of the JSON API is in the OpenAPI document, and every operation the
// document lists is served, so clients written from it reach what exists.
func TestOpenAPIListsEveryAPIRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	engine, ok := f.h.(*gin.Engine)
	if !ok {
		t.Fatalf("the server's handler is a %T, not gin's engine", f.h)
	}
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []struct{ URL string }
		Paths   map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/api/v1" {
		t.Fatalf("servers: %+v; want one, /api/v1", doc.Servers)
	}
	param := regexp.MustCompile(`:([A-Za-z_]+)`)
	served := map[string]bool{}
	for _, r := range engine.Routes() {
		path, ok := strings.CutPrefix(r.Path, "/api/v1")
		if !ok || path == "/openapi.json" {
			continue
		}
		path = param.ReplaceAllString(path, "{$1}")
		op := strings.ToLower(r.Method) + " " + path
		served[op] = true
		if _, ok := doc.Paths[path][strings.ToLower(r.Method)]; !ok {
			t.Errorf("%s /api/v1%s is served but not in openapi.json", r.Method, path)
		}
	}
	var listed []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if slices.Contains(operationMethods, method) && !served[method+" "+path] {
				listed = append(listed, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(listed)
	if len(listed) > 0 {
		t.Errorf("openapi.json lists operations no route serves: %v", listed)
	}
	if len(served) < 20 {
		t.Fatalf("only %d API routes found: the route listing is wrong", len(served))
	}
}
