package lines

import (
	"bufio"
	"bytes"
	"testing"
)

// The reader gives every line of its input in order, as splitting at
// newlines would, except that a line longer than its limit comes as its
// first bytes and its length, and reading goes on after it.
func FuzzReader(f *testing.F) {
	f.Add([]byte("1 0.5 0 0\n# note\n\n1 2 3"), 8)
	f.Add(bytes.Repeat([]byte("9"), 100), 16)
	f.Add([]byte("short\n"+string(bytes.Repeat([]byte("x"), 40))+"\nafter\n"), 10)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		max = 1 + max&63
		lr := NewReader(bufio.NewReaderSize(bytes.NewReader(in), 16), max)
		want := bytes.SplitAfter(in, []byte("\n"))
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1]
		}
		for i, w := range want {
			line, long, err := lr.Next()
			if err != nil {
				t.Fatalf("line %d: %v", i, err)
			}
			switch {
			case len(w) > max && (long != len(w) || !bytes.Equal(line, w[:len(line)]) || len(line) > max):
				t.Fatalf("line %d of %d bytes (limit %d): got long %d, prefix %q", i, len(w), max, long, line)
			case len(w) <= max && (long != 0 || !bytes.Equal(line, w)):
				t.Fatalf("line %d: got %q (long %d), want %q", i, line, long, w)
			}
		}
		if _, _, err := lr.Next(); err == nil {
			t.Fatal("no end after the last line")
		}
	})
}
