package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lmittmann/tint"
)

// wrapHandler keeps a terminal's log lines within its width, losing
// nothing: a record whose line would be longer keeps its message and short
// values on its line, and its longest string and error values (the
// longest first, until the line fits) go on lines of their own under it,
// indented and wrapped at the width:
//
//	Nov 27 23:37:55.921 ERR cannot bind the local address; retrying addr=127.0.0.1:64890 retry_in=250ms
//	    err: listen udp 127.0.0.1:64890: bind: address already in use
//	    hint: another program has 127.0.0.1:64890: a second beamconnect on this
//	      config, BeamNG's Simulink S-function or FMU, …
//
// It formats with tint, and writes each record in one write.
type wrapHandler struct {
	inner slog.Handler // tint, writing into sh.buf
	sh    *wrapShared
}

type wrapShared struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	w     io.Writer
	width int
}

// linePrefix is a line's time and level: "Nov 27 23:37:55.921 ERR ".
const linePrefix = 24

func newWrapHandler(w io.Writer, width int, o *tint.Options) slog.Handler {
	sh := &wrapShared{w: w, width: width}
	return wrapHandler{tint.NewTextHandler(&sh.buf, o), sh}
}

func (h wrapHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h wrapHandler) Handle(ctx context.Context, r slog.Record) error {
	type part struct {
		a     slog.Attr
		text  string // a string's or an error's text, "" otherwise
		n     int    // its runes as written: key=value
		below bool
	}
	var parts []part
	total := linePrefix + utf8.RuneCountInString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		p := part{a: a, text: text(a.Value)}
		v := p.text
		if v == "" {
			v = a.Value.String()
		} else if strings.ContainsAny(v, " \"=") {
			v += `""` // tint quotes it
		}
		p.n = 1 + len(a.Key) + 1 + utf8.RuneCountInString(v)
		total += p.n
		parts = append(parts, p)
		return true
	})
	order := make([]int, 0, len(parts))
	for i, p := range parts {
		if p.text != "" {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return parts[b].n - parts[a].n })
	for _, i := range order {
		if total <= h.sh.width {
			break
		}
		parts[i].below, total = true, total-parts[i].n
	}
	c := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	for _, p := range parts {
		if !p.below {
			c.AddAttrs(p.a)
		}
	}
	h.sh.mu.Lock()
	defer h.sh.mu.Unlock()
	h.sh.buf.Reset()
	if err := h.inner.Handle(ctx, c); err != nil {
		return err
	}
	for _, p := range parts {
		if p.below {
			wrapValue(&h.sh.buf, p.a.Key, p.text, h.sh.width)
		}
	}
	_, err := h.sh.w.Write(h.sh.buf.Bytes())
	return err
}

// wrapValue writes "    key: text" wrapped at width, its lines after the
// first indented a little more.
func wrapValue(b *bytes.Buffer, key, text string, width int) {
	const indent, more = "    ", "      "
	line := indent + key + ":"
	n := utf8.RuneCountInString(line)
	for _, w := range strings.Fields(text) {
		wn := utf8.RuneCountInString(w)
		if n+1+wn > width && n > len(more) {
			b.WriteString(line + "\n")
			line, n = more+w, len(more)+wn
			continue
		}
		line += " " + w
		n += 1 + wn
	}
	b.WriteString(line + "\n")
}

func (h wrapHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return wrapHandler{h.inner.WithAttrs(as), h.sh}
}

func (h wrapHandler) WithGroup(name string) slog.Handler {
	return wrapHandler{h.inner.WithGroup(name), h.sh}
}

// text is a value's text if it is a string or an error ("" otherwise:
// numbers and times are short).
func text(v slog.Value) string {
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
	}
	return ""
}
