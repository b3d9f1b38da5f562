package outline

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
)

// goItems lists a Go file's top-level declarations: functions, methods
// (as Type.Method), and each type, const and var, from its doc comment to
// its end. A file with syntax errors is refused (outlined as text).
func goItems(data []byte, ls *Lines) ([]Item, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", data, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	line := func(p token.Pos) int { return fset.Position(p).Line }
	var items []Item
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			items = append(items, Item{Level: 1, Kind: "func", Name: funcName(d), Start: line(docStart(d.Doc, d.Pos())), End: line(d.End())})
		case *ast.GenDecl:
			items = append(items, genItems(d, line)...)
		}
	}
	return withPaths(items), nil
}

// funcName is a function's name, or Type.Method for a method.
func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + d.Name.Name
		}
		return d.Name.Name
	}
}

// genItems lists the names a type, const or var declaration declares,
// each with the lines of its spec (a lone spec: of the whole declaration).
func genItems(d *ast.GenDecl, line func(token.Pos) int) []Item {
	if d.Tok == token.IMPORT {
		return nil
	}
	var items []Item
	for _, s := range d.Specs {
		from, to := s.Pos(), s.End()
		if len(d.Specs) == 1 {
			from, to = docStart(d.Doc, d.Pos()), d.End()
		}
		switch s := s.(type) {
		case *ast.TypeSpec:
			items = append(items, Item{Level: 1, Kind: "type", Name: s.Name.Name, Start: line(docStart(s.Doc, from)), End: line(to)})
		case *ast.ValueSpec:
			for _, n := range s.Names {
				items = append(items, Item{Level: 1, Kind: d.Tok.String(), Name: n.Name, Start: line(docStart(s.Doc, from)), End: line(to)})
			}
		}
	}
	return items
}

// docStart is where a declaration with doc comment doc starts.
func docStart(doc *ast.CommentGroup, pos token.Pos) token.Pos {
	if doc != nil && doc.Pos() < pos {
		return doc.Pos()
	}
	return pos
}

// pyDef matches a top-level Python definition.
var pyDef = regexp.MustCompile(`^(?:async\s+def|def|class)\s+([A-Za-z_][A-Za-z0-9_]*)`)

// pythonItems scans a Python file's lines for top-level def, async def
// and class (decorators above them included). An item runs to the last
// non-blank line before the next line that starts at column 0 with code
// (not a comment). This is a scanner, not a parser: see the package doc.
func pythonItems(data []byte, ls *Lines) []Item {
	var items []Item
	open, lastCode, decorator := -1, 0, 0
	for n := 1; n <= ls.Count(); n++ {
		b, _ := ls.Slice(n, n)
		body := bytes.TrimRight(b, " \t\r\n")
		if len(body) == 0 || body[0] == '#' {
			continue
		}
		if top := body[0] != ' ' && body[0] != '\t'; top && !continues(body) {
			if open >= 0 {
				items[open].End = lastCode
				open = -1
			}
			if m := pyDef.FindSubmatch(body); m != nil {
				items = append(items, pyItem(string(m[0]), string(m[1]), n, decorator))
				open, decorator = len(items)-1, 0
			} else if body[0] == '@' && decorator == 0 {
				decorator = n
			} else if body[0] != '@' {
				decorator = 0
			}
		}
		lastCode = n
	}
	if open >= 0 {
		items[open].End = lastCode
	}
	return withPaths(items)
}

// continues reports whether a column-0 line continues a statement rather
// than starting one (a closing bracket).
func continues(body []byte) bool {
	return body[0] == ')' || body[0] == ']' || body[0] == '}'
}

func pyItem(match, name string, line, decorator int) Item {
	kind := "def"
	if match[0] == 'c' {
		kind = "class"
	}
	start := line
	if decorator > 0 {
		start = decorator
	}
	return Item{Level: 1, Kind: kind, Name: name, Start: start, End: line}
}
