package admin_test

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// secretName marks what holds a token or a digest of one: identifiers of
// the admin token, console sessions' CSRF tokens and their SHA-256 sums.
var secretName = regexp.MustCompile(`(?i)token|csrf|secret|password|digest|sum|want`)

// equalityFuncs compare in time that depends on where their arguments
// first differ.
var equalityFuncs = map[string]bool{
	"bytes.Equal": true, "bytes.Compare": true, "strings.EqualFold": true, "strings.Compare": true,
	"slices.Equal": true, "reflect.DeepEqual": true,
}

// TestTokensCompareInConstantTime reads the source of the admin API and
// the console: a comparison that involves a token (by name, or inside a
// function about tokens) must go through subtle.ConstantTimeCompare, never
// ==, != or an early-exit equality function, whose time tells an attacker
// how much of a guess was right. Comparing with a constant (empty, a
// scheme name) tells nothing and is allowed. The functions that check
// tokens must call subtle.ConstantTimeCompare.
func TestTokensCompareInConstantTime(t *testing.T) {
	mustCompare := map[string]bool{
		"admin.RequireToken": false, "console.tokenCheck.matches": false, "console.sameToken": false,
	}
	for _, dir := range []string{".", filepath.Join("..", "console")} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := gotoken.NewFileSet()
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			imports := map[string]bool{}
			for _, im := range f.Imports {
				name := strings.Trim(im.Path.Value, `"`)
				name = name[strings.LastIndex(name, "/")+1:]
				if im.Name != nil {
					name = im.Name.Name
				}
				imports[name] = true
			}
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				name := f.Name.Name + "." + funcName(fn)
				aboutTokens := secretName.MatchString(funcName(fn))
				ast.Inspect(fn.Body, func(n ast.Node) bool {
					var operands []ast.Expr
					what := ""
					switch n := n.(type) {
					case *ast.BinaryExpr:
						if n.Op != gotoken.EQL && n.Op != gotoken.NEQ {
							return true
						}
						operands, what = []ast.Expr{n.X, n.Y}, n.Op.String()
					case *ast.CallExpr:
						called := exprText(src, fset, n.Fun)
						if called == "subtle.ConstantTimeCompare" {
							if _, ok := mustCompare[name]; ok {
								mustCompare[name] = true
							}
						}
						if !equalityFuncs[called] || len(n.Args) != 2 {
							return true
						}
						operands, what = n.Args, called
					default:
						return true
					}
					if constant(operands[0], imports) || constant(operands[1], imports) {
						return true
					}
					x, y := exprText(src, fset, operands[0]), exprText(src, fset, operands[1])
					if aboutTokens || secretName.MatchString(x) || secretName.MatchString(y) {
						t.Errorf("%s: %s compares %s and %s with %s; compare tokens with subtle.ConstantTimeCompare",
							fset.Position(n.Pos()), name, x, y, what)
					}
					return true
				})
			}
		}
	}
	for name, calls := range mustCompare {
		if !calls {
			t.Errorf("%s does not call subtle.ConstantTimeCompare (or is gone: name the function that checks tokens now)", name)
		}
	}
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// constant reports whether e is a literal, nil, or a name from an imported
// package (http.MethodPost): nothing secret.
func constant(e ast.Expr, imports map[string]bool) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.Ident:
		return e.Name == "nil" || e.Name == "true" || e.Name == "false"
	case *ast.SelectorExpr:
		id, ok := e.X.(*ast.Ident)
		return ok && imports[id.Name]
	case *ast.ParenExpr:
		return constant(e.X, imports)
	}
	return false
}

func exprText(src []byte, fset *gotoken.FileSet, e ast.Expr) string {
	return string(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
}
