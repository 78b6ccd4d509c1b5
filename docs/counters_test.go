package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"beamconnect/coupling"
)

// Every counter of the summary, --json and /metrics is explained in the
// one table of running.md, by its key, and those normal in a healthy run
// are said to be; the table names no counter that is not there.
func TestCountersTable(t *testing.T) {
	text, err := os.ReadFile("running.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(text), "<!-- counters:")
	if !ok {
		t.Fatal("running.md has no counters table")
	}
	rows := map[string][]string{} // key → the row's cells
	name := regexp.MustCompile("`([a-z_]+)`")
	for _, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "| `") {
			if len(rows) > 0 && !strings.HasPrefix(line, "|") {
				break
			}
			continue
		}
		cells := strings.Split(line, "|")
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = cells
		}
	}
	known := map[string]bool{}
	for _, c := range coupling.CounterTable {
		if c.Hidden {
			continue
		}
		known[c.Name] = true
		cells, ok := rows[c.Name]
		if !ok {
			t.Errorf("counter %s is not in the table", c.Name)
			continue
		}
		if normal := strings.TrimSpace(cells[3]); c.Normal && normal != "yes" {
			t.Errorf("counter %s is normal in a healthy run; the table says %q", c.Name, normal)
		}
	}
	for k := range rows {
		if !known[k] {
			t.Errorf("the table explains %s, which is no counter", k)
		}
	}
}
