package decodecheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Site is one place in a package's source that decodes a request.
type Site struct {
	Pos  string // file:line
	Type string // as TypeKey spells it; "" when the walk cannot tell
}

// DecodedTypes walks the non-test Go files of dirs for calls to the
// functions in calls (a callee as written, "reply.Decode" or
// "g.unitParams", to the index of the argument decoded into) and returns
// the type decoded at each. The argument is &x, or x, with x declared in
// the enclosing function (var x T, x := &T{}, x := new(T), or a parameter
// x *T), or a function literal whose first parameter is the type (a
// generic helper's callback). A site whose type is the enclosing
// function's type parameter, or any (a helper passing its caller's
// pointer on), is left out: its callers are sites.
func DecodedTypes(t testing.TB, dirs []string, calls map[string]int) []Site {
	t.Helper()
	var sites []Site
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					i, ok := calls[exprString(call.Fun)]
					if !ok || i >= len(call.Args) {
						return true
					}
					typ := argType(fn, call.Args[i])
					if typ != "" && isTypeParam(fn, typ) || typ == "any" {
						return true
					}
					sites = append(sites, Site{Pos: fset.Position(call.Pos()).String(), Type: typ})
					return true
				})
			}
		}
	}
	return sites
}

func argType(fn *ast.FuncDecl, arg ast.Expr) string {
	if lit, ok := arg.(*ast.FuncLit); ok {
		ps := lit.Type.Params.List
		if len(ps) == 0 {
			return ""
		}
		return typeString(ps[0].Type)
	}
	if u, ok := arg.(*ast.UnaryExpr); ok && u.Op == token.AND {
		arg = u.X
	}
	id, ok := arg.(*ast.Ident)
	if !ok {
		return ""
	}
	for _, p := range fn.Type.Params.List {
		for _, n := range p.Names {
			if n.Name == id.Name {
				return typeString(deref(p.Type))
			}
		}
	}
	var typ string
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for _, name := range n.Names {
				if name.Name == id.Name && n.Type != nil {
					typ = typeString(deref(n.Type))
				}
			}
		case *ast.AssignStmt:
			for j, l := range n.Lhs {
				if l, ok := l.(*ast.Ident); ok && l.Name == id.Name && n.Tok == token.DEFINE && j < len(n.Rhs) {
					typ = constructed(n.Rhs[j])
				}
			}
		}
		return typ == ""
	})
	return typ
}

// constructed is the type T of &T{} or new(T).
func constructed(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.UnaryExpr:
		if c, ok := e.X.(*ast.CompositeLit); ok && e.Op == token.AND {
			return typeString(c.Type)
		}
	case *ast.CallExpr:
		if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "new" && len(e.Args) == 1 {
			return typeString(e.Args[0])
		}
	}
	return ""
}

func deref(e ast.Expr) ast.Expr {
	if s, ok := e.(*ast.StarExpr); ok {
		return s.X
	}
	return e
}

func isTypeParam(fn *ast.FuncDecl, typ string) bool {
	if fn.Type.TypeParams == nil {
		return false
	}
	for _, p := range fn.Type.TypeParams.List {
		for _, n := range p.Names {
			if n.Name == typ {
				return true
			}
		}
	}
	return false
}

// typeString spells a type expression the way TypeKey spells the type.
func typeString(e ast.Expr) string {
	st, ok := e.(*ast.StructType)
	if !ok {
		return exprString(e)
	}
	var fields []string
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			tag, _ = strconv.Unquote(f.Tag.Value)
		}
		if len(f.Names) == 0 {
			return "" // an embedded field: not spelled here
		}
		for _, n := range f.Names {
			fields = append(fields, n.Name+" "+typeString(f.Type)+" "+strconv.Quote(tag))
		}
	}
	return "struct{" + strings.Join(fields, "; ") + "}"
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.ArrayType:
		if e.Len == nil {
			return "[]" + exprString(e.Elt)
		}
	case *ast.MapType:
		return "map[" + exprString(e.Key) + "]" + exprString(e.Value)
	case *ast.InterfaceType:
		if len(e.Methods.List) == 0 {
			return "interface {}"
		}
	case *ast.StructType:
		return typeString(e)
	}
	return fmt.Sprintf("<%T>", e)
}

// Covered fails t for each site whose type the table (keys as TypeKey
// spells them) lacks or the walk cannot tell, and for each table entry no
// site decodes.
func Covered(t testing.TB, sites []Site, table map[string]bool) {
	t.Helper()
	if len(sites) == 0 {
		t.Fatal("found no decode sites: the walk is looking in the wrong place")
	}
	seen := map[string]bool{}
	for _, s := range sites {
		switch {
		case s.Type == "":
			t.Errorf("%s: cannot tell which type is decoded here; declare it as var x T next to the call", s.Pos)
		case !table[s.Type]:
			t.Errorf("%s decodes %s, which the fuzz table lacks: add it", s.Pos, s.Type)
		}
		seen[s.Type] = true
	}
	for k := range table {
		if !seen[k] {
			t.Errorf("the fuzz table has %s, which no handler decodes: remove it", k)
		}
	}
}
