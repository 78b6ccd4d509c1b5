package logqueue

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lmittmann/tint"
)

// gate is a stream whose writes wait until it is opened: a reader that
// has stopped reading.
type gate struct {
	open chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// noTime drops the time attribute so lines compare exactly.
func noTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}

func textQueue(w *gate, size int) *Queue {
	return New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: noTime}), w, Options{Size: size})
}

// With the stream stuck, log calls return at once (were one to block, the
// bubble would report a deadlock), the records beyond the queue are
// dropped and counted, and when the stream moves again the kept records
// come out in order followed by one line saying how many were dropped.
func TestStuckStreamNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGate()
		q := textQueue(w, 8)
		log := slog.New(q.Handler())
		log.Info("record", "n", 0)
		synctest.Wait() // the writer took record 0 and is stuck writing it
		for i := 1; i <= 100; i++ {
			log.Warn("record", "n", i)
		}
		if q.Dropped() != 92 {
			t.Errorf("dropped %d, want 92 (100 logged, 8 queued, 1 being written)", q.Dropped())
		}
		close(w.open)
		if !q.Close(time.Second) {
			t.Fatal("not flushed")
		}
		got := lines(w.String())
		want := []string{"level=INFO msg=record n=0"}
		for i := 1; i <= 8; i++ {
			want = append(want, fmt.Sprintf("level=WARN msg=record n=%d", i))
		}
		want = append(want, `level=WARN msg="92 log records dropped" why="the log's reader did not keep up" dropped_total=92`)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("wrote\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// Records from many goroutines, and raw writes among them, come out in
// the order each goroutine made them, none lost while the queue has room.
func TestKeepsOrder(t *testing.T) {
	w := newGate()
	close(w.open)
	q := textQueue(w, 4096)
	log := slog.New(q.Handler())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				if i%10 == 0 {
					fmt.Fprintf(q.Writer(), "raw g=%d i=%d\n", g, i)
				} else {
					log.Info("record", "g", g, "i", i)
				}
			}
		})
	}
	wg.Wait()
	if !q.Close(5 * time.Second) {
		t.Fatal("not flushed")
	}
	next := map[int]int{}
	for _, l := range lines(w.String()) {
		var g, i int
		if _, err := fmt.Sscanf(l[strings.Index(l, " g="):], " g=%d i=%d", &g, &i); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if i != next[g] {
			t.Fatalf("goroutine %d: got %d, want %d", g, i, next[g])
		}
		next[g]++
	}
	for g := range 4 {
		if next[g] != 500 {
			t.Errorf("goroutine %d: %d lines, want 500", g, next[g])
		}
	}
	if q.Dropped() != 0 || q.Failed() != 0 {
		t.Errorf("dropped %d, failed %d", q.Dropped(), q.Failed())
	}
}

// Close waits for a stuck stream for the time it is given and no longer,
// so a stuck reader cannot hold beamconnect's exit.
func TestCloseIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGate()
		q := textQueue(w, 8)
		slog.New(q.Handler()).Info("stuck")
		start := time.Now()
		if q.Close(time.Second) {
			t.Error("Close says flushed, yet the stream never took a byte")
		}
		if took := time.Since(start); took != time.Second {
			t.Errorf("Close took %v, want 1s", took)
		}
		slog.New(q.Handler()).Info("after close") // dropped, not blocked
		close(w.open)                             // let the writer goroutine end
	})
}

// A raw write (a usage line, the status line) waits for room at most
// WriteWait, then is dropped; while the writer stays stuck, the next ones
// are dropped at once rather than each waiting again.
func TestWriterWaitsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGate()
		q := New(slog.NewTextHandler(w, nil), w, Options{Size: 1, WriteWait: 500 * time.Millisecond})
		out := q.Writer()
		out.Write([]byte("a\n"))
		synctest.Wait() // being written
		out.Write([]byte("b\n"))
		start := time.Now()
		out.Write([]byte("c\n"))
		if took := time.Since(start); took != 500*time.Millisecond {
			t.Errorf("a write into a full queue took %v, want WriteWait 500ms", took)
		}
		start = time.Now()
		out.Write([]byte("d\n"))
		if took := time.Since(start); took != 0 {
			t.Errorf("a write while the stream is known stuck took %v, want 0", took)
		}
		if q.Dropped() != 2 {
			t.Errorf("dropped %d, want 2", q.Dropped())
		}
		close(w.open)
		q.Close(time.Second)
		if got := w.String(); !strings.HasPrefix(got, "a\nb\n") || !strings.Contains(got, "2 log records dropped") {
			t.Errorf("wrote %q", got)
		}
	})
}

