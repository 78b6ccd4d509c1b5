package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// maxSleeps is how many real-clock sleeps the tests may have outside
// testing/synctest (development.md, Tests).
const maxSleeps = 15

// Tests wait for events (a log line, a counter, a channel), never for a
// fixed time: a sleep that hopes something has happened by then fails on
// a loaded machine, and one long enough to be safe makes the suite slow.
// What is left of real-clock sleeps outside synctest's fake clock is
// counted here, at most maxSleeps, each with a comment (on its line or the
// line above) that says why it is a sleep. Run with -v to list them.
func TestSleepsHaveReasons(t *testing.T) {
	sites := sleepSites(t, "..")
	for _, s := range sites {
		t.Logf("%s: %s", s.pos, s.what)
		if !s.reason {
			t.Errorf("%s: %s without a comment saying why it is a sleep and not a wait for an event", s.pos, s.what)
		}
	}
	if len(sites) > maxSleeps {
		t.Errorf("%d real-clock sleeps in the tests outside synctest, at most %d: wait for the event instead (internal/logtest, a channel, a counter)", len(sites), maxSleeps)
	}
	t.Logf("%d real-clock sleeps outside synctest (at most %d)", len(sites), maxSleeps)
}

// A sleepSite is one real-clock sleep in a test.
type sleepSite struct {
	pos    string
	what   string
	reason bool
}

// waitHelpers are the packages that wait on the tests' behalf: their
// sleeps count as the tests' own. (The programs and clients tests run,
// models/exectest's scripts and beamng/beamngtest's compute time, sleep
// as the slow party they stand in for: that is their behaviour, not a
// wait.)
var waitHelpers = []string{"internal/eventually"}

// sleepSites finds, in every _test.go file under root (vendored oracles
// and testdata left out) and in waitHelpers, the calls of time.Sleep, the
// fixed waits (<-time.After(d) as a statement of its own) and the tickers
// (time.Tick, time.NewTicker), that do not run in a synctest bubble: not
// inside the function given to synctest.Test, nor in a function or a
// type's method that only such code refers to.
func sleepSites(t *testing.T, root string) []sleepSite {
	t.Helper()
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{} // by folder and package name
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		// A helper's own tests are left out: they run it in a bubble,
		// which the tests it serves do not.
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") == helper(root, path) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		key := filepath.Dir(path) + " " + f.Name.Name
		pkgs[key] = append(pkgs[key], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var sites []sleepSite
	for _, files := range pkgs {
		sites = append(sites, packageSleeps(fset, files)...)
	}
	sort.Slice(sites, func(i, j int) bool { return sites[i].pos < sites[j].pos })
	return sites
}

// helper says whether path is a file of waitHelpers.
func helper(root, path string) bool {
	rel, err := filepath.Rel(root, filepath.Dir(path))
	return err == nil && slices.Contains(waitHelpers, filepath.ToSlash(rel))
}

// packageSleeps is sleepSites for one package's test files.
func packageSleeps(fset *token.FileSet, files []*ast.File) []sleepSite {
	// The package's functions and methods, by key: a function's name, a
	// method's type and name ("T.m").
	names := map[string]bool{} // what is looked for: function, method and receiver type names
	var decls []*ast.FuncDecl
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				decls = append(decls, fd)
				names[fd.Name.Name] = true
				if id := receiverIdent(fd); id != nil {
					names[id.Name] = true
				}
			}
		}
	}
	// Every use of those names: the declaration it is in, and whether it
	// is inside a function given to synctest.
	type use struct {
		in      string // the enclosing declaration's key
		bubbled bool
	}
	uses := map[string][]use{}     // a name as such: a function or a type
	selected := map[string][]use{} // a name after a dot: a method (or a field)
	for _, f := range files {
		for _, d := range f.Decls {
			in := ""
			fd, isFunc := d.(*ast.FuncDecl)
			if isFunc {
				in = declKey(fd)
			}
			skip := map[*ast.Ident]bool{} // a type's name where it is declared; a selector's name
			walkBubbles(d, false, func(n ast.Node, bubbled bool) {
				switch n := n.(type) {
				case *ast.TypeSpec:
					skip[n.Name] = true
				case *ast.SelectorExpr:
					skip[n.Sel] = true
					selected[n.Sel.Name] = append(selected[n.Sel.Name], use{in, bubbled})
				case *ast.Ident:
					if names[n.Name] && !skip[n] && !(isFunc && (n == fd.Name || n == receiverIdent(fd))) {
						uses[n.Name] = append(uses[n.Name], use{in, bubbled})
					}
				}
			})
		}
	}
	// A declaration runs in a bubble when it is used, and only where a
	// bubble is or from declarations that run in one: a function by its
	// name, a method by its name or its type's (a type made only in
	// bubbles has its methods run there).
	inBubble := map[string]bool{}
	only := func(key string, us []use) bool {
		for _, u := range us {
			if !u.bubbled && u.in != key && !inBubble[u.in] {
				return false
			}
		}
		return len(us) > 0
	}
	for changed := true; changed; {
		changed = false
		for _, fd := range decls {
			key := declKey(fd)
			if inBubble[key] {
				continue
			}
			recv := receiverIdent(fd)
			if recv == nil && only(key, uses[fd.Name.Name]) || recv != nil && (only(key, selected[fd.Name.Name]) || only(key, uses[recv.Name])) {
				inBubble[key], changed = true, true
			}
		}
	}
	var sites []sleepSite
	for _, f := range files {
		comments := commentLines(fset, f)
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && inBubble[declKey(fd)] {
				continue
			}
			comms := map[ast.Stmt]bool{} // a select's cases: bounds, not sleeps
			walkBubbles(d, false, func(n ast.Node, bubbled bool) {
				if c, ok := n.(*ast.CommClause); ok {
					comms[c.Comm] = true
				}
				if s, ok := n.(ast.Stmt); bubbled || ok && comms[s] {
					return
				}
				what := sleepCall(n)
				if what == "" {
					return
				}
				p := fset.Position(n.Pos())
				sites = append(sites, sleepSite{
					pos:    filepath.ToSlash(p.Filename) + ":" + strconv.Itoa(p.Line),
					what:   what,
					reason: comments[p.Line] || comments[p.Line-1],
				})
			})
		}
	}
	return sites
}

