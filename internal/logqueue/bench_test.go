package logqueue

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/lmittmann/tint"
)

// drainedPipe is stderr on a pipe whose reader keeps up.
func drainedPipe(b *testing.B) *os.File {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	go io.Copy(io.Discard, r)
	b.Cleanup(func() { w.Close(); r.Close() })
	return w
}

// nopHandler takes every record and does nothing with it.
type nopHandler struct{}

func (nopHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (nopHandler) Handle(context.Context, slog.Record) error { return nil }
func (h nopHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h nopHandler) WithGroup(string) slog.Handler           { return h }

// BenchmarkLogCall measures what one warning costs the goroutine that logs
// it (the coupling's, on a fault), with tint writing straight to stderr as
// before, and through the queue.
func BenchmarkLogCall(b *testing.B) {
	opts := &tint.Options{NoColor: true}
	logCall := func(b *testing.B, log *slog.Logger) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			log.Warn("lockstep lost", "vehicle", "ego", "id", i, "for", 1500*time.Microsecond)
		}
	}
	b.Run("direct/pipe", func(b *testing.B) {
		logCall(b, slog.New(tint.NewTextHandler(drainedPipe(b), opts)))
	})
	b.Run("queued/pipe", func(b *testing.B) {
		w := drainedPipe(b)
		q := New(tint.NewTextHandler(w, opts), w, Options{})
		logCall(b, slog.New(q.Handler()))
		b.StopTimer()
		q.Close(time.Second)
		b.ReportMetric(float64(q.Dropped())/float64(b.N), "dropped/op")
	})
	b.Run("queued/room", func(b *testing.B) {
		// The writer only takes records off the queue: the cost of queueing one.
		q := New(nopHandler{}, io.Discard, Options{})
		logCall(b, slog.New(q.Handler()))
		b.StopTimer()
		q.Close(time.Second)
		b.ReportMetric(float64(q.Dropped())/float64(b.N), "dropped/op")
	})
	b.Run("queued/stuck", func(b *testing.B) {
		g := newGate()
		q := New(tint.NewTextHandler(g, opts), g, Options{})
		logCall(b, slog.New(q.Handler()))
		b.StopTimer()
		b.ReportMetric(float64(q.Dropped())/float64(b.N), "dropped/op")
		close(g.open)
		q.Close(time.Second)
	})
}

// A log call whose values need no copying allocates nothing beyond what
// slog itself does, whether the record is queued or dropped.
func TestLogCallAllocs(t *testing.T) {
	g := newGate()
	q := New(slog.NewTextHandler(io.Discard, nil), g, Options{Size: 4})
	defer func() { close(g.open); q.Close(time.Second) }()
	log := slog.New(q.Handler())
	if n := testing.AllocsPerRun(100, func() {
		log.LogAttrs(context.Background(), slog.LevelWarn, "lockstep lost", slog.String("vehicle", "ego"), slog.Int("id", 7), slog.Duration("for", time.Millisecond))
	}); n != 0 {
		t.Errorf("%v allocations per log call, want 0", n)
	}
}
