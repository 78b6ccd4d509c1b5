package config

import (
	"sort"
	"strings"
)

// Severity of a diagnostic: an error makes a config unusable, a warning does not.
type Severity uint8

const (
	Error Severity = iota
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one finding about a config, placed in its file.
type Diagnostic struct {
	File     string
	Pos      Pos
	Path     string // JSON path in display form, e.g. outputs[0].ports[2][0].propertyName; "" for the document
	Severity Severity
	Msg      string
}

// String reads "rig.json:14:9: outputs[0].ports[2][0].propertyName: message",
// with "warning: " before the path for warnings.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	b.WriteByte(':')
	b.WriteString(d.Pos.String())
	b.WriteString(": ")
	if d.Severity == Warning {
		b.WriteString("warning: ")
	}
	if d.Path != "" {
		b.WriteString(d.Path)
		b.WriteString(": ")
	}
	b.WriteString(d.Msg)
	return b.String()
}

// Diagnostics is every finding about one file; as an error it is a config
// that cannot be used, and it lists its warnings too.
type Diagnostics []Diagnostic

// Error lists every diagnostic, one a line, in file order.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Errors counts the diagnostics of severity Error.
func (ds Diagnostics) Errors() int {
	n := 0
	for _, d := range ds {
		if d.Severity == Error {
			n++
		}
	}
	return n
}

// Sort orders diagnostics as a reader meets them: each file's in file
// order, the files in the order they first appear.
func (ds Diagnostics) Sort() {
	if len(ds) > 0 {
		ds.sortByPosition(ds[0].File)
	}
}

// sortByPosition orders diagnostics as a reader meets them: the config
// file's first, then those of the files it names (Gen 2 CSVs, in the order
// given, then any other in the order first met), each in file order.
func (ds Diagnostics) sortByPosition(main string, named ...string) {
	rank := map[string]int{main: 0}
	for _, f := range named {
		if _, ok := rank[f]; !ok {
			rank[f] = len(rank)
		}
	}
	for _, d := range ds {
		if _, ok := rank[d.File]; !ok {
			rank[d.File] = len(rank)
		}
	}
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return rank[a.File] < rank[b.File]
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Pos.Col < b.Pos.Col
	})
}

// without drops the findings after the first n that concern a value the
// first n (the schema's) already reject: a value of the wrong kind would only
// produce a second, confusing message about itself.
func (ds Diagnostics) without(n int) Diagnostics {
	out := ds[:n:n]
	for _, d := range ds[n:] {
		covered := false
		for _, s := range ds[:n] {
			if s.Severity == Error && s.Path != "" && (d.Path == s.Path ||
				strings.HasPrefix(d.Path, s.Path+".") || strings.HasPrefix(d.Path, s.Path+"[")) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, d)
		}
	}
	return out
}