// walkBubbles walks n, telling visit of every node whether it is inside a
// function given to synctest.Test.
func walkBubbles(n ast.Node, bubbled bool, visit func(ast.Node, bool)) {
	ast.Inspect(n, func(m ast.Node) bool {
		if m == nil {
			return false
		}
		visit(m, bubbled)
		if call, ok := m.(*ast.CallExpr); ok && !bubbled && isSynctest(call.Fun) {
			walkBubbles(call.Fun, false, visit)
			for _, a := range call.Args {
				walkBubbles(a, true, visit)
			}
			return false
		}
		return true
	})
}

func isSynctest(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "synctest" && (sel.Sel.Name == "Test" || sel.Sel.Name == "Run")
}

// sleepCall names the sleep n is, or is "".
func sleepCall(n ast.Node) string {
	switch n := n.(type) {
	case *ast.CallExpr:
		if name := timeFunc(n.Fun); name == "Sleep" || name == "Tick" || name == "NewTicker" {
			return "time." + name
		}
	case *ast.ExprStmt:
		// <-time.After(d) on its own: a fixed wait (in a select beside
		// an event, time.After is a bound, not a sleep).
		if u, ok := n.X.(*ast.UnaryExpr); ok && u.Op == token.ARROW {
			if call, ok := u.X.(*ast.CallExpr); ok && timeFunc(call.Fun) == "After" {
				return "<-time.After"
			}
		}
	}
	return ""
}

// timeFunc is the name of package time's function fun calls, or "".
func timeFunc(fun ast.Expr) string {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" {
		return sel.Sel.Name
	}
	return ""
}

// declKey is a function's name, or a method's type and name.
func declKey(fd *ast.FuncDecl) string {
	if id := receiverIdent(fd); id != nil {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func receiverIdent(fd *ast.FuncDecl) *ast.Ident {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return nil
	}
	x := fd.Recv.List[0].Type
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e
		default:
			return nil
		}
	}
}

// commentLines are the lines of f a comment is on.
func commentLines(fset *token.FileSet, f *ast.File) map[int]bool {
	lines := map[int]bool{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			for l := fset.Position(c.Pos()).Line; l <= fset.Position(c.End()).Line; l++ {
				lines[l] = true
			}
		}
	}
	return lines
}
