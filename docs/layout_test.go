package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every package of the module is named in development.md's layout table,
// and the table names no package that is gone: a newcomer finds each one
// there with what it owns.
func TestLayoutTableListsEveryPackage(t *testing.T) {
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		var lookErr error
		if goBin, lookErr = exec.LookPath("go"); lookErr != nil {
			t.Skip("no go command here (the Windows tests under Wine): the Linux run checks the table")
		}
	}
	cmd := exec.Command(goBin, "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("development.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	start := strings.Index(text, "## Layout")
	end := strings.Index(text[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("development.md has no section ## Layout")
	}
	table := text[start : start+1+end]
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9/-]+)`").FindAllStringSubmatch(table, -1) {
		named[m[1]] = true
	}
	var want []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, filepath.ToSlash(rel))
	}
	for _, pkg := range want {
		if !named[pkg] {
			t.Errorf("docs/development.md's layout table does not name package %s", pkg)
		}
	}
	for _, row := range regexp.MustCompile("(?m)^\\| `([a-z0-9/-]+)` \\|").FindAllStringSubmatch(table, -1) {
		found := false
		for _, pkg := range want {
			found = found || pkg == row[1]
		}
		if !found {
			t.Errorf("docs/development.md's layout table has a row for %s, which is not a package", row[1])
		}
	}
}
