package monitor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"beamconnect/config/configtest"
	"beamconnect/coupling"
	"beamconnect/internal/eventually"
	"beamconnect/internal/scope"
	"beamconnect/models/kinds"
)

// loggingServer serves the monitor of examples/logging.json (every slot
// BeamNG sends, mapped) at a 0.5 ms period after its scope ring has filled:
// the ring sized as run --http sizes it (500 samples a second for 130 s,
// at most 4 Mi values), holding samples with realistic digits.
func loggingServer(t testing.TB, tune func(*Server)) (*Server, string) {
	return loggingServerWith(t, tune, nil)
}

// loggingServerWith is loggingServer with the session's options adjusted.
func loggingServerWith(t testing.TB, tune func(*Server), opts func(*coupling.Options)) (*Server, string) {
	t.Helper()
	src, err := os.ReadFile("../examples/logging.json")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/logging.json"
	src = bytes.Replace(src, []byte(`"updatePeriodMs": 5`), []byte(`"updatePeriodMs": 0.5`), 1)
	src = bytes.Replace(src, []byte(`"$schema": "../schemas/config.schema.json",`), nil, 1)
	os.WriteFile(path, src, 0o644)
	plan := configtest.Plan(t, path)
	cols := coupling.ScopeColumns(plan, nil)
	capacity := min(500*130, (4<<20)/len(cols))
	ring := scope.New(cols, capacity, 1)
	row := make([]float64, len(cols))
	for i := range capacity + 1000 {
		for c := range row {
			row[c] = float64(i)*0.0123457 + float64(c)*1.234567
		}
		ring.Push(float64(i)*0.002, [][]float64{row})
	}
	m, err := kinds.New(plan.Model, plan.ModelParams, plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := coupling.Options{Plan: plan, Model: m, Local: loopback, Scope: ring}
	if opts != nil {
		opts(&o)
	}
	sess, err := coupling.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Plan: plan, Session: sess, Ring: ring, Config: src})
	if tune != nil {
		tune(srv)
	}
	return srv, serve(t, srv)
}

