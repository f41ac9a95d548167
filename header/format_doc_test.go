package header

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFormatDocNamesEveryConstant fails when an exported constant of this
// package (the format's offsets, sizes, limits and identifiers) is not
// named, in backquotes, in docs/FORMAT.md: the document and the code must
// describe the same format.
func TestFormatDocNamesEveryConstant(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				for _, id := range sp.(*ast.ValueSpec).Names {
					if !id.IsExported() {
						continue
					}
					n++
					if !strings.Contains(string(doc), "`"+id.Name+"`") {
						t.Errorf("%s: constant %s is not named in docs/FORMAT.md", fset.Position(id.Pos()), id.Name)
					}
				}
			}
		}
	}
	if n < 50 {
		t.Fatalf("found only %d exported constants: the parse missed some", n)
	}
}
