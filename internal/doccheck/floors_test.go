package doccheck

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Package scaling's files stand on floors (scaling/doc.go, "The files,
// floor by floor"): each file's first line says "// Floor N (...)", and a
// file uses what its own floor and the floors below define. These tests
// hold the package to it: a function, method, field, variable or constant
// defined on a higher floor may not be used, except the calls listed in
// allowedUp, each for a reason given there. Types are exempt: a struct
// names the types of the state it holds (Filter holds a chain) and an
// interface the types its methods take, whatever floor defines them; what
// runs is what the floors order.

// allowedUp lists the upward uses that are the design, not an accident of
// where a helper lives: "file -> name".
var allowedUp = map[string]string{
	// A handle whose file was replaced opens the replacement and shuts
	// itself down (I14): moving is where opening a handle recurs.
	"successor.go -> Open":     "moving to a replacement opens it",
	"successor.go -> shutdown": "moving to a replacement closes the old handle",
}

var floorLine = regexp.MustCompile(`^// Floor (\d+) \(`)

// scalingUses type-checks package scaling (this platform's files) and
// returns, for each non-type object of the package used in a file other
// than its own, the files it is used from; and each file's floor.
func scalingUses(t *testing.T) (uses map[types.Object]map[string]bool, floors map[string]int, fset *token.FileSet) {
	t.Helper()
	dir := filepath.Join(root, "scaling")
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fset = token.NewFileSet()
	var files []*ast.File
	floors = map[string]int{}
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		if name == "doc.go" {
			continue // the package documentation, no code
		}
		m := []string(nil)
		if len(f.Comments) > 0 && f.Comments[0].Pos() < f.Package {
			m = floorLine.FindStringSubmatch(strings.SplitN(f.Comments[0].List[0].Text, "\n", 2)[0])
		}
		if m == nil {
			t.Errorf("scaling/%s: the first line is not \"// Floor N (...)\" (see scaling/doc.go)", name)
			continue
		}
		floors[name], _ = strconv.Atoi(m[1])
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("github.com/dablooms/dablooms/scaling", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	uses = map[types.Object]map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		switch o := obj.(type) {
		case *types.TypeName:
			continue // (see above)
		case *types.Var:
			if !o.IsField() && o.Parent() != pkg.Scope() {
				continue // a local
			}
		case *types.Const:
			if o.Parent() != pkg.Scope() {
				continue
			}
		case *types.Func:
		default:
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		if from == filepath.Base(fset.Position(obj.Pos()).Filename) {
			continue
		}
		if uses[obj] == nil {
			uses[obj] = map[string]bool{}
		}
		uses[obj][from] = true
	}
	return uses, floors, fset
}

// upward lists the uses of names defined on a higher floor than the file
// using them, as "file -> name (defined in file, floor)".
func upward(uses map[types.Object]map[string]bool, floors map[string]int, fset *token.FileSet) (up []string, keys []string) {
	for obj, froms := range uses {
		def := filepath.Base(fset.Position(obj.Pos()).Filename)
		for from := range froms {
			if floors[def] > floors[from] {
				key := from + " -> " + obj.Name()
				keys = append(keys, key)
				up = append(up, fmt.Sprintf("%s (defined in %s, floor %d above %d)", key, def, floors[def], floors[from]))
			}
		}
	}
	sort.Strings(up)
	sort.Strings(keys)
	return up, keys
}

func TestScalingFloors(t *testing.T) {
	uses, floors, fset := scalingUses(t)
	up, keys := upward(uses, floors, fset)
	seen := map[string]bool{}
	for i, k := range keys {
		seen[k] = true
		if _, ok := allowedUp[k]; !ok {
			t.Errorf("scaling: an upward use: %s; move the helper down, or the caller up (scaling/doc.go)", up[i])
		}
	}
	for k := range allowedUp {
		if !seen[k] {
			t.Errorf("allowedUp lists %q, which scaling no longer uses: drop it", k)
		}
	}
}

// TestScalingFloorsControl is the negative control: with every file on one
// floor but ops.go lowered below the rest, its calls into the chain and
// the writer are upward, and the check must find them.
func TestScalingFloorsControl(t *testing.T) {
	uses, floors, fset := scalingUses(t)
	lowered := map[string]int{}
	for f := range floors {
		lowered[f] = 1
	}
	lowered["ops.go"] = 0
	up, _ := upward(uses, lowered, fset)
	if len(up) == 0 {
		t.Fatal("ops.go on the lowest floor: the check found no upward use")
	}
	for _, u := range up {
		if !strings.HasPrefix(u, "ops.go -> ") {
			t.Errorf("an upward use not from ops.go: %s", u)
		}
	}
}
