package host

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/fmu/testfmu"
	"beamconnect/internal/eventually"
)

// The test binary is the host too, as beamconnect is: run with the
// argument fmu-host, it serves instead of testing. With fmu-host-banner
// it is a host that prints a banner on its stdout before anything else, as
// a host whose stdout were not kept from its FMU would.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "fmu-host" {
		os.Exit(Main(os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "fmu-host-banner" {
		os.Stdout.WriteString("Vendor FMU runtime 4.2, licensed to: nobody\n")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// setup builds a cruise FMU and describes it for the host: groundspeed
// in; throttle, brake and fmuTime out; setSpeed and kp as parameters.
func setup(t testing.TB, o testfmu.Options) fmi.Setup {
	t.Helper()
	o.TimeOutput = true
	f, err := fmu.Open(testfmu.ForTest(t, "cruise.fmu", o))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := f.Unpack(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	v := func(name string) fmi.Var {
		x, _ := f.Desc.Variable(name)
		return fmi.Var{VR: x.VR, Kind: x.Kind, Name: x.Name}
	}
	return fmi.Setup{
		Library: u.Library, Major: f.Desc.Major, Token: f.Desc.Token, Resources: u.Resources, Name: "cruise",
		Inputs: []fmi.Var{v("groundspeed")}, Outputs: []fmi.Var{v("throttle"), v("brake"), v("fmuTime")},
		Params: []fmi.Var{v("setSpeed"), v("kp")}, ParamValues: []float64{10, 0.3}, Period: 0.005,
	}
}

type logLines struct {
	mu    sync.Mutex
	l     []string
	added chan struct{} // closed and replaced on every line
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	l.l = append(l.l, s)
	if l.added != nil {
		close(l.added)
		l.added = nil
	}
	l.mu.Unlock()
}

// waitFor reports whether a line holding s comes within ten seconds. The
// FMU's log travels on the host's pipe, the answer in shared memory, so a
// line may arrive after the answer that followed it.
func (l *logLines) waitFor(s string) bool {
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		if strings.Contains(strings.Join(l.l, "\n"), s) {
			l.mu.Unlock()
			return true
		}
		if l.added == nil {
			l.added = make(chan struct{})
		}
		added := l.added
		l.mu.Unlock()
		select {
		case <-added:
		case <-deadline:
			return false
		}
	}
}
func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.l, "\n")
}

func start(t testing.TB, s fmi.Setup) (*Client, *logLines) {
	return startWith(t, s, Handoff{})
}

func startWith(t testing.TB, s fmi.Setup, h Handoff) (*Client, *logLines) {
	t.Helper()
	log := &logLines{}
	c, err := StartWith([]string{os.Args[0], "fmu-host"}, "", s, 10*time.Second, log.add, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, log
}

// step sends one request and waits for its answer.
func step(t testing.TB, c *Client, tm float64, in []float64, out []float64) Answer {
	t.Helper()
	if !c.Send(seqs.Add(1), tm, false, nil, nil, in) {
		t.Fatal("a request is still outstanding")
	}
	var a Answer
	if !c.Wait(time.Now().Add(10*time.Second)) || !c.Take(out, &a) {
		select {
		case <-c.Done():
			t.Fatalf("the host ended: %s", c.Why())
		default:
			t.Fatal("no answer in 10 s")
		}
	}
	return a
}

// seqs numbers the tests' requests, as the coupling numbers its own.
var seqs atomic.Uint64

// An answer says which request it answers. A step that comes back after
// its Wait gave up is collected on the way to the next request (shared
// memory) or read as it comes (pipes): Take gives it with its own
// sequence, never as the next request's answer (before, the next Take
// gave the older step's outputs as the newer request's), and the newer
// request's answer comes with its.
func TestHostAnswerCarriesItsRequest(t *testing.T) {
	for _, h := range []Handoff{{}, {Pipes: true}} {
		t.Run(fmt.Sprintf("pipes %v", h.Pipes), func(t *testing.T) {
			// Its first step takes 300 ms.
			c, _ := startWith(t, setup(t, testfmu.Options{Fault: "stall", After: 1}), h)
			out := make([]float64, 3)
			var a Answer
			if !c.Send(101, 0, false, nil, nil, []float64{5}) {
				t.Fatal("not sent")
			}
			if c.Wait(time.Now().Add(time.Millisecond)) {
				t.Fatal("the stalled step answered at once")
			}
			second := func() bool { return c.Send(102, 0.005, false, nil, nil, []float64{5}) }
			if h.Pipes {
				if !c.Wait(time.Now().Add(10*time.Second)) || !second() {
					t.Fatal("the second request not sent after the first's answer")
				}
			} else if !eventually.True(10*time.Second, second) {
				// Sent once its older step's answer was in: collected on the way.
				t.Fatal("the second request not sent after the first's answer")
			}
			// The first answer, unless the second's came in time to
			// replace it unseen (counted): each with its own outputs.
			if !c.Take(out, &a) {
				t.Fatal("no answer to take")
			}
			if a.Seq == 101 {
				if out[2] != 0.005 {
					t.Fatalf("the first request's answer has fmuTime %v, want 0.005", out[2])
				}
				if !c.Wait(time.Now().Add(10*time.Second)) || !c.Take(out, &a) {
					t.Fatal("no second answer")
				}
			} else if c.Unseen() != 1 {
				t.Errorf("the first answer was replaced, but %d are counted unseen", c.Unseen())
			}
			if a.Seq != 102 || out[2] != 0.01 {
				t.Fatalf("the second answer: seq %d, fmuTime %v: want 102, 0.01", a.Seq, out[2])
			}
		})
	}
}

// The host steps the FMU, takes parameter changes with a step, and says
// when a time brings nothing new: through shared memory, and through the
// pipes (where there is no shared memory).
func TestHostSteps(t *testing.T) {
	for _, h := range []Handoff{{}, {Pipes: true}} {
		t.Run(fmt.Sprintf("pipes %v", h.Pipes), func(t *testing.T) { testHostSteps(t, h) })
	}
}

func testHostSteps(t *testing.T, h Handoff) {
	for _, major := range []int{2, 3} {
		s := setup(t, testfmu.Options{FMI: major})
		c, _ := startWith(t, s, h)
		out := make([]float64, 3)
		a := step(t, c, 1, []float64{5}, out)
		if a.Result != Stepped || out[0] != 1 || out[1] != 0 || out[2] != idTime(201, 0.005) || a.FMUTime != idTime(201, 0.005) {
			t.Errorf("FMI %d: %+v %v", major, a, out)
		}
		// A parameter change rides on the next request: kp 0 and set speed
		// 30 leave only the integral term at work.
		if !c.Send(seqs.Add(1), 1.005, false, s.Params, []float64{30, 0}, []float64{5}) {
			t.Fatal("not sent")
		}
		if !c.Wait(time.Now().Add(10*time.Second)) || !c.Take(out, &a) {
			t.Fatal("no answer")
		}
		if a.Result != Stepped || !(out[0] > 0 && out[0] < 0.01) {
			t.Errorf("FMI %d after tuning: %+v %v", major, a, out)
		}
		if a := step(t, c, 1.005, []float64{5}, out); a.Result != NotStepped {
			t.Errorf("FMI %d: the same time again: %+v", major, a)
		}
	}
}

// One request at a time: a second one is refused until the first is
// answered.
func TestHostOneOutstanding(t *testing.T) {
	c, _ := start(t, setup(t, testfmu.Options{Fault: "hang", After: 1}))
	if !c.Send(seqs.Add(1), 0, false, nil, nil, []float64{0}) {
		t.Fatal("first request not sent")
	}
	if c.Send(seqs.Add(1), 0.005, false, nil, nil, []float64{0}) {
		t.Error("a second request went while the first is unanswered")
	}
	if c.Outstanding() == 0 {
		t.Error("nothing outstanding")
	}
	c.Kill()
	<-c.Done()
}

// A crash ends the host with the signal on its stderr; an error status is
// answered, then the host ends; NaN outputs are answered and it goes on.
func TestHostFaults(t *testing.T) {
	out := make([]float64, 3)
	for _, major := range []int{2, 3} {
		c, _ := start(t, setup(t, testfmu.Options{FMI: major, Fault: "crash", After: 2}))
		step(t, c, 0, []float64{0}, out)
		c.Send(seqs.Add(1), 0.005, false, nil, nil, []float64{0})
		<-c.Done()
		// Windows ends the host with STATUS_ACCESS_VIOLATION as its exit
		// status; elsewhere the signal is named.
		crashed := "SIGSEGV"
		if runtime.GOOS == "windows" {
			crashed = "0xc0000005"
		}
		if why := c.Why(); !strings.Contains(why, crashed) {
			t.Errorf("FMI %d crash: %q", major, why)
		}

		c, log := start(t, setup(t, testfmu.Options{FMI: major, Fault: "error", After: 1}))
		a := step(t, c, 0, []float64{0}, out)
		if a.Result != Failed || !strings.Contains(a.Err, "DoStep returned fmi") {
			t.Errorf("FMI %d error: %+v", major, a)
		}
		if a := step(t, c, 0.005, []float64{0}, out); a.Result != Failed || !strings.Contains(a.Err, "must be instantiated again") {
			t.Errorf("FMI %d after the error: %+v", major, a)
		}
		if !log.waitFor("Error cruise: doStep fails on purpose") {
			t.Errorf("FMI %d: the FMU's log did not come through:\n%s", major, log)
		}

		c, _ = start(t, setup(t, testfmu.Options{FMI: major, Fault: "nan", After: 1}))
		a = step(t, c, 0, []float64{0}, out)
		if a.Result != BadOutput || a.Err != "the FMU's output throttle is NaN: not a usable control value" {
			t.Errorf("FMI %d NaN: %+v", major, a)
		}
		if a := step(t, c, 0.005, []float64{0}, out); a.Result != BadOutput {
			t.Errorf("FMI %d NaN, then: %+v", major, a)
		}
	}
}

// What stops the host from getting ready is the error Start returns.
func TestHostStartErrors(t *testing.T) {
	s := setup(t, testfmu.Options{})
	bad := s
	bad.Token = "{not the token}"
	if _, err := Start([]string{os.Args[0], "fmu-host"}, "", bad, 10*time.Second, nil); err == nil ||
		!strings.Contains(err.Error(), "fmi2Instantiate failed") {
		t.Errorf("%v", err)
	}
	bad = s
	bad.Library = "/no/such.so"
	if _, err := Start([]string{os.Args[0], "fmu-host"}, "", bad, 10*time.Second, nil); err == nil ||
		!strings.Contains(err.Error(), "loading /no/such.so") {
		t.Errorf("%v", err)
	}
	if _, err := Start([]string{"/no/such/program"}, "", s, time.Second, nil); err == nil ||
		!strings.Contains(err.Error(), "starting the FMU host") {
		t.Errorf("%v", err)
	}
}

// An FMU that prints to stdout while it is instantiated (a debugging
// printf) does not keep its host from getting ready: what it prints comes
// through as a line of its log.
func TestHostFMUPrintsWhenInstantiated(t *testing.T) {
	skipProcessFaults(t)
	c, log := start(t, setup(t, testfmu.Options{Fault: "print"}))
	out := make([]float64, 3)
	if a := step(t, c, 0, []float64{0}, out); a.Result != Stepped {
		t.Errorf("%+v", a)
	}
	c.Close()
	if !log.waitFor("cruise: instantiated (a debugging printf on stdout)") || !log.waitFor("cruise: step 1") {
		t.Errorf("what the FMU printed is not in the log:\n%s", log)
	}
}

// A host whose stdout carries something other than the protocol before it
// is ready: Start says what came instead of a frame, not that the host
// ended (it has not).
func TestHostNotSpeakingTheProtocol(t *testing.T) {
	_, err := Start([]string{os.Args[0], "fmu-host-banner"}, "", setup(t, testfmu.Options{}), 10*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), `is not a frame of its protocol: it wrote "Vendor FMU runtime 4.2`) {
		t.Errorf("%v", err)
	}
}

// A line of the host's stderr longer than the log takes (an FMU dumping
// its state) is cut, and said to be; the lines after it still come, and a
// crash after it is still reported as the crash.
func TestHostLongStderrLine(t *testing.T) {
	skipProcessFaults(t)
	c, log := start(t, setup(t, testfmu.Options{Fault: "longline", After: 2}))
	out := make([]float64, 3)
	step(t, c, 0, []float64{0}, out)
	c.Send(seqs.Add(1), 0.005, false, nil, nil, []float64{0})
	<-c.Done()
	if why := c.Why(); !strings.Contains(why, "SIGSEGV") {
		t.Errorf("the crash is reported as %q", why)
	}
	if !log.waitFor("(a line of 102401 bytes, cut to its first") {
		t.Errorf("the long line is not said to be cut:\n%.2000s", log)
	}
}

// skipProcessFaults skips a test of the test FMU's process faults (it
// prints, writes a long line, crashes): they are built for Unix only, and
// do nothing in a Windows build.
func skipProcessFaults(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test FMU's process faults are built for Unix only")
	}
}

