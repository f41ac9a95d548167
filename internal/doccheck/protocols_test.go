package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The module's root, from this package's directory.
var root = filepath.Join("..", "..")

// index is what the module's Go files declare.
type index struct {
	tests   map[string]bool // TestX, BenchmarkX, FuzzX in _test.go files
	names   map[string]bool // top-level funcs, vars, consts and types
	methods map[string]bool // "T.M" for a method M of T or *T, or a field M of struct T
	qual    map[string]bool // "pkg.Name" for a top-level name of package pkg
}

// buildIndex parses every Go file of the module (testdata and hidden
// directories excepted).
func buildIndex(t *testing.T) *index {
	t.Helper()
	ix := &index{map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ix.add(f, strings.HasSuffix(path, "_test.go"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || len(ix.tests) < 300 {
		t.Fatalf("parsed %d files holding %d tests: the walk missed the module", files, len(ix.tests))
	}
	return ix
}

func (ix *index) add(f *ast.File, test bool) {
	pkg := f.Name.Name
	name := func(n string) {
		ix.names[n] = true
		ix.qual[pkg+"."+n] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				name(d.Name.Name)
				if test && testName.MatchString(d.Name.Name) {
					ix.tests[d.Name.Name] = true
				}
				continue
			}
			if tn := recvType(d.Recv.List[0].Type); tn != "" {
				ix.methods[tn+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, sp := range d.Specs {
				switch sp := sp.(type) {
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						name(id.Name)
					}
				case *ast.TypeSpec:
					name(sp.Name.Name)
					if st, ok := sp.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							for _, id := range fl.Names {
								ix.methods[sp.Name.Name+"."+id.Name] = true
							}
						}
					}
				}
			}
		}
	}
}

// recvType is the name of a receiver's type: T of T, *T, T[P] or *T[P].
func recvType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

var (
	testName  = regexp.MustCompile(`^(Test|Benchmark|Fuzz)[A-Za-z0-9_]*$`)
	testRef   = regexp.MustCompile(`^((Test|Benchmark|Fuzz)[A-Za-z0-9_]*)(/\S+)?$`)
	methodRef = regexp.MustCompile(`^\(\*?([A-Za-z_]\w*)\)\.([A-Za-z_]\w*)$`)
	dotRef    = regexp.MustCompile(`^([A-Za-z_]\w*)\.([A-Za-z_]\w*)$`)
	bareRef   = regexp.MustCompile(`^[A-Za-z_]\w*$`)
	codeSpan  = regexp.MustCompile("`([^`]*)`")
	heading   = regexp.MustCompile(`^### I(\d+)\. \S`)
	fieldLine = regexp.MustCompile(`^- (Words|Upheld by|Pinned by|Negative control):(.*)$`)
)

// resolve reports whether ref names something the module declares: a test
// (TestX, with an optional /subtest), a method ((*T).M, (T).M or T.M), a
// package-qualified name (pkg.Name) or a top-level name (M). A trailing
// "()" is ignored.
func (ix *index) resolve(ref string) error {
	ref = strings.TrimSuffix(ref, "()")
	if m := testRef.FindStringSubmatch(ref); m != nil {
		if !ix.tests[m[1]] {
			return fmt.Errorf("no test %s in the module", m[1])
		}
		return nil
	}
	if m := methodRef.FindStringSubmatch(ref); m != nil {
		if !ix.methods[m[1]+"."+m[2]] {
			return fmt.Errorf("no method %s of type %s", m[2], m[1])
		}
		return nil
	}
	if m := dotRef.FindStringSubmatch(ref); m != nil {
		if !ix.methods[ref] && !ix.qual[ref] {
			return fmt.Errorf("no method or field %s of a type %s, nor %s in a package %s", m[2], m[1], m[2], m[1])
		}
		return nil
	}
	if bareRef.MatchString(ref) {
		if !ix.names[ref] {
			return fmt.Errorf("no function, variable, constant or type %s", ref)
		}
		return nil
	}
	return fmt.Errorf("not a name (TestX, (*T).M, T.M, pkg.Name or M)")
}

// invariant is one numbered entry of the document.
type invariant struct {
	n      int
	line   int               // of its heading
	fields map[string]string // field → its text, continuation lines joined
}

