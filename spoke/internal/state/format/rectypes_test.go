package format

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestRecordTypesAreDistinct reads this package's source: two record types
// with one number would make a snapshot or an export ambiguous, and
// branches that each append one are merged without a textual conflict.
func TestRecordTypesAreDistinct(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "RecordType" {
						continue
					}
					for i, name := range vs.Names {
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok {
							t.Fatalf("%s is not a literal number", name.Name)
						}
						if other, dup := seen[lit.Value]; dup {
							t.Errorf("%s and %s are both record type %s", other, name.Name, lit.Value)
						}
						seen[lit.Value] = name.Name
					}
				}
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("found %d record types: the test no longer reads them", len(seen))
	}
}