// brokenPipe is stderr after its reader exited.
type brokenPipe struct{ n int }

func (b *brokenPipe) Write(p []byte) (int, error) { b.n++; return 0, syscall.EPIPE }

// Writes the stream refuses are counted, and the program goes on.
func TestFailedWritesCounted(t *testing.T) {
	bp := &brokenPipe{}
	q := New(slog.NewTextHandler(bp, nil), bp, Options{})
	log := slog.New(q.Handler())
	for range 3 {
		log.Warn("into a broken pipe")
	}
	fmt.Fprintln(q.Writer(), "raw")
	if !q.Close(time.Second) {
		t.Fatal("not flushed")
	}
	if q.Failed() != 4 || bp.n != 4 || q.Dropped() != 0 {
		t.Errorf("failed %d, writes tried %d, dropped %d; want 4, 4, 0", q.Failed(), bp.n, q.Dropped())
	}
}

// counter is a LogValuer whose value changes after the log call.
type counter struct{ n int }

func (c *counter) LogValue() slog.Value { return slog.IntValue(c.n) }

// What is written is what the values were at the call: a record written
// late still carries the call's time, and a slice, a map, a pointer or a
// LogValuer changed after the call do not change the line.
func TestValuesResolvedAtTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGate()
		q := New(slog.NewTextHandler(w, nil), w, Options{})
		log := slog.New(q.Handler())
		at := time.Now()
		names := []string{"rpm"}
		m := map[string]int{"k": 1}
		c := &counter{n: 1}
		type point struct{ X int }
		p := &point{X: 1}
		withS := log.With("fixed", names)
		withS.Info("snap", "names", names, "m", m, "c", c, "p", p, slog.Group("g", "names", names))
		names[0], m["k"], c.n, p.X = "gear", 2, 2, 2
		time.Sleep(5 * time.Second) // the writer is late
		close(w.open)
		q.Close(time.Second)
		want := fmt.Sprintf(`time=%s level=INFO msg=snap fixed=[rpm] names=[rpm] m=map[k:1] c=1 p=&{X:1} g.names=[rpm]`,
			at.Format("2006-01-02T15:04:05.000Z07:00"))
		if got := strings.TrimSpace(w.String()); got != want {
			t.Errorf("wrote\n%s\nwant\n%s", got, want)
		}
	})
}

// Behind the queue, tint prints every kind of value as it does directly.
func TestTintLinesUnchanged(t *testing.T) {
	opts := &tint.Options{NoColor: true, ReplaceAttr: noTime, Level: slog.LevelDebug}
	var direct, queued bytes.Buffer
	q := New(tint.NewTextHandler(&queued, opts), &queued, Options{})
	emit := func(l *slog.Logger) {
		l = l.With("vehicle", "ego").WithGroup("link")
		l.Warn("status", "addr", netip.MustParseAddrPort("127.0.0.1:64891"), "names", []string{"a b", "c"},
			"raw", []byte("x y"), "err", syscall.EPIPE, "d", 1500*time.Microsecond, "f", 0.5, "nilp", (*netip.Prefix)(nil), "nilm", map[string]int(nil))
	}
	emit(slog.New(tint.NewTextHandler(&direct, opts)))
	emit(slog.New(q.Handler()))
	q.Close(time.Second)
	if direct.String() != queued.String() {
		t.Errorf("queued\n%s\ndirect\n%s", queued.String(), direct.String())
	}
}

// Records and writes after Close are not written, and each is counted as
// dropped: the summary's count of lost log lines includes them.
func TestAfterCloseCountsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newGate()
		close(w.open)
		q := textQueue(w, 8)
		log := slog.New(q.Handler())
		log.Info("before")
		if !q.Close(time.Second) {
			t.Fatal("not flushed")
		}
		log.Info("after")
		q.Writer().Write([]byte("raw after\n"))
		synctest.Wait() // the writer, had it taken them, would have written them
		if got := w.String(); got != "level=INFO msg=before\n" {
			t.Errorf("written:\n%s", got)
		}
		if q.Dropped() != 2 {
			t.Errorf("dropped %d, want 2", q.Dropped())
		}
	})
}
