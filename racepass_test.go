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

// raceSkippers lists, per package directory, the tests that skip under the race
// detector: those that call racetest.SkipUnderRace, directly or through a function of
// their package that does.
func raceSkippers(t *testing.T) map[string][]string {
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
	direct := func(c *ast.CallExpr) bool {
		sel, ok := c.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "SkipUnderRace" {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == "racetest"
	}
	out := map[string][]string{}
	for dir, files := range byDir {
		helpers := map[string]bool{}
		var funcs []*ast.FuncDecl
		for _, f := range files {
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
					funcs = append(funcs, fn)
					if calls(fn, direct) {
						helpers[fn.Name.Name] = true
					}
				}
			}
		}
		viaHelper := func(c *ast.CallExpr) bool {
			id, ok := c.Fun.(*ast.Ident)
			return ok && helpers[id.Name]
		}
		for _, fn := range funcs {
			if strings.HasPrefix(fn.Name.Name, "Test") && (calls(fn, direct) || calls(fn, viaHelper)) {
				out[dir] = append(out[dir], fn.Name.Name)
			}
		}
	}
	return out
}

// `make test` runs every package under the race detector, then, without it, the
// tests that skip under -race (NORACE_RUN in NORACE_PKGS): a test that skips under
// -race and is missing from that list would run nowhere in CI, and a listed test that
// does not skip would run twice.
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
	skippers := raceSkippers(t)
	if len(skippers) == 0 {
		t.Fatal("no test calls racetest.SkipUnderRace: the search is broken or the second pass is empty")
	}
	seen := map[string]bool{}
	for dir, tests := range skippers {
		pkg := "./" + filepath.ToSlash(dir)
		if !slices.Contains(pkgs, pkg) {
			t.Errorf("%s skips %v under -race, but NORACE_PKGS (%v) leaves the package out", pkg, tests, pkgs)
		}
		for _, name := range tests {
			seen[name] = true
			if !slices.Contains(listed, name) {
				t.Errorf("%s.%s skips under -race, but NORACE_RUN does not list it: it would run nowhere in make test", pkg, name)
			}
		}
	}
	for _, name := range listed {
		if !seen[name] {
			t.Errorf("NORACE_RUN lists %s, which does not skip under -race (racetest.SkipUnderRace): it would run twice", name)
		}
	}
}
