package program

import (
	"math"
	"strconv"
	"testing"
)

// A request's time is written in strconv's shortest form; the same time
// again within the window is written another way, the same number, so
// that its text names one request. An echo names the request whose text
// it is; one written another way names it only when no request in the
// window had its time.
func TestRequestTimes(t *testing.T) {
	var r timeRing
	var got []string
	for _, tk := range []float64{12, 12, 12.5, 12, 1e-5, 1e-5, 0, 0, 0} {
		pad, _ := r.place(tk)
		got = append(got, string(appendTime(nil, tk, pad)))
	}
	want := []string{"12", "12e0", "12.5", "12e00", "1e-05", "1e-005", "0", "0e0", "0e00"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d written %q, want %q (all: %q)", i, got[i], want[i], got)
		}
	}
	// A time the window has forgotten is written the shortest way again.
	r = timeRing{}
	r.place(3)
	for k := range timeWindow - 1 {
		r.place(float64(k + 10))
	}
	if pad, unique := r.place(3); pad != 1 || unique {
		t.Errorf("a time 8 requests back: pad %d, unique %v; want told apart", pad, unique)
	}
	r.place(99)
	if pad, unique := r.place(3); pad != 0 || unique {
		t.Errorf("once the first 3 is forgotten: pad %d, unique %v; want the shortest, not unique (3e0 is in the window)", pad, unique)
	}

	for _, tt := range []struct {
		name   string
		echo   string
		t      float64
		pad    int8
		unique bool
		want   bool
	}{
		{"as written", "12.345", 12.345, 0, true, true},
		{"another time", "12.34", 12.345, 0, true, false},
		{"the same number another way, a unique time", "12.0", 12, 0, true, true},
		{"the same number another way, a time that repeats", "12.0", 12, 1, false, false},
		{"a repeated time as written", "12e0", 12, 1, false, true},
		{"the repeated time's first request", "12", 12, 1, false, false},
		{"not a number", "twelve", 12, 0, true, false},
		{"nothing", "", 12, 0, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, _ := echoes([]byte(tt.echo), nil, tt.t, tt.pad, tt.unique); got != tt.want {
				t.Errorf("@%s for the request at %v (pad %d, unique %v): %v, want %v", tt.echo, tt.t, tt.pad, tt.unique, got, tt.want)
			}
		})
	}
}

// Every way a request's time is written parses back to the time, and its
// echo names that request; an answer line's echo is split off whatever
// the line holds.
func FuzzRequestTime(f *testing.F) {
	f.Add(12.345, uint8(0), []byte("@12.345 1 0 0"))
	f.Add(1e-5, uint8(3), []byte("@"))
	f.Add(1e21, uint8(8), []byte("@1e+21\t1"))
	f.Add(0.0, uint8(1), []byte("@ 1 2"))
	f.Fuzz(func(t *testing.T, tk float64, pad uint8, line []byte) {
		if math.IsNaN(tk) || math.IsInf(tk, 0) {
			return
		}
		p := int8(pad % (timeWindow + 1))
		text := appendTime(nil, tk, p)
		if v, err := strconv.ParseFloat(string(text), 64); err != nil || v != tk {
			t.Fatalf("%v with pad %d written %q, which parses to %v (%v)", tk, p, text, v, err)
		}
		if ok, _ := echoes(text, nil, tk, p, false); !ok {
			t.Fatalf("%q does not echo its own request", text)
		}
		if len(line) > 0 && line[0] == '@' {
			tok, rest := cutEcho(line)
			if len(tok)+len(rest) > len(line) {
				t.Fatalf("%q split into %q and %q", line, tok, rest)
			}
		}
	})
}
