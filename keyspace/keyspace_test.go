package keyspace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestPrefixesAreDisjoint(t *testing.T) {
	for i, a := range All {
		if a.Prefix == "" || !strings.HasSuffix(a.Prefix, "/") || a.Owner == "" || a.Doc == "" {
			t.Errorf("space %+v: want a prefix ending in /, an owner and a doc", a)
		}
		for j, b := range All {
			if i != j && strings.HasPrefix(a.Prefix, b.Prefix) {
				t.Errorf("%q (%s) lies inside %q (%s): key spaces must be disjoint", a.Prefix, a.Owner, b.Prefix, b.Owner)
			}
		}
	}
}

// TestPrefixesAreDocumented checks that every space appears in the "kv
// layout" of its owner's doc.go, as a line "//\t<prefix>...".
func TestPrefixesAreDocumented(t *testing.T) {
	docs := map[string]string{}
	for _, s := range All {
		doc, ok := docs[s.Owner]
		if !ok {
			b, err := os.ReadFile(filepath.Join("..", s.Owner, "doc.go"))
			if err != nil {
				t.Fatalf("owner %s: %v", s.Owner, err)
			}
			doc = string(b)
			docs[s.Owner] = doc
			if !strings.Contains(doc, "// kv layout") {
				t.Errorf("%s/doc.go has no \"kv layout\" section", s.Owner)
			}
		}
		line := regexp.MustCompile(`(?m)^//\t` + regexp.QuoteMeta(s.Prefix))
		if !line.MatchString(doc) {
			t.Errorf("%s/doc.go does not document %q (%s) in its kv layout", s.Owner, s.Prefix, s.Doc)
		}
	}
}

// TestNoPrefixLiterals checks that no package spells a registered prefix as
// a string literal: keys are built from this package's constants only.
func TestNoPrefixLiterals(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != ".." && (strings.HasPrefix(n, ".") || n == "keyspace" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, s := range All {
				if strings.HasPrefix(v, s.Prefix) && len(v) <= len(s.Prefix)+8 {
					t.Errorf("%s: literal %q spells the %s key space %q: use keyspace's constant", fset.Position(lit.Pos()), v, s.Owner, s.Prefix)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSpacesUsedByOwnersOnly checks that a package names only the key
// spaces it owns; another package's data is reached through its owner's
// functions.
func TestSpacesUsedByOwnersOnly(t *testing.T) {
	fset := token.NewFileSet()
	self, err := parser.ParseFile(fset, "keyspace.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{} // constant name -> owner package
	ast.Inspect(self, func(n ast.Node) bool {
		cl, ok := n.(*ast.CompositeLit)
		if !ok || len(cl.Elts) != 3 {
			return true
		}
		id, ok1 := cl.Elts[0].(*ast.Ident)
		lit, ok2 := cl.Elts[1].(*ast.BasicLit)
		if ok1 && ok2 {
			owner[id.Name], _ = strconv.Unquote(lit.Value)
		}
		return true
	})
	if len(owner) != len(All) {
		t.Fatalf("read %d owners from keyspace.go, want %d", len(owner), len(All))
	}
	err = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, "/.") || strings.HasPrefix(path, "../keyspace/") {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../")))
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, isIdent := sel.X.(*ast.Ident); !isIdent || x.Name != "keyspace" {
				return true
			}
			if o, ok := owner[sel.Sel.Name]; ok && o != pkg {
				t.Errorf("%s: %s uses keyspace.%s, which %s owns", fset.Position(sel.Pos()), pkg, sel.Sel.Name, o)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
