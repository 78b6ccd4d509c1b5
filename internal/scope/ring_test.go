package scope

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func cols(n int) []Column {
	c := make([]Column, n)
	for i := range c {
		c[i] = Column{Name: string(rune('a' + i)), Port: "out1"}
	}
	return c
}

// Samples come out in order, flattened from the groups, and a reader gets
// only what is new since its cursor.
func TestSince(t *testing.T) {
	r := New(cols(3), 4, 1)
	outs := [][]float64{{1}, {2, 3}}
	var s Samples
	cur := r.Since(0, 0, &s)
	if len(s.T) != 0 || s.Generation != 1 || s.Width != 3 {
		t.Fatalf("empty ring: %+v", s)
	}
	for i := range 3 {
		outs[0][0] = float64(i)
		r.Push(float64(i)/10, outs)
	}
	cur = r.Since(cur, s.Generation, &s)
	if len(s.T) != 3 || s.T[2] != 0.2 || s.V[6] != 2 || s.V[7] != 2 || s.V[8] != 3 {
		t.Fatalf("got %+v", s)
	}
	r.Push(0.3, outs)
	if cur = r.Since(cur, s.Generation, &s); len(s.T) != 1 || s.T[0] != 0.3 || cur != 4 {
		t.Fatalf("new since the cursor: %+v, cursor %d", s, cur)
	}
	// Lapped: six more into a ring of four; the reader learns it missed two.
	for i := range 6 {
		r.Push(1+float64(i), outs)
	}
	if r.Since(cur, s.Generation, &s); len(s.T) != 4 || s.T[0] != 3 || s.Missed != 2 {
		t.Fatalf("lapped: %+v", s)
	}
	// New columns: a new generation, the old cursor reads from the start,
	// and the samples kept carry over for the columns that stayed ("c"),
	// with gaps (NaN) for the new one ("x").
	r.SetColumns([]Column{{Name: "x", Port: "out2"}, {Name: "c", Port: "out1"}})
	r.Push(9, [][]float64{{7, 8}})
	r.Since(cur, s.Generation, &s)
	if s.Generation != 2 || len(s.T) != 4 || s.Width != 2 || s.Missed != 0 || s.T[0] != 4 || s.T[3] != 9 {
		t.Fatalf("after SetColumns: %+v", s)
	}
	if !math.IsNaN(s.V[0]) || s.V[1] != 3 || s.V[6] != 7 || s.V[7] != 8 {
		t.Errorf("carried over: %v", s.V)
	}
}

// Push keeps one message in every; it never waits for a reader: while one
// holds the ring, the samples are held aside and stored, in order, with the
// next one; only a reader that holds the ring past the held space costs
// samples, and they are counted. It allocates nothing.
func TestPushNeverBlocks(t *testing.T) {
	r := New(cols(3), 1000, 2)
	outs := [][]float64{{1, 2}}
	kept := 0
	for i := range 10 {
		if r.Push(float64(i), outs, [][]float64{{float64(i)}}) {
			kept++
		}
	}
	if kept != 5 {
		t.Errorf("kept %d of 10 with every 2", kept)
	}
	r.mu.Lock() // a reader copying
	for i := 10; i < 20; i++ {
		if !r.Push(float64(i), outs, [][]float64{{float64(i)}}) && i%2 == 1 {
			t.Errorf("sample %d not kept while a reader held the ring", i)
		}
	}
	r.mu.Unlock()
	r.Push(20, outs, [][]float64{{20}})
	r.Push(21, outs, [][]float64{{21}})
	var s Samples
	r.Since(0, r.Layout().Generation, &s)
	want := []float64{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21}
	if !slices.Equal(s.T, want) || r.Dropped() != 0 {
		t.Fatalf("times %v, dropped %d; want %v, none dropped", s.T, r.Dropped(), want)
	}
	for k, tm := range s.T {
		if row := s.V[k*3 : k*3+3]; row[0] != 1 || row[1] != 2 || row[2] != tm {
			t.Errorf("sample at %v: %v", tm, row)
		}
	}

	// Past the held space, samples are dropped and counted.
	held := len(r.heldT)
	r.mu.Lock()
	for i := range 2 * (held + 7) {
		r.Push(float64(100+i), outs, [][]float64{{0}})
	}
	r.mu.Unlock()
	if r.Dropped() != 7 {
		t.Errorf("dropped %d with %d held, want 7", r.Dropped(), held)
	}
	if a := testing.AllocsPerRun(1000, func() { r.Push(1, outs, [][]float64{{1}}) }); a != 0 {
		t.Errorf("%v allocations per Push", a)
	}
}

// A reload's new columns come after the held samples, which are stored in
// the layout they were taken in.
func TestHeldSamplesBeforeNewColumns(t *testing.T) {
	r := New(cols(2), 100, 1)
	r.mu.Lock()
	r.Push(1, [][]float64{{1, 2}})
	r.mu.Unlock()
	r.SetColumns(cols(3))
	r.Push(2, [][]float64{{3, 4, 5}})
	var s Samples
	r.Since(0, r.Layout().Generation, &s)
	if !slices.Equal(s.T, []float64{1, 2}) || s.V[0] != 1 || s.V[1] != 2 || !math.IsNaN(s.V[2]) || s.V[5] != 5 {
		t.Errorf("times %v values %v", s.T, s.V)
	}
}

func BenchmarkPush(b *testing.B) {
	r := New(cols(12), 60000, 1)
	outs := [][]float64{{3}, {1}, {2, 3}, {4, 5}, {6, 7}}
	ins := [][]float64{{1}, {2, 3}, {4}}
	for i := 0; b.Loop(); i++ {
		r.Push(float64(i), outs, ins)
	}
}

// A reader asking for at most a few samples gets evenly spaced ones
// ending with the newest, and its cursor moves past all of them.
func TestSinceAtMost(t *testing.T) {
	r := New(cols(1), 100, 1)
	for i := range 10 {
		r.Push(float64(i), [][]float64{{float64(10 * i)}})
	}
	var s Samples
	for _, tt := range []struct {
		cursor uint64
		limit  int
		want   []float64
	}{
		{0, 0, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{0, 10, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{0, 5, []float64{1, 3, 5, 7, 9}},
		{0, 4, []float64{0, 3, 6, 9}},
		{0, 1, []float64{9}},
		{6, 2, []float64{7, 9}},
		{10, 3, nil},
	} {
		t.Run(fmt.Sprintf("from %d at most %d", tt.cursor, tt.limit), func(t *testing.T) {
			cur := r.SinceAtMost(tt.cursor, 1, &s, tt.limit)
			if cur != 10 || len(s.T) != len(tt.want) {
				t.Errorf("from %d at most %d: times %v, cursor %d; want %v", tt.cursor, tt.limit, s.T, cur, tt.want)
				return
			}
			for i, w := range tt.want {
				if s.T[i] != w || s.V[i] != 10*w {
					t.Errorf("from %d at most %d: %v %v, want times %v", tt.cursor, tt.limit, s.T, s.V, tt.want)
					break
				}
			}
		})
	}
}