// serve serves srv on a loopback port until the test ends.
func serve(t testing.TB, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

// joinLate opens /events and reads its backlog: the layout, then the
// samples the ring held, streamed through (a browser keeps them; the test
// only checks their span). It returns the open stream, or the refusal.
func joinLate(url string) (resp *http.Response, first float64, err error) {
	resp, err = http.Get(url + "/events")
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, 0, err
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		samples := bytes.HasPrefix(line, []byte(`data: {"g":`))
		if samples {
			// The times come first: {"g":1,"t":[first,…,last],"v":…
			if i := bytes.Index(line, []byte(`"t":[`)); i > 0 {
				json.Unmarshal(line[i+5:i+5+bytes.IndexAny(line[i+5:], ",]")], &first)
			}
		}
		for err == bufio.ErrBufferFull { // the rest of a long line
			_, err = r.ReadSlice('\n')
		}
		if err != nil || samples {
			return resp, first, err
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// 25 browsers opening the page together after the scope
// ring filled (every slot mapped, 0.5 ms) share one encoded backlog; the
// memory they cost stays bounded while they are connected and is given
// back when they leave. Before, each copied the whole ring and encoded its
// own backlog: 25 clients took 1.9 GB and kept it.
func TestLateClientsShareTheBacklog(t *testing.T) {
	srv, url := loggingServer(t, func(s *Server) { s.limits.streams = 25 })
	before := heapInUse()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var streams []*http.Response
	var firsts []float64
	for range 25 {
		wg.Go(func() {
			resp, first, err := joinLate(url)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("joining: %v %v", err, resp.Status)
				return
			}
			streams = append(streams, resp)
			firsts = append(firsts, first)
		})
	}
	wg.Wait()
	with := heapInUse()
	for _, s := range streams {
		s.Body.Close()
	}
	t.Logf("heap: %.1f MiB before, %.1f MiB with 25 late clients connected", float64(before)/(1<<20), float64(with)/(1<<20))
	if grew := int64(with) - int64(before); grew > 48<<20 {
		t.Errorf("25 late clients took %.0f MiB of heap; want a shared backlog (< 48 MiB)", float64(grew)/(1<<20))
	}
	// Each got the whole window the ring holds: its oldest sample first
	// (1000 of them were lapped).
	oldest := float64(1000) * 0.002
	for _, f := range firsts {
		if f < oldest || f > oldest+0.1 {
			t.Errorf("a backlog starts at %g s; the ring's oldest sample is at %g s", f, oldest)
		}
	}
	eventually.Must(t, time.Minute, "the streams to end", func() bool { return srv.streams.open.Load() == 0 })
	if after := heapInUse(); int64(after)-int64(before) > 16<<20 {
		t.Errorf("%.0f MiB still held after the clients left", float64(int64(after)-int64(before))/(1<<20))
	}
}

// At most 16 streams are served at once; the 17th browser tab is told
// why, and is served once a tab closes.
func TestStreamLimit(t *testing.T) {
	srv, url := loggingServer(t, nil)
	var open []*http.Response
	for range 16 {
		resp, _, err := joinLate(url)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %v %v", len(open)+1, err, resp.Status)
		}
		open = append(open, resp)
	}
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	client := http.Client{Timeout: 5 * time.Second} // a stream served would never end
	resp, err := client.Get(url + "/events")
	if err != nil {
		t.Fatalf("the 17th stream: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "has 16 viewers already") {
		t.Fatalf("the 17th stream: %s %.200q", resp.Status, body)
	}
	m := get(t, url+"/metrics")
	for _, want := range []string{"beamconnect_live_page_streams 16\n", "beamconnect_live_page_streams_refused_total 1\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	open[0].Body.Close()
	open = open[1:]
	eventually.Must(t, time.Minute, "a stream to end", func() bool { return srv.streams.open.Load() == 15 })
	resp, _, err = joinLate(url)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after a tab closed: %v %v", err, resp.Status)
	}
	open = append(open, resp)
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	return err == nil // EOF: closed; a timeout is an error
}

// A connection that sends no request, and a keep-alive connection left
// idle after its response, are closed; a stream outlives the request
// timeouts.
func TestIdleConnectionsClosed(t *testing.T) {
	srv, url := loggingServer(t, func(s *Server) {
		s.limits.header, s.limits.read, s.limits.idle = 200*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond
	})
	addr := strings.TrimPrefix(url, "http://")
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /api/state HTTP/1.1\r\nHost: localhost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", err, resp)
	}
	if !closedWithin(silent, 5*time.Second) {
		t.Error("a connection that never sent a request is still open")
	}
	if !closedWithin(idle, 5*time.Second) {
		t.Error("an idle keep-alive connection is still open")
	}
	// The stream is not a request being read: it lasts.
	stream, _, err := joinLate(url)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a new state, so an event, every 50 ms
		for ctx.Err() == nil {
			srv.sample(time.Now())
			time.Sleep(50 * time.Millisecond) // the run's pace: a state every 50 ms
		}
	}()
	r := bufio.NewReader(stream.Body)
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatalf("the stream ended after the request timeouts: %v", err)
		}
	}
}

// At most limits.conns connections are held open at once, however many
// come: a flood of idle connections takes no more file descriptors than
// that, and a request waiting behind them is served once one closes.
func TestConnectionLimit(t *testing.T) {
	srv, url := loggingServer(t, func(s *Server) { s.limits.conns, s.limits.header = 4, time.Minute })
	addr := strings.TrimPrefix(url, "http://")
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for range 200 {
		c, err := net.Dial("tcp", addr) // the kernel's queue takes them
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	eventually.Must(t, time.Minute, "the first connections to be accepted", func() bool { return srv.listener.Load().open() == 4 })
	if peak := srv.listener.Load().peak.Load(); peak > 4 {
		t.Errorf("%d connections held open at once, want at most 4", peak)
	}
	// A request behind the flood is served as the flood goes.
	served := make(chan error, 1)
	go func() {
		resp, err := http.Get(url + "/api/state")
		if err == nil {
			resp.Body.Close()
		}
		served <- err
	}()
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	select {
	case err := <-served:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a request behind closed idle connections was not served")
	}
	if peak := srv.listener.Load().peak.Load(); peak > 4 {
		t.Errorf("%d connections held open at once, want at most 4", peak)
	}
}
