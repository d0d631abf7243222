package templates

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"
)

// TestNoTemplSourceInGeneratedText fails when a templ file prints templ syntax as
// text: templ treats `<span>· @LimitText(x)</span>` as the literal characters, so
// the generated code writes them to every page that shows it. Every string the
// generated components write verbatim is scanned, so a leak is caught whether or
// not a page test reaches that branch.
func TestNoTemplSourceInGeneratedText(t *testing.T) {
	files, err := filepath.Glob("*_templ.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no generated files: %v", err)
	}
	fset := token.NewFileSet()
	literals := 0
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "WriteString" || len(call.Args) != 3 {
				return true
			}
			lit, ok := call.Args[2].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			literals++
			for _, leak := range LeakedTemplateSource(s) {
				t.Errorf("%s: templ source printed as text: %q in %q", fset.Position(lit.Pos()), leak, s)
			}
			return true
		})
	}
	if literals < 100 {
		t.Fatalf("scanned only %d literals: the generated code's shape changed", literals)
	}
}

func TestLeakedTemplateSource(t *testing.T) {
	for _, c := range []struct {
		html string
		leak bool
	}{
		{`<span class="muted">· @LimitText(o.Kind, *b.Limit)</span>`, true},
		{`<td>{ o.Created }</td>`, true},
		{`<td>@templ.Raw(x)</td>`, true},
		{`<td>ana@x.io</td>`, false},
		{`<td>mail ana@example.com (owner)</td>`, false},
		{`<style>.a { color: red }</style><p>ok</p>`, false},
		{`<p>{}</p>`, false},
	} {
		if got := len(LeakedTemplateSource(c.html)) > 0; got != c.leak {
			t.Errorf("%q: leak %v, want %v", c.html, got, c.leak)
		}
	}
}