// The protocol's decoders refuse what does not fit instead of reading past
// it, and never panic.
func FuzzDecodeStep(f *testing.F) {
	f.Add(encodeStep(1.5, []fmi.Var{{VR: 7, Kind: fmu.Float64}}, []float64{2}, []float64{3, 4}), 2)
	f.Add([]byte{1, 2, 3}, 1)
	f.Fuzz(func(t *testing.T, p []byte, nIn int) {
		if nIn < 0 || nIn > 64 {
			return
		}
		var s Step
		if err := decodeStep(p, nIn, &s); err == nil && len(s.Inputs) != nIn {
			t.Fatalf("%d inputs decoded, want %d", len(s.Inputs), nIn)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{'A', 3, 0, 0, 0, 1, 2, 3})
	f.Add([]byte{'A', 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		var head [5]byte
		typ, p, err := readFrame(bytes.NewReader(b), &head, nil)
		if err == nil && (len(p) != int(binary.LittleEndian.Uint32(b[1:])) || len(p) > len(b)-5 || typ != b[0]) {
			t.Fatalf("frame %q of %d bytes from %d", typ, len(p), len(b))
		}
		out := make([]float64, 2)
		var a Answer
		decodeAnswer(b, out, &a)
	})
}

func encodeStep(t float64, idx []fmi.Var, vals, in []float64) []byte {
	c := &Client{}
	var buf bytes.Buffer
	c.stdin = nopCloser{&buf}
	c.Send(seqs.Add(1), t, false, idx, vals, in)
	return buf.Bytes()[5:]
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

// Per-message cost of an FMU step in the child process: a request written
// to the host's stdin, the FMU stepped there, the answer read back.
// Reports the p50 and p99 round trip.
func BenchmarkStepChild(b *testing.B) {
	for _, tt := range []struct {
		name string
		h    Handoff
	}{{"shared memory", Handoff{}}, {"pipes", Handoff{Pipes: true}}} {
		b.Run(tt.name, func(b *testing.B) {
			c, _ := startWith(b, setup(b, testfmu.Options{FMI: 2}), tt.h)
			in, out := []float64{0}, make([]float64, 3)
			var a Answer
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				in[0] = float64(i % 30)
				t0 := time.Now()
				c.Send(seqs.Add(1), float64(i)*0.005, false, nil, nil, in)
				if !c.Wait(time.Now().Add(10*time.Second)) || !c.Take(out, &a) {
					b.Fatal("no answer")
				}
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(t0))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// idTime is message id's time at period, as the FMU gets it: one
// product, computed at run time (a constant expression would be exact).
func idTime(id, period float64) float64 { return id * period }
