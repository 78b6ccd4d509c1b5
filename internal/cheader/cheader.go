// Package cheader is for tests: a C header of #defines written from Go
// constants, for C code that mirrors a Go contract (the exported FMU's
// shim mirrors the mailbox and the child's protocol), and the check that
// the header committed is the one the constants write. The constants are
// the one source: the header is generated (go generate runs the test with
// -update), never edited.
package cheader

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Define is one #define: a name, its value in C and what it is.
type Define struct{ Name, Value, Doc string }

// Int defines a number.
func Int[T ~int | ~int32 | ~int64 | ~uint8 | ~uint32 | ~uint64](name string, v T, doc string) Define {
	return Define{name, strconv.FormatInt(int64(v), 10), doc}
}

// Char defines a character, such as 'O'.
func Char(name string, c byte, doc string) Define {
	return Define{name, strconv.QuoteRuneToASCII(rune(c)), doc}
}

// String defines a string literal.
func String(name, s, doc string) Define { return Define{name, strconv.Quote(s), doc} }

// Write is the header: a comment saying what it is and who writes it, an
// include guard, and the defines, each under its comment.
func Write(guard, about, writer string, defs []Define) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "/* %s\n *\n * %s */\n", wrap(about), wrap("Written by "+writer+" from the Go constants: do not edit."))
	fmt.Fprintf(&b, "#ifndef %s\n#define %s\n", guard, guard)
	for _, d := range defs {
		if d.Doc != "" {
			fmt.Fprintf(&b, "\n/* %s */\n", wrap(d.Doc))
		}
		fmt.Fprintf(&b, "#define %s %s\n", d.Name, d.Value)
	}
	fmt.Fprintf(&b, "\n#endif\n")
	return b.Bytes()
}

// wrap folds text to lines of a C comment.
func wrap(s string) string {
	var out, line strings.Builder
	for _, w := range strings.Fields(s) {
		if line.Len() > 0 && line.Len()+1+len(w) > 72 {
			out.WriteString(line.String() + "\n * ")
			line.Reset()
		}
		if line.Len() > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(w)
	}
	return out.String() + line.String()
}

// Check fails t unless the file at path holds want; with update it
// writes want there instead. how says what to run when it is stale.
func Check(t testing.TB, path string, want []byte, update bool, how string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: %s", err, how)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		gl, wl := "", ""
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("%s differs from what the Go constants write, from line %d:\n  it has:   %q\n  expected: %q\n%s", path, i+1, gl, wl, how)
			return
		}
	}
}
