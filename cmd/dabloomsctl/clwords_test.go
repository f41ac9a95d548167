package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// keptWords are names of library functions that recover's messages may
// use as they are: Add and Remove name the operation (an Add, a Remove),
// which the CLI's add and remove also are; Backup appears only as
// RepairOptions.Backup, in an error of the API.
var keptWords = map[string]bool{"Add": true, "Remove": true, "Backup": true}

// untranslated returns the names of package scaling's and recover's
// exported functions that a string literal of recover's code uses and
// words neither rewrites nor keptWords keeps, with a literal that uses
// each.
func untranslated(t *testing.T, words *regexp.Regexp) map[string]string {
	t.Helper()
	api := map[string]bool{}
	var lits []string
	fset := token.NewFileSet()
	for _, pkg := range []string{"scaling", "recover"} {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("package %s: %v (%d files)", pkg, err, len(files))
		}
		for _, p := range files {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.IsExported() {
					api[fd.Name.Name] = true
				}
			}
			if pkg != "recover" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING {
					if s, err := strconv.Unquote(b.Value); err == nil {
						lits = append(lits, s)
					}
				}
				return true
			})
		}
	}
	capital := regexp.MustCompile(`\b[A-Z][A-Za-z0-9]+\b`)
	out := map[string]string{}
	for _, s := range lits {
		for _, w := range capital.FindAllString(words.ReplaceAllString(s, ""), -1) {
			if api[w] && !keptWords[w] {
				out[w] = s
			}
		}
	}
	return out
}

// TestCLIWordsCoverRecover: every library function a message of package
// recover names is one cliWords rewrites in the CLI's words (or one
// keptWords keeps), so a new finding that says "Flush" or "Create" cannot
// reach a CLI user unnoticed. The negative control drops Flush from the
// words, and the check must name it.
func TestCLIWordsCoverRecover(t *testing.T) {
	miss := untranslated(t, libraryWords)
	var names []string
	for w := range miss {
		names = append(names, w)
	}
	sort.Strings(names)
	for _, w := range names {
		t.Errorf("recover's message %q names %s, which cliWords leaves as it is: add it to libraryWords (report.go) or to keptWords", miss[w], w)
	}
	control := regexp.MustCompile(strings.Replace(libraryWords.String(), "|Flush", "", 1))
	if control.String() == libraryWords.String() {
		t.Fatal("negative control: libraryWords has no |Flush to drop")
	}
	if _, ok := untranslated(t, control)["Flush"]; !ok {
		t.Error("negative control: without Flush in the words the check found nothing")
	}
}
