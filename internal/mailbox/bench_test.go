package mailbox

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"
)

// Round trips back to back, in one process and to a child process, each
// side waiting as it does by default (spinning while that pays), always
// asleep, or busy polling:
//
//	go test ./internal/mailbox -run '^$' -bench RoundTrip
func BenchmarkRoundTrip(b *testing.B) {
	for _, where := range []string{"goroutine", "child"} {
		for _, wait := range []string{"", "sleep", "busy poll"} {
			name := where + "/" + wait
			if wait == "" {
				name = where + "/adaptive"
			}
			b.Run(name, func(b *testing.B) {
				box := newBox(b)
				setMode(box, wait)
				if where == "child" {
					child(b, box, "echo", wait)
				} else {
					servePeer(b, box, wait)
				}
				ask(b, box, 0, 10*time.Second) // the child is up
				lat := make([]time.Duration, 0, b.N)
				for i := 0; b.Loop(); i++ {
					start := time.Now()
					if _, err := ask(b, box, float64(i), 10*time.Second); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				reportQuantiles(b, lat)
			})
		}
	}
}

// How late a side sees the other's word, asleep and spinning, after the
// machine has idled for a gap (as between BeamNG's messages): the cost of
// a sleep that spinning saves, which sets the spin limits (wait.go). The
// asker stamps the clock as it asks; the answerer, on its own thread,
// reads it as its wait ends.
//
//	go test ./internal/mailbox -run '^$' -bench WakeUp
func BenchmarkWakeUp(b *testing.B) {
	for _, wait := range []string{"sleep", "busy poll"} {
		for _, gap := range []time.Duration{0, 20 * time.Microsecond, 200 * time.Microsecond, 2 * time.Millisecond} {
			b.Run(wait+"/gap "+gap.String(), func(b *testing.B) {
				box := newBox(b)
				p := peer(box)
				setMode(p, wait)
				late := make(chan []time.Duration, 1)
				go func() {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					var k clock
					var got []time.Duration
					for {
						req, err := p.Next(time.Time{})
						if err != nil {
							late <- got
							return
						}
						got = append(got, time.Duration(k.now()-int64(binary.LittleEndian.Uint64(req))))
						p.Reply(0)
					}
				}()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var k clock
				for b.Loop() {
					if gap > 0 {
						time.Sleep(gap) // the idle time between two requests the benchmark measures a wake-up after
					}
					binary.LittleEndian.PutUint64(box.Request(), uint64(k.now()))
					box.Ask(8)
					if _, err := box.Await(time.Now().Add(10 * time.Second)); err != nil {
						b.Fatal(err)
					}
				}
				box.Close()
				reportQuantiles(b, <-late)
			})
		}
	}
}
