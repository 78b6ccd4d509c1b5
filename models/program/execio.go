package program

import (
	"beamconnect/internal/lines"
	"beamconnect/models"
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The exec model's line protocol: the writer of requests, the reader of
// answers, and what is made of a line that is not an answer.

// write feeds the program one request at a time: the newest, once the
// previous one was answered. A program that never answers keeps its one
// request and is reported hung; nothing queues behind it.
func (m *Exec) write(p *process) {
	w := bufio.NewWriter(p.stdin)
	header := m.header.Load()
	w.WriteString(*header)
	if w.Flush() != nil {
		return
	}
	buf := make([]byte, 0, 4096)
	for {
		select {
		case <-m.reqReady:
		case <-p.done:
			return
		case <-m.closing:
			return
		}
		m.reqMu.Lock()
		if !m.hasReq {
			m.reqMu.Unlock()
			continue
		}
		req := m.pending
		m.pending.buf = buf[:0]
		buf = req.buf
		m.hasReq = false
		m.reqMu.Unlock()
		if h := m.header.Load(); h != header {
			header = h
			w.WriteString(*h)
		}
		now := time.Now().UnixNano()
		p.outstandingSeq.Store(req.seq)
		p.outstandingWidth.Store(int64(req.width))
		p.outstandingAt.Store(now)
		m.unanswered.CompareAndSwap(0, now)
		w.Write(buf)
		if w.Flush() != nil {
			return // the program is gone; supervise reports it
		}
		select {
		case <-p.answeredReq:
		case <-p.done:
			return
		case <-m.closing:
			return
		}
	}
}

// read parses the program's answers, checks each against the outstanding
// request, and hands valid ones to Step.
func (m *Exec) read(p *process) {
	lr := lines.NewReader(bufio.NewReaderSize(p.stdout, 64<<10), maxAnswerLine)
	vals := make([]float64, 0, 64)
	lim := map[string]*models.Limiter{} // by kind of reason: each is reported at once the first time
	for {
		line, long, err := lr.Next()
		if err != nil {
			return // the program closed its stdout or ended; supervise reports it
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] == '#' {
			m.named(line)
			m.everSpoke.Store(true) // after its names, if it gave any
			continue
		}
		if len(line) > 0 {
			m.everSpoke.Store(true)
		}
		if len(line) == 0 {
			continue
		}
		now := time.Now()
		// Its first line says the program has started: from here on the
		// model timeout applies, valid answers or not.
		first := !m.spoke.Load() && m.current(p)
		if first {
			m.spoke.Store(true)
		}
		asked := p.outstandingAt.Swap(0)
		if asked == 0 {
			m.discard(lim, "unsolicited", "no request is outstanding: the program answered more lines than it was sent", line)
			continue
		}
		seq, width := p.outstandingSeq.Load(), int(p.outstandingWidth.Load())
		var kind, reason string
		if long > 0 {
			// An answer it is, only not a usable one: the program gets its
			// next request.
			kind, reason = "long", fmt.Sprintf("a line of %d bytes, longer than the %d an answer may have", long, maxAnswerLine)
		} else {
			extra := 0
			if d := m.declared.Load(); d != nil {
				extra = d.extra
			}
			vals, kind, reason = parse(line, vals[:0], width, extra)
		}
		limit := m.timeout
		if first {
			limit = startGrace // the first answer: an interpreter may still be starting
		}
		if kind == "" && now.UnixNano()-asked > int64(limit) {
			kind, reason = "late", fmt.Sprintf("late: it came %v after its request, more than the model timeout %v", time.Duration(now.UnixNano()-asked).Round(time.Millisecond), limit)
		}
		if kind != "" {
			m.discard(lim, kind, reason, line)
			p.next()
			continue
		}
		age := now.UnixNano() - asked
		for !first { // a first answer's age is the program's start-up
			old := m.maxAge.Load()
			if age <= old || m.maxAge.CompareAndSwap(old, age) {
				break
			}
		}
		m.ansMu.Lock()
		m.answer = append(m.answer[:0], vals...)
		m.ansSeq = seq
		m.hasAns = true
		m.ansMu.Unlock()
		if !m.current(p) {
			continue // the last words of a program that has ended
		}
		// The hang clock stops before the next request is written (p.next),
		// whose writing starts it again: the other way round, the writer
		// could start it for the next request and this wipe it, and a
		// program that then stopped answering was never found hung (under
		// Wine, where waking the writer lets it run first, TestExecHung).
		m.unanswered.Store(0)
		p.next()
		m.startedOnce.Do(func() { close(m.started) })
		if !m.answered.Swap(true) && m.dead.Load() != nil {
			m.log.Info("model program answering again after its restart", "command", strings.Join(m.argv, " "))
		}
		m.dead.Store(nil)
		select {
		case m.ansReady <- struct{}{}:
		default:
		}
	}
}

// named takes a "# columns:" line of the program's (NamesProtocol); any
// other comment is ignored.
func (m *Exec) named(line []byte) {
	d, msg := declare(string(line), int(m.width.Load()))
	if msg != "" {
		m.log.Warn("model program", "problem", msg)
	}
	if d == nil {
		return
	}
	if cur := m.declared.Load(); cur != nil && cur.text == d.text {
		return // named again after a restart: the same names
	}
	m.declared.Store(d)
	m.log.Info("the model program names its answers' values", "names", strings.Join(d.names, " "), "appended", d.extra)
}

// current reports whether p is the running program.
func (m *Exec) current(p *process) bool {
	select {
	case <-p.done:
		return false
	default:
	}
	m.procMu.Lock()
	defer m.procMu.Unlock()
	return m.proc == p
}

// parse reads one answer line of want numbers into vals, or says why it
// is unusable: the kind of reason, and the reason. "keep" is models.Keep;
// a number that is not finite is read as it is, for the coupling to judge
// (a fault).
func parse(line []byte, vals []float64, width, extra int) ([]float64, string, string) {
	want := width + extra
	for _, f := range bytes.Fields(line) {
		if string(f) == "keep" {
			vals = append(vals, models.Keep)
			continue
		}
		v, err := strconv.ParseFloat(string(f), 64)
		if err != nil {
			return vals, "number", fmt.Sprintf("%q is not a number (nor \"keep\")", f)
		}
		vals = append(vals, v)
	}
	if len(vals) != want {
		what := "the directive, then every input port element"
		if extra > 0 {
			what += fmt.Sprintf(", then the %d values its \"# columns:\" line names", extra)
		}
		return vals, "count", fmt.Sprintf("%d numbers, expected %d (%s)", len(vals), want, what)
	}
	return vals, "", ""
}

// discard counts an unusable answer and logs it: each kind of reason at
// once the first time, then at most once a second with how many more of
// that kind there were.
func (m *Exec) discard(lims map[string]*models.Limiter, kind, reason string, line []byte) {
	m.bad.Add(1)
	l := lims[kind]
	if l == nil {
		l = models.NewLimiter(time.Second)
		lims[kind] = l
	}
	if n, ok := l.Allow(time.Now()); ok {
		if len(line) > 120 {
			line = append(line[:117:117], "..."...)
		}
		m.log.Warn("model answer discarded", "reason", reason, "answer", string(line), "discarded_since_last_report", n)
	}
}

// next lets the writer send the program its next request: the one
// outstanding was answered.
func (p *process) next() {
	select {
	case p.answeredReq <- struct{}{}:
	default:
	}
}
