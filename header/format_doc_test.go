package header

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
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

// docTables are the tables of docs/FORMAT.md that lay out a view: the
// heading they follow, the view, the offset their offsets count from, and
// whether a last row ("…" bytes, reserved) covers the rest of the region.
var docTables = []struct {
	heading string
	view    reflect.Type
	base    int64
	rest    bool
}{
	{"## Global hot page", reflect.TypeFor[Hot](), HotOffset, true},
	{"## Per-filter line", reflect.TypeFor[Line](), 0, false},
	{"## Writer slot", reflect.TypeFor[Slot](), 0, false},
	{"### In-flight record", reflect.TypeFor[Record](), 0, false},
	{"## Undo block", reflect.TypeFor[Undo](), UndoOffset, false},
}

// TestFormatDocTablesMatchViews fails when a table of docs/FORMAT.md that
// lays out a line, record, slot header or the hot page does not list the
// view's fields in order, each at the view's offset and size and under the
// name of its `format` tag.
func TestFormatDocTablesMatchViews(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range checkDocTables(string(doc)) {
		t.Error(msg)
	}
}

// TestFormatDocTablesCatchASwappedRow is the negative control of
// TestFormatDocTablesMatchViews: docs/FORMAT.md with two rows of the
// filter line's table swapped, or one row's offset changed, fails it.
func TestFormatDocTablesCatchASwappedRow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	lines := strings.Split(doc, "\n")
	min, max := -1, -1
	for j, l := range lines {
		switch {
		case strings.HasPrefix(l, "| +16 | 8 | min id |"):
			min = j
		case strings.HasPrefix(l, "| +24 | 8 | max id |"):
			max = j
		}
	}
	if min < 0 || max < 0 {
		t.Fatal("the filter line's min id and max id rows are not in docs/FORMAT.md")
	}
	swapped := slices.Clone(lines)
	swapped[min], swapped[max] = lines[max], lines[min]
	if len(checkDocTables(strings.Join(swapped, "\n"))) == 0 {
		t.Error("a table with the min id and max id rows swapped passes")
	}
	moved := slices.Clone(lines)
	moved[max] = strings.Replace(lines[max], "| +24 |", "| +32 |", 1)
	if len(checkDocTables(strings.Join(moved, "\n"))) == 0 {
		t.Error("a table with max id at +32 passes")
	}
}

// checkDocTables returns what differs between the tables of doc and the
// views (docTables).
func checkDocTables(doc string) []string {
	var msgs []string
	for _, tb := range docTables {
		rows, err := docTable(doc, tb.heading)
		if err != nil {
			msgs = append(msgs, err.Error())
			continue
		}
		j := 0
		for k := range tb.view.NumField() {
			f := tb.view.Field(k)
			name, ok := f.Tag.Lookup("format")
			if !ok {
				continue // laid out by another table (a slot's records)
			}
			want := fmt.Sprintf("| %s | %d | %s |", docOffset(tb.base, int64(f.Offset)), f.Type.Size(), name)
			if j >= len(rows) {
				msgs = append(msgs, fmt.Sprintf("%s: no row for %s.%s; want one starting %q", tb.heading, tb.view.Name(), f.Name, want))
				continue
			}
			if !strings.HasPrefix(rows[j], want) {
				msgs = append(msgs, fmt.Sprintf("%s: row %d is %q; %s.%s wants it to start %q", tb.heading, j+1, rows[j], tb.view.Name(), f.Name, want))
			}
			j++
		}
		if tb.rest {
			want := fmt.Sprintf("| %s | … | reserved |", docOffset(tb.base, int64(tb.view.Size())))
			if j >= len(rows) || !strings.HasPrefix(rows[j], want) {
				msgs = append(msgs, fmt.Sprintf("%s: no row starting %q after %s's fields", tb.heading, want, tb.view.Name()))
			}
			j++
		}
		for ; j < len(rows); j++ {
			msgs = append(msgs, fmt.Sprintf("%s: row %d %q has no field in %s", tb.heading, j+1, rows[j], tb.view.Name()))
		}
	}
	return msgs
}

// docOffset spells an offset as the tables do: absolute (from the start of
// the file), or "+n" within a line or slot.
func docOffset(base, off int64) string {
	if base != 0 {
		return strconv.FormatInt(base+off, 10)
	}
	return "+" + strconv.FormatInt(off, 10)
}

// docTable returns the rows (without the title and separator rows) of the
// first table after the line heading of doc.
func docTable(doc, heading string) ([]string, error) {
	lines := strings.Split(doc, "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, heading+" ") || l == heading })
	if at < 0 {
		return nil, fmt.Errorf("docs/FORMAT.md has no heading %q", heading)
	}
	var rows []string
	for _, l := range lines[at+1:] {
		if strings.HasPrefix(l, "#") {
			break
		}
		if strings.HasPrefix(l, "|") {
			rows = append(rows, l)
		} else if len(rows) > 0 {
			break
		}
	}
	if len(rows) < 3 {
		return nil, fmt.Errorf("docs/FORMAT.md has no table after %q", heading)
	}
	return rows[2:], nil
}
