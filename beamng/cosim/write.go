package cosim

import (
	"strconv"
	"strings"
)

// quote writes a field as BeamNG's csvlib does: quoted only when it starts
// with a byte ≤ 0x20, a comma or a quote, or holds a comma, quote, CR or LF.
func quote(s string) string {
	if s == "" {
		return s
	}
	if s[0] > 0x20 && s[0] != ',' && s[0] != '"' && !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// Encode writes the CSV as BeamNG's editor does: the header, every signalTo
// row, every signalFrom row (per signal value, multiply, add, freeze), the
// vehicle, connection and sensors rows; comma separated, LF line ends, no
// final newline. The computation time is written as TimeText when set.
func (f *File) Encode(timeText string) []byte {
	var b strings.Builder
	line := func(cols ...string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		for len(cols) < len(Header) {
			cols = append(cols, "")
		}
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(c))
		}
	}
	line(Header...)
	for _, r := range f.To {
		line("signalTo", r.Group, r.Name, "", orString(r.Type, "number"), r.Desc)
	}
	for _, r := range f.From {
		typ := "number"
		if r.Value == "freeze" {
			typ = "boolean"
		}
		line("signalFrom", r.Group, r.Name, r.Value, orString(r.Type, typ), r.Desc)
	}
	for _, r := range f.Vehicle {
		line("vehicle", r.Group, r.Name, r.Value, r.Type, r.Desc)
	}
	if timeText == "" {
		timeText = LuaText(f.Time.Value)
	}
	line("connection", "", "3rd Party Computation Time", timeText, "number")
	line("connection", "", "Ping Time", LuaText(f.Ping.Value), "number")
	for _, a := range []struct {
		group string
		addr  string
		port  uint16
	}{{"otherUDP", f.Other.Addr().String(), f.Other.Port()}, {"beamngUDP", f.BeamNG.Addr().String(), f.BeamNG.Port()}} {
		line("connection", a.group, "IP", a.addr, "string")
		line("connection", a.group, "port", strconv.Itoa(int(a.port)), "number")
	}
	for _, r := range f.Sensors {
		line("sensors", r.Group, r.Name, r.Value, r.Type, r.Desc)
	}
	return []byte(b.String())
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// SortFrom puts signalFrom rows in the editor's order: signals in the order
// of their first row, each signal's rows as value, multiply, add, freeze.
func SortFrom(rows []Row) []Row {
	var order []string
	byKey := map[string][]Row{}
	for _, r := range rows {
		k := r.Group + "\x00" + r.Name
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], r)
	}
	out := make([]Row, 0, len(rows))
	for _, k := range order {
		for _, kind := range Kinds {
			for _, r := range byKey[k] {
				if r.Value == kind {
					out = append(out, r)
				}
			}
		}
	}
	return out
}
