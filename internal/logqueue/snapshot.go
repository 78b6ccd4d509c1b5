package logqueue

import (
	"bytes"
	"encoding"
	"fmt"
	"log/slog"
	"reflect"
)

// snapshotRecord returns a copy of r that shares nothing the caller may
// change after the log call returns. Most records hold only strings,
// numbers, durations, times and errors, and are copied as they are.
func snapshotRecord(r slog.Record) slog.Record {
	stable := true
	r.Attrs(func(a slog.Attr) bool {
		stable = isStable(a.Value)
		return stable
	})
	if stable {
		return r.Clone()
	}
	c := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		c.AddAttrs(slog.Attr{Key: a.Key, Value: snapshot(a.Value)})
		return true
	})
	return c
}

func snapshotAttrs(as []slog.Attr) []slog.Attr {
	c := make([]slog.Attr, len(as))
	for i, a := range as {
		c[i] = slog.Attr{Key: a.Key, Value: snapshot(a.Value)}
	}
	return c
}

// isStable reports whether v can be written later exactly as it is now:
// a value slog holds itself, an error (errors are values by convention),
// or a plain value copied into the interface.
func isStable(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindLogValuer, slog.KindGroup:
		return false
	case slog.KindAny:
		switch x := v.Any().(type) {
		case nil, error:
			return true
		default:
			switch reflect.TypeOf(x).Kind() {
			case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
				reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
				return true
			}
			return false
		}
	}
	return true
}

// snapshot resolves v now: a LogValuer is asked for its value, a group is
// copied, a byte slice is copied, and any other value that may refer to
// memory the caller still owns (a slice, a map, a pointer, a struct) is
// rendered to text the way a text handler prints it (MarshalText, or
// %+v). A LogValuer is resolved here, so tint's coloured attributes
// (tint.Err, tint.Attr) lose their colour behind the queue.
func snapshot(v slog.Value) slog.Value {
	if isStable(v) {
		return v
	}
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		return slog.GroupValue(snapshotAttrs(v.Group())...)
	case slog.KindAny:
		if isStable(v) {
			return v
		}
		if b, ok := v.Any().([]byte); ok {
			return slog.AnyValue(bytes.Clone(b))
		}
		return slog.StringValue(render(v.Any()))
	}
	return v
}

// render prints x as slog's and tint's text handlers do.
func render(x any) (s string) {
	if m, ok := x.(encoding.TextMarshaler); ok {
		defer func() {
			if r := recover(); r != nil { // a nil pointer behind the interface
				s = fmt.Sprintf("%+v", x)
			}
		}()
		if b, err := m.MarshalText(); err == nil {
			return string(b)
		}
	}
	return fmt.Sprintf("%+v", x)
}
