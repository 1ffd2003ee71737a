package jobs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// No code outside this package sets the status of a run or a task: it goes through the moves (moves.go), which check
// the move and record its event. The test reads every non-test Go file of the module and names each assignment to
// the Status of what it can tell is a jobs.Run or a jobs.Task: a status of this package assigned (x.Status =
// jobs.RunParked), or the Status of a variable or field declared as a run or a task, of r.Tasks[i], r.Current() or
// r.Task(id), or of a name bound to one of those.
func TestStatusesChangeOnlyThroughMoves(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == filepath.Join(root, "jobs") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, pos := range statusAssignments(f) {
			p := fset.Position(pos)
			rel, _ := filepath.Rel(root, p.Filename)
			found = append(found, rel+":"+strconv.Itoa(p.Line))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range found {
		t.Errorf("%s: a run's or a task's status is assigned; use the moves of package jobs (moves.go)", at)
	}
}

// The checker finds what it must find, and leaves alone the statuses of other things.
func TestStatusAssignmentsFound(t *testing.T) {
	src := `package p

import (
	"github.com/orchrun/orch/brain"
	domain "github.com/orchrun/orch/jobs"
)

type step struct{ run *domain.Run }

func f(r *domain.Run, t domain.Task, s step, a *domain.Attempt, in brain.Interpretation, st domain.RunStatus) {
	r.Status = st                            // a run's
	t.Status = "failed"                      // a task's
	s.run.Status = st                        // a field that is a run
	r.Tasks[0].Status = "waiting"            // a task of the run
	r.Current().Status = "running"           // the current task
	x := r.Task("1")
	x.Status = "done"                        // bound to a task
	for _, task := range r.Tasks {
		task.Status = "pending"              // ranged over the tasks
	}
	var any struct{ Status domain.TaskStatus }
	any.Status = domain.TaskForced           // a status of the package
	any.Status, in.Status = domain.TaskStatus("x"), "" // converted to one
	a.Status = "replied"                     // an attempt's: not a move
	in.Status = brain.StatusFailed           // not the domain's
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, pos := range statusAssignments(f) {
		lines = append(lines, fset.Position(pos).Line)
	}
	want := []int{11, 12, 13, 14, 15, 17, 19, 22, 23}
	if !equalInts(lines, want) {
		t.Fatalf("found lines %v, want %v", lines, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// moduleRoot is the directory of the module's go.mod, above this package's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the package")
		}
		dir = up
	}
}

// skipDir names the directories that hold no code of the module: test data, deployment files (their Go is a module
// of its own), vendored code, and hidden directories.
func skipDir(name string) bool {
	return name == "testdata" || name == "deploy" || name == "vendor" || strings.HasPrefix(name, ".") ||
		strings.HasPrefix(name, "_")
}

const jobsPath = "github.com/orchrun/orch/jobs"

// statusAssignments returns where f assigns the status of a run or a task, as far as its syntax tells.
func statusAssignments(f *ast.File) []token.Pos {
	pkg := importName(f, jobsPath)
	if pkg == "" {
		return nil // no run or task can be named without the package
	}
	held := holders(f, pkg)
	var out []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || as.Tok == token.DEFINE {
			return true
		}
		for i, lhs := range as.Lhs {
			sel, ok := lhs.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Status" {
				continue
			}
			var rhs ast.Expr
			if len(as.Rhs) == len(as.Lhs) {
				rhs = as.Rhs[i]
			}
			if holdsStatus(sel.X, held) || isDomainStatus(rhs, pkg) {
				out = append(out, as.Pos())
			}
		}
		return true
	})
	return out
}

// importName is the name f knows the package of path by ("" when f does not import it).
func importName(f *ast.File, path string) string {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p != path {
			continue
		}
		if im.Name != nil {
			return im.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}

// holders are the names (of variables, parameters and fields) that f declares as a run or a task, or binds to one
// of a run's tasks.
func holders(f *ast.File, pkg string) map[string]bool {
	held := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		for _, id := range bound(n, pkg) {
			held[id.Name] = true
		}
		return true
	})
	return held
}

// bound is what node n declares as a run or a task, or binds to one of a run's tasks.
func bound(n ast.Node, pkg string) []*ast.Ident {
	switch n := n.(type) {
	case *ast.Field:
		if isRunOrTask(n.Type, pkg) {
			return n.Names
		}
	case *ast.ValueSpec:
		if isRunOrTask(n.Type, pkg) {
			return n.Names
		}
	case *ast.AssignStmt:
		var ids []*ast.Ident
		for i, lhs := range n.Lhs {
			if id, ok := lhs.(*ast.Ident); ok && n.Tok == token.DEFINE && len(n.Rhs) == len(n.Lhs) && isTaskOfRun(n.Rhs[i]) {
				ids = append(ids, id)
			}
		}
		return ids
	case *ast.RangeStmt:
		if id, ok := n.Value.(*ast.Ident); ok && isField(n.X, "Tasks") {
			return []*ast.Ident{id}
		}
	}
	return nil
}

// isRunOrTask reports whether a type expression is jobs.Run or jobs.Task, or a pointer to one.
func isRunOrTask(e ast.Expr, pkg string) bool {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && (sel.Sel.Name == "Run" || sel.Sel.Name == "Task")
}

// holdsStatus reports whether the Status of e is a run's or a task's.
func holdsStatus(e ast.Expr, held map[string]bool) bool {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return holdsStatus(e.X, held)
	case *ast.StarExpr:
		return holdsStatus(e.X, held)
	case *ast.Ident:
		return held[e.Name]
	case *ast.SelectorExpr:
		return held[e.Sel.Name]
	}
	return isTaskOfRun(e)
}

// isTaskOfRun reports whether e is one of a run's tasks: r.Tasks[i], r.Current(), r.Task(id).
func isTaskOfRun(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.IndexExpr:
		return isField(e.X, "Tasks")
	case *ast.CallExpr:
		return isField(e.Fun, "Current") || isField(e.Fun, "Task")
	}
	return false
}

func isField(e ast.Expr, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == name
}

// isDomainStatus reports whether e is a status of package jobs: a constant (jobs.RunParked, jobs.TaskFailed) or a
// conversion to one (jobs.RunStatus(s)).
func isDomainStatus(e ast.Expr, pkg string) bool {
	if call, ok := e.(*ast.CallExpr); ok {
		e = call.Fun
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg && (strings.HasPrefix(sel.Sel.Name, "Run") || strings.HasPrefix(sel.Sel.Name, "Task"))
}
