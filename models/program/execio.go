package program

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"beamconnect/internal/lines"
	"beamconnect/models"
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
		// A request may wait already: made while the program before this
		// run ended, or for this run after a reset.
		m.reqMu.Lock()
		if !m.hasReq {
			m.reqMu.Unlock()
			select {
			case <-m.reqReady:
				continue
			case <-p.done:
				return
			case <-m.closing:
				return
			}
		}
		reset := m.pending.gen > p.gen.Load()
		if reset && !m.resetByLine(p) {
			// A reset this run cannot take: the request waits for the
			// next run, which the supervisor starts.
			m.reqMu.Unlock()
			m.askStartAgain()
			select {
			case <-p.done:
			case <-m.closing:
			}
			return
		}
		req := m.pending
		m.pending.buf = buf[:0]
		buf = req.buf
		m.hasReq = false
		m.reqMu.Unlock()
		if reset {
			w.WriteString(resetLineText)
			p.gen.Store(req.gen)
		}
		if h := m.header.Load(); h != header {
			header = h
			w.WriteString(*h)
		}
		now := time.Now().UnixNano()
		p.outstandingSeq.Store(req.seq)
		p.outstandingWidth.Store(int64(req.width))
		p.outstandingT.Store(math.Float64bits(req.t))
		p.outstandingPad.Store(int32(req.pad))
		p.outstandingUnique.Store(req.unique)
		p.outstandingAt.Store(now)
		m.unanswered.CompareAndSwap(0, m.clock())
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
	var scratch []byte                  // an echoed time's text
	lim := map[string]*models.Limiter{} // by kind of reason: each is reported at once the first time
	for {
		line, long, err := lr.Next()
		if err != nil {
			return // the program closed its stdout or ended; supervise reports it
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] == '#' {
			m.named(p, line)
			m.everSpoke.Store(true) // after its names, if it gave any
			continue
		}
		if len(line) == 0 {
			continue
		}
		m.everSpoke.Store(true)
		if m.superseded(p) {
			continue // a run ended for a reset: its last words are no one's
		}
		now := time.Now()
		// Its first line says the program has started: from here on the
		// model timeout applies, valid answers or not. (A run that is to
		// be started again for a reset has not had the reset: its lines
		// say nothing of the run to come.)
		first := !m.spoke.Load() && m.current(p) && p.gen.Load() >= m.resetGen.Load()
		if first {
			m.spoke.Store(true)
		}
		asked := p.outstandingAt.Load()
		echoed := line[0] == '@' && long == 0
		if echoed {
			var tok []byte
			tok, line = cutEcho(line)
			mine := false
			if asked != 0 {
				mine, scratch = echoes(tok, scratch, math.Float64frombits(p.outstandingT.Load()), int8(p.outstandingPad.Load()), p.outstandingUnique.Load())
			}
			if !mine {
				m.old.Add(1)
				m.otherRequest(lim, tok, p, asked != 0)
				continue
			}
		}
		if asked == 0 {
			m.extras.Add(1)
			m.discard(lim, "extra", "a line beyond one answer per request (no request is outstanding, and it does not echo one's time \"@t\"): a protocol fault; the message answered just before may have carried it", line)
			continue
		}
		p.outstandingAt.Store(0)
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
		m.pairingSaid.Do(func() { m.sayPairing(echoed) })
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

// otherRequest logs an answer that names another request than the one
// awaited (outstanding: there is one): dropped, counted as an old answer.
func (m *Exec) otherRequest(lims map[string]*models.Limiter, tok []byte, p *process, outstanding bool) {
	l := lims["other"]
	if l == nil {
		l = models.NewLimiter(time.Second)
		lims["other"] = l
	}
	n, ok := l.Allow(time.Now())
	if !ok {
		return
	}
	awaited := "none: its request was answered, or its step gave up on it"
	hint := ""
	if outstanding {
		t := math.Float64frombits(p.outstandingT.Load())
		awaited = "@" + string(appendTime(nil, t, int8(p.outstandingPad.Load())))
		if v, err := strconv.ParseFloat(string(tok), 64); err == nil && v == t {
			hint = "echo the request's first field as it is written: a time that repeats is written another way, and the text tells the requests apart"
		}
	}
	m.log.Info("model answer for another request dropped (model_old_answers)", "echo", "@"+string(tok), "awaited", awaited, "hint", hint, "since_last_report", n)
}

// sayPairing says once how the program's answers are paired with their
// requests: by their echo, or by their order.
func (m *Exec) sayPairing(echoed bool) {
	if echoed {
		m.log.Info("the model program echoes its requests' times: each answer is used for the request it names only")
		return
	}
	m.log.Info(`the model program answers without "@t": an answer is taken for the request outstanding when it comes, and a line beyond one answer per request is a fault; echo each request's time ("@t directive inputs…") to pair every answer with its own request`)
}

// superseded reports whether run p of the program was replaced by another.
func (m *Exec) superseded(p *process) bool {
	m.procMu.Lock()
	defer m.procMu.Unlock()
	return m.proc != p
}

// named takes a "# columns:" line of the program's (NamesProtocol), and
// its "# protocol:" line for run p (reset.go); any other comment is
// ignored.
func (m *Exec) named(p *process, line []byte) {
	if words, ok := bytes.CutPrefix(line, []byte("# protocol:")); ok {
		m.declareProtocol(p, words)
		return
	}
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
	for f := range bytes.FieldsSeq(line) {
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
