package config

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// Columns count characters, whatever order positions are asked in: in file
// order (as the checks ask), backwards, at random, and after a BOM.
func TestPosColumns(t *testing.T) {
	src := []byte("\xef\xbb\xbf{\"a\": \"Zoë\", \"b\": [\"ü\", 1, \"€x\"],\n \"c\": \"naïve\", \"d\": \"\xff\xfe\", \"e\": 2}\n")
	ix, err := newIndex(src, 3)
	if err != nil {
		t.Fatal(err)
	}
	naive := func(off int) Pos {
		line, start := 1, 0
		for i, c := range src[:off] {
			if c == '\n' {
				line, start = line+1, i+1
			}
		}
		start = max(start, min(3, off)) // the BOM is not counted
		return Pos{line, utf8.RuneCount(src[start:off]) + 1}
	}
	orders := map[string][]int{}
	for off := range len(src) + 1 {
		orders["forward"] = append(orders["forward"], off)
		orders["backward"] = append([]int{off}, orders["backward"]...)
	}
	orders["random"] = rand.New(rand.NewPCG(1, 2)).Perm(len(src) + 1)
	for name, offs := range orders {
		for _, off := range offs {
			if got, want := ix.pos(off), naive(off); got != want {
				t.Errorf("%s: offset %d at %v, want %v", name, off, got, want)
			}
		}
	}
}

// oneLine is a machine-written config on a single line with n fields; with
// wide, one character beyond ASCII early on makes every column count runes.
func oneLine(n int, wide bool) []byte {
	object := "Zoe"
	if wide {
		object = "Zoë"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"version": 2, "remoteObject": %q, "outputs": [{"ports": [[`, object)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"propertyName": "rpm"}`)
	}
	b.WriteString(`]]}]}`)
	return []byte(b.String())
}

// BenchmarkParseOneLine parses a one-line config of n fields: placing each
// field's position must cost the same whether or not the line holds a
// character beyond ASCII, so the time per field stays flat as n grows.
func BenchmarkParseOneLine(b *testing.B) {
	for _, wide := range []bool{false, true} {
		for _, n := range []int{1000, 10000, 20000} {
			data := oneLine(n, wide)
			b.Run(fmt.Sprintf("wide=%v/fields=%d", wide, n), func(b *testing.B) {
				for b.Loop() {
					Parse("rig.json", data)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/field")
			})
		}
	}
}
