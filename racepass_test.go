package clearhouse_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// makeVar returns the value of `NAME ?= value` in the Makefile, with make's $$
// unescaped.
func makeVar(t *testing.T, makefile, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile sets no %s", name)
	}
	return strings.ReplaceAll(strings.TrimSpace(m[1]), "$$", "$")
}

// raceReduced lists, per package directory, the tests that do less under the race
// detector and run in full in make test's pass without it: those that call
// racetest.SkipUnderRace, directly or through a function of their package that does,
// and, in a package whose TestMain calls racetest.FewerRapidChecksUnderRace, those
// that call rapid.Check (directly or through a function of their package).
func raceReduced(t *testing.T) map[string][]string {
	t.Helper()
	byDir := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "tools" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	calls := func(fn *ast.FuncDecl, match func(*ast.CallExpr) bool) bool {
		found := false
		ast.Inspect(fn, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && match(c) {
				found = true
			}
			return !found
		})
		return found
	}
	selector := func(pkg, name string) func(*ast.CallExpr) bool {
		return func(c *ast.CallExpr) bool {
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != name {
				return false
			}
			x, ok := sel.X.(*ast.Ident)
			return ok && x.Name == pkg
		}
	}
	skips := selector("racetest", "SkipUnderRace")
	fewer := selector("racetest", "FewerRapidChecksUnderRace")
	property := selector("rapid", "Check")
	out := map[string][]string{}
	for dir, files := range byDir {
		var funcs []*ast.FuncDecl
		for _, f := range files {
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
					funcs = append(funcs, fn)
				}
			}
		}
		// direct, or through a function of the package that calls direct.
		via := func(direct func(*ast.CallExpr) bool) func(*ast.FuncDecl) bool {
			helpers := map[string]bool{}
			for _, fn := range funcs {
				if calls(fn, direct) {
					helpers[fn.Name.Name] = true
				}
			}
			helper := func(c *ast.CallExpr) bool {
				id, ok := c.Fun.(*ast.Ident)
				return ok && helpers[id.Name]
			}
			return func(fn *ast.FuncDecl) bool { return calls(fn, direct) || calls(fn, helper) }
		}
		skipping, checking := via(skips), via(property)
		reduced := false
		for _, fn := range funcs {
			if fn.Name.Name == "TestMain" && calls(fn, fewer) {
				reduced = true
			}
		}
		for _, fn := range funcs {
			if fn.Name.Name == "TestMain" || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			if skipping(fn) || (reduced && checking(fn)) {
				out[dir] = append(out[dir], fn.Name.Name)
			}
		}
	}
	return out
}

// `make test` runs every package under the race detector, then, without it, the
// tests that skip under -race or run fewer property checks under it (NORACE_RUN in
// NORACE_PKGS): a test that skips under -race and is missing from that list would
// run nowhere in CI, one that runs fewer checks would never run in full, and a listed
// test that does neither would run twice.
func TestEveryRaceSkipRunsWithoutRace(t *testing.T) {
	raw, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(raw)
	pkgs := strings.Fields(makeVar(t, makefile, "NORACE_PKGS"))
	run := makeVar(t, makefile, "NORACE_RUN")
	m := regexp.MustCompile(`^\^\(([A-Za-z0-9_|]+)\)\$$`).FindStringSubmatch(run)
	if m == nil {
		t.Fatalf("NORACE_RUN is %q, want ^(TestA|TestB|...)$", run)
	}
	listed := strings.Split(m[1], "|")
	reduced := raceReduced(t)
	if len(reduced) == 0 {
		t.Fatal("no test calls racetest.SkipUnderRace: the search is broken or the second pass is empty")
	}
	seen := map[string]bool{}
	for dir, tests := range reduced {
		pkg := "./" + filepath.ToSlash(dir)
		if !slices.Contains(pkgs, pkg) {
			t.Errorf("%s skips %v under -race or runs fewer checks there, but NORACE_PKGS (%v) leaves the package out", pkg, tests, pkgs)
		}
		for _, name := range tests {
			seen[name] = true
			if !slices.Contains(listed, name) {
				t.Errorf("%s.%s skips under -race or runs fewer checks there, but NORACE_RUN does not list it: it would never run in full in make test", pkg, name)
			}
		}
	}
	for _, name := range listed {
		if !seen[name] {
			t.Errorf("NORACE_RUN lists %s, which neither skips under -race (racetest.SkipUnderRace) nor runs fewer checks there (racetest.FewerRapidChecksUnderRace): it would run twice", name)
		}
	}
}
