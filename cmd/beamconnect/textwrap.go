package main

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// wrapText breaks text into lines of at most width columns at spaces,
// the first line starting with first, the others with indent; a word
// longer than a line is kept whole, and a number keeps its unit on its
// line ("0.4 m/s", "0.6 %"). The result ends in a newline.
func wrapText(text string, width int, first, indent string) string {
	var b strings.Builder
	col := 0
	for i, word := range glueUnits(strings.Fields(text)) {
		w := utf8.RuneCountInString(word)
		switch {
		case i == 0:
			b.WriteString(first)
			col = utf8.RuneCountInString(first)
		case col+1+w > width:
			b.WriteString("\n" + indent)
			col = utf8.RuneCountInString(indent)
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += w
	}
	b.WriteByte('\n')
	return b.String()
}

// units a number keeps on its line.
var units = map[string]bool{"%": true, "s": true, "ms": true, "µs": true, "m/s": true, "m": true, "deg": true,
	"rad": true, "rad/s": true, "1/min": true, "N·m": true, "km/h": true}

// glueUnits joins each number to the unit after it.
func glueUnits(words []string) []string {
	out := words[:0:0]
	for i := 0; i < len(words); i++ {
		w := words[i]
		if i+1 < len(words) {
			_, err := strconv.ParseFloat(strings.TrimLeft(w, "(±~"), 64)
			if unit := strings.TrimRight(words[i+1], ".,;:)"); err == nil && units[unit] {
				w += " " + words[i+1]
				i++
			}
		}
		out = append(out, w)
	}
	return out
}
