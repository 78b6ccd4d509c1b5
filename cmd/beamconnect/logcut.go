package main

import (
	"context"
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// cutHandler keeps a terminal's log lines short: a string or error value
// longer than max runes is cut, saying how much was left out. The full
// text is there with --log-level debug, whose records are never cut (and
// in --json, for what a summary carries). It wraps the handler that
// writes.
type cutHandler struct {
	slog.Handler
	max int
}

func (h cutHandler) Handle(ctx context.Context, r slog.Record) error {
	long := false
	r.Attrs(func(a slog.Attr) bool {
		long = len(text(a.Value)) > h.max // bytes ≥ runes: a cheap first look
		return !long
	})
	if !long {
		return h.Handler.Handle(ctx, r)
	}
	c := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if s := text(a.Value); utf8.RuneCountInString(s) > h.max {
			a.Value = slog.StringValue(cut(s, h.max))
		}
		c.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, c)
}

func (h cutHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return cutHandler{h.Handler.WithAttrs(as), h.max}
}

func (h cutHandler) WithGroup(name string) slog.Handler {
	return cutHandler{h.Handler.WithGroup(name), h.max}
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

// cut shortens s to max runes, saying how many were left out.
func cut(s string, max int) string {
	r := []rune(s)
	note := fmt.Sprintf("… (%d more characters: --log-level debug shows all)", len(r)-max)
	return string(r[:max]) + note
}
