// Package monitor serves a running coupling over HTTP: a web page with the
// connection status and its history, the rates and turnaround, a live scope
// of every port, the config in use and each reload; /metrics in
// Prometheus' text format. It only reads: there is no endpoint that changes
// anything.
//
// Nothing here is on the coupling's per-message path. The page's data
// comes from a scope.Ring the loop fills without blocking, and from the
// coupling's atomic counters, which a sampler reads four times a second.
package monitor

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"beamconnect/coupling"
	"beamconnect/internal/scope"
	"beamconnect/ports"
)

//go:embed web
var webFS embed.FS

// Options set up a Server.
type Options struct {
	Plan    *ports.Plan
	Session *coupling.Session
	Ring    *scope.Ring
	// Config is the config file's text as the run started with it.
	Config []byte
	Log    *slog.Logger
	// Hosts are further names the page answers to (run --http-host), as
	// a Host header says them: rig-pc.lab or rig-pc.lab:8080. It always
	// answers to the addresses it is bound to and this machine's, and to
	// localhost.
	Hosts []string
}

// Server is the monitor of one run.
type Server struct {
	opt   Options
	start time.Time
	log   *slog.Logger

	sampleMu sync.Mutex // one sample at a time: rates are its state
	ended    atomic.Bool

	mu      sync.Mutex
	config  []byte
	history []change // status changes, oldest dropped past maxHistory
	events  []event  // reloads applied and refused, oldest dropped past maxEvents
	state   []byte   // the latest state, as JSON
	seq     int64    // counts states published
	rates   []rate

	limits    limits
	hosts     *hostCheck                    // the names requests may come to
	streams   gate                          // /events streams open and refused
	listener  atomic.Pointer[limitListener] // while serving
	backlogMu sync.Mutex                    // one backlog encoded at a time
	backlog   *backlog                      // the latest, shared by joining streams
}

type change struct {
	At      float64 `json:"at_s"`
	Vehicle string  `json:"vehicle"`
	Status  int     `json:"status"`
	Text    string  `json:"status_text"`
}

type event struct {
	At    float64  `json:"at_s"`
	Kind  string   `json:"kind"` // "reload" or "refused"
	Lines []string `json:"lines"`
}

type rate struct {
	n  int64
	at time.Time
	v  float64
}

const (
	maxHistory  = 500
	maxEvents   = 100
	sampleEvery = 250 * time.Millisecond
	// endGrace is how long the streams go on after the run ended, so each
	// sends its page the last state (they send every 50 ms).
	endGrace = 300 * time.Millisecond
)

// New makes the monitor of a run. Call its Serve to serve it.
func New(o Options) *Server {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opt: o, start: time.Now(), log: log, config: o.Config, limits: defaultLimits, hosts: newHostCheck(o.Hosts)}
	s.rates = make([]rate, len(o.Session.Links()))
	for i, l := range o.Session.Links() {
		s.StatusChanged(i, l.Status()) // where each starts
	}
	s.sample(s.start)
	return s
}

// StatusChanged records a change of a vehicle's status (coupling
// Options.OnStatus). Status changes are rare; this takes a lock.
func (s *Server) StatusChanged(vehicle int, st ports.Status) {
	name := ""
	if vehicle < len(s.opt.Plan.Vehicles) {
		name = s.opt.Plan.Vehicles[vehicle].Name
	}
	s.mu.Lock()
	s.history = appendCapped(s.history, change{At: time.Since(s.start).Seconds(), Vehicle: name, Status: int(st), Text: st.String()}, maxHistory)
	s.mu.Unlock()
}

// Reloaded records an applied reload: what changed, and the config's new
// text.
func (s *Server) Reloaded(changes []string, config []byte) {
	s.mu.Lock()
	s.config = config
	s.events = appendCapped(s.events, event{At: time.Since(s.start).Seconds(), Kind: "reload", Lines: changes}, maxEvents)
	s.mu.Unlock()
}

// Refused records a refused reload, with why (file:line:col for a bad
// file).
func (s *Server) Refused(why []string) {
	s.mu.Lock()
	s.events = appendCapped(s.events, event{At: time.Since(s.start).Seconds(), Kind: "refused", Lines: why}, maxEvents)
	s.mu.Unlock()
}

func appendCapped[T any](list []T, v T, limit int) []T {
	if len(list) >= limit {
		list = append(list[:0], list[len(list)-limit+1:]...)
	}
	return append(list, v)
}

// Handler serves the page, its assets, the event stream, the state, the
// config and the metrics. Only GET and HEAD are answered.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /events", s.serveEvents)
	mux.HandleFunc("GET /api/state", s.serveState)
	mux.HandleFunc("GET /api/config", s.serveConfig)
	mux.HandleFunc("GET /api/layout", s.serveLayout)
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.allowed(r.Host) {
			// A name that is not this machine's: DNS rebinding, a page of
			// another site that made its name point here, must not read
			// the config.
			http.Error(w, s.hosts.refusal(r.Host), http.StatusForbidden)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'")
		mux.ServeHTTP(w, r)
	})
}

// Listen binds addr for the monitor. An address without a host binds
// loopback only (":8080" is 127.0.0.1:8080): serving other machines must
// be asked for by name (0.0.0.0:8080).
func Listen(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%q: expected HOST:PORT, e.g. 127.0.0.1:8080", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("cannot serve the live page: %w", err)
	}
	return ln, nil
}

// Serve serves on ln until ctx ends, sampling the coupling's counters
// meanwhile. It holds at most a fixed number of connections open at once
// and closes idle ones, so visitors cannot take the file descriptors the
// coupling needs. When ctx ends, the run is over: a last state says so, the
// event streams have endGrace to send it to every page, then the server
// stops.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ll := newLimitListener(ln, s.limits.conns)
	s.listener.Store(ll)
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		s.hosts.add(a.IP.String())
	}
	// The requests' context: the streams outlive ctx by endGrace.
	streams, stopStreams := context.WithCancel(context.Background())
	defer stopStreams()
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.limits.header,
		ReadTimeout:       s.limits.read,
		WriteTimeout:      s.limits.write,
		IdleTimeout:       s.limits.idle,
		MaxHeaderBytes:    64 << 10, // a browser's GET, cookies and all
		BaseContext:       func(net.Listener) context.Context { return streams },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn), // not straight to stderr
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				s.End(time.Now())
				grace := time.NewTimer(endGrace)
				<-grace.C
				stopStreams()
				shut, cancel := context.WithTimeout(context.Background(), time.Second)
				srv.Shutdown(shut)
				cancel()
				return
			case now := <-t.C:
				s.sample(now)
			}
		}
	}()
	err := srv.Serve(ll)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// End publishes the run's last state, marked ended.
func (s *Server) End(now time.Time) {
	s.ended.Store(true)
	s.sample(now)
}

func (s *Server) serveConfig(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body := struct {
		Path   string  `json:"path"`
		Text   string  `json:"text"`
		Events []event `json:"events"`
	}{s.opt.Plan.Source, string(s.config), s.events}
	b, err := json.Marshal(body)
	s.mu.Unlock()
	writeJSON(w, b, err)
}

func (s *Server) serveLayout(w http.ResponseWriter, r *http.Request) {
	b, err := json.Marshal(s.opt.Ring.Layout())
	writeJSON(w, b, err)
}

func (s *Server) serveState(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b := s.state
	s.mu.Unlock()
	writeJSON(w, b, nil)
}

func writeJSON(w http.ResponseWriter, b []byte, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}
