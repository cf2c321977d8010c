package vibebrowser_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The shape the code keeps (issue 32): no type carries every feature as its methods, and the daemon's root
// package keeps only the wiring; the features live in their own packages.
const (
	maxMethods          = 60 // of any type in the tree
	maxManagerMethods   = 30 // of the daemon's Manager, which only wires the features together
	maxManagerRootFiles = 8  // non-test files of the manager's root package
)

// TestShape counts, in every non-test file of the module, the methods declared on each type, and the
// manager root's files.
func TestShape(t *testing.T) {
	methods := map[string]int{}
	rootFiles := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "node_modules" || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if filepath.Dir(path) == "manager" {
			rootFiles++
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			methods[filepath.Dir(path)+"."+receiverType(fn.Recv.List[0].Type)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(methods) < 50 {
		t.Fatalf("found methods on %d types; want the whole module's", len(methods))
	}
	for typ, n := range methods {
		if n > maxMethods {
			t.Errorf("%s has %d methods; at most %d: give its features types of their own", typ, n, maxMethods)
		}
	}
	if n := methods["manager.Manager"]; n > maxManagerMethods {
		t.Errorf("manager.Manager has %d methods; at most %d: it wires the features, the features' packages hold their work", n, maxManagerMethods)
	}
	if rootFiles > maxManagerRootFiles {
		t.Errorf("the manager's root package has %d non-test files; at most %d (Run and construction)", rootFiles, maxManagerRootFiles)
	}
}

// receiverType is a method receiver's type name without pointer or type parameters.
func receiverType(e ast.Expr) string {
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
			return "?"
		}
	}
}