// parse splits doc into its invariants, in order.
func parse(doc string) ([]invariant, error) {
	var out []invariant
	field := ""
	for i, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "#") {
			field = ""
			if m := heading.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				out = append(out, invariant{n, i + 1, map[string]string{}})
			}
			continue
		}
		if len(out) == 0 {
			continue
		}
		cur := out[len(out)-1].fields
		if m := fieldLine.FindStringSubmatch(l); m != nil {
			field = m[1]
			if _, dup := cur[field]; dup {
				return nil, fmt.Errorf("line %d: I%d has two %q lines", i+1, out[len(out)-1].n, field)
			}
			cur[field] = m[2]
			continue
		}
		if field != "" && strings.HasPrefix(l, "  ") {
			cur[field] += " " + strings.TrimSpace(l)
			continue
		}
		field = ""
	}
	return out, nil
}

// check returns every fault of doc against ix: invariants not numbered
// I1, I2, … in order, a field missing, a name that does not resolve, a
// Pinned by line that names no test, a Negative control line that names
// nothing and does not say "none".
func check(doc string, ix *index) []string {
	invs, err := parse(doc)
	if err != nil {
		return []string{err.Error()}
	}
	var faults []string
	fault := func(inv invariant, format string, args ...any) {
		faults = append(faults, fmt.Sprintf("I%d (line %d): %s", inv.n, inv.line, fmt.Sprintf(format, args...)))
	}
	if len(invs) < 10 {
		faults = append(faults, fmt.Sprintf("found %d invariants (### I<n>. headings): the parse missed them", len(invs)))
	}
	for k, inv := range invs {
		if inv.n != k+1 {
			fault(inv, "numbered I%d, want I%d", inv.n, k+1)
		}
		for _, f := range []string{"Words", "Upheld by", "Pinned by", "Negative control"} {
			text, ok := inv.fields[f]
			if !ok {
				fault(inv, "no %q line", f)
				continue
			}
			refs := codeSpan.FindAllStringSubmatch(text, -1)
			tests := 0
			for _, r := range refs {
				if err := ix.resolve(r[1]); err != nil {
					fault(inv, "%s `%s`: %v", f, r[1], err)
				}
				if testRef.MatchString(r[1]) {
					tests++
				}
			}
			switch {
			case f == "Pinned by" && tests == 0:
				fault(inv, "Pinned by names no test")
			case f == "Negative control" && len(refs) == 0 && !strings.HasPrefix(strings.TrimSpace(text), "none"):
				fault(inv, "Negative control names nothing and does not say none")
			case f != "Negative control" && len(refs) == 0:
				fault(inv, "%s names nothing", f)
			}
		}
	}
	return faults
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "PROTOCOLS.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProtocolsNamesExist: every test, function, switch and word that
// docs/PROTOCOLS.md names for an invariant exists in the module, every
// invariant has its four lines, and they are numbered I1, I2, … in order.
func TestProtocolsNamesExist(t *testing.T) {
	for _, f := range check(readDoc(t), buildIndex(t)) {
		t.Error("docs/PROTOCOLS.md: " + f)
	}
}

// TestProtocolsCheckCatchesAMissingName is the negative control of
// TestProtocolsNamesExist: the document with one test renamed, one method
// renamed, one invariant's number skipped, or a field dropped must fail
// the check.
func TestProtocolsCheckCatchesAMissingName(t *testing.T) {
	doc, ix := readDoc(t), buildIndex(t)
	for _, tc := range []struct{ name, old, new string }{
		{"test renamed", "`TestCrashModelNegativeControl`", "`TestCrashModelNegativeControlX`"},
		{"method renamed", "`(*Filter).ensureDirty`", "`(*Filter).ensureDirtyX`"},
		{"method of another type", "`(*Filter).ensureDirty`", "`(*member).ensureDirty`"},
		{"number skipped", "### I2. ", "### I3. "},
		{"field dropped", "- Pinned by:", "- Pinned:"},
	} {
		if !strings.Contains(doc, tc.old) {
			t.Fatalf("%s: the document no longer holds %s: pick another", tc.name, tc.old)
		}
		if f := check(strings.Replace(doc, tc.old, tc.new, 1), ix); len(f) == 0 {
			t.Errorf("%s (%s → %s): the check found nothing", tc.name, tc.old, tc.new)
		} else {
			t.Logf("%s: %s", tc.name, f[0])
		}
	}
}
