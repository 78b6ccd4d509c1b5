package xsd

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"beamconnect/internal/suggest"
)

// builtin is one of XML Schema's built-in simple types the SSP schemas
// use; another name is taken as a string.
func builtin(name string) *simpleType {
	return &simpleType{name: name, builtin: name, minLen: -1}
}

// The lexical forms of the built-in types, after white space is collapsed.
var (
	reDouble   = regexp.MustCompile(`^(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|-?INF|NaN)$`)
	reInteger  = regexp.MustCompile(`^[+-]?[0-9]+$`)
	reDateTime = regexp.MustCompile(`^-?[0-9]{4,}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]((0[0-9]|1[0-3]):[0-5][0-9]|14:00))?$`)
	reNCName   = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_.\-\x{B7}\x{300}-\x{36F}\x{203F}-\x{2040}]*$`)
)

// integer ranges of the built-in integer types.
var intRanges = map[string][2]string{
	"long":          {"-9223372036854775808", "9223372036854775807"},
	"int":           {"-2147483648", "2147483647"},
	"short":         {"-32768", "32767"},
	"byte":          {"-128", "127"},
	"unsignedLong":  {"0", "18446744073709551615"},
	"unsignedInt":   {"0", "4294967295"},
	"unsignedShort": {"0", "65535"},
	"unsignedByte":  {"0", "255"},
	"integer":       {"", ""},
}

// whitespace applies the type's white space rule: strings keep theirs,
// normalized strings have tabs and line breaks made spaces, everything
// else is collapsed.
func (t *simpleType) whitespace(v string) string {
	switch t.builtin {
	case "string":
		return v
	case "normalizedString":
		return strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, v)
	}
	return strings.Join(strings.Fields(v), " ")
}

// check says why v is not a value of t, "" when it is.
func (t *simpleType) check(v string) string {
	if t.list != nil {
		for _, item := range strings.Fields(v) {
			if msg := t.list.check(item); msg != "" {
				return fmt.Sprintf("%q in the list: %s", item, msg)
			}
		}
		return ""
	}
	v = t.whitespace(v)
	if t.base != nil {
		if msg := t.base.check(v); msg != "" {
			return msg
		}
		return t.facets(v)
	}
	return lexical(t.builtin, v)
}

// facets checks a restriction's own facets.
func (t *simpleType) facets(v string) string {
	if len(t.enum) > 0 && !slices.Contains(t.enum, v) {
		msg := fmt.Sprintf("%q is none of %s", v, strings.Join(t.enum, ", "))
		if s := suggest.Closest(v, t.enum); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return msg
	}
	if len(t.patterns) > 0 {
		ok := false
		for _, re := range t.patterns {
			ok = ok || re.MatchString(v)
		}
		if !ok {
			var alts []string
			for _, re := range t.patterns {
				alts = append(alts, strings.TrimSuffix(strings.TrimPrefix(re.String(), "^(?:"), ")$"))
			}
			return fmt.Sprintf("%q does not match %s", v, strings.Join(alts, " or "))
		}
	}
	if t.minLen >= 0 && len([]rune(v)) < t.minLen {
		if t.minLen == 1 {
			return "expected at least one character"
		}
		return fmt.Sprintf("expected at least %d characters", t.minLen)
	}
	if t.minIncl != "" || t.maxIncl != "" {
		x, ok := new(big.Int).SetString(strings.TrimPrefix(v, "+"), 10)
		if !ok {
			return fmt.Sprintf("%q is not a whole number", v)
		}
		if lo, ok := new(big.Int).SetString(t.minIncl, 10); ok && x.Cmp(lo) < 0 {
			return fmt.Sprintf("%s is below %s", v, t.minIncl)
		}
		if hi, ok := new(big.Int).SetString(t.maxIncl, 10); ok && x.Cmp(hi) > 0 {
			return fmt.Sprintf("%s is above %s", v, t.maxIncl)
		}
	}
	return ""
}

// lexical says why v is not a value of the built-in type name.
func lexical(name, v string) string {
	switch name {
	case "double", "float":
		if !reDouble.MatchString(v) {
			return fmt.Sprintf("%q is not a number (xs:%s)", v, name)
		}
	case "boolean":
		switch v {
		case "true", "false", "1", "0":
		default:
			return fmt.Sprintf("%q is not true, false, 1 or 0 (xs:boolean)", v)
		}
	case "dateTime":
		if !reDateTime.MatchString(v) {
			return fmt.Sprintf("%q is not a date and time such as 2024-05-17T09:30:00Z (xs:dateTime)", v)
		}
	case "hexBinary":
		if _, err := hex.DecodeString(v); err != nil {
			return fmt.Sprintf("%q is not hexadecimal bytes (xs:hexBinary)", v)
		}
	case "ID", "NCName":
		if !reNCName.MatchString(v) {
			return fmt.Sprintf("%q is not a name: expected a letter or _ first, then letters, digits, _, - or . (xs:%s)", v, name)
		}
	default:
		r, ok := intRanges[name]
		if !ok {
			return "" // string, normalizedString, anyURI: anything
		}
		if !reInteger.MatchString(v) {
			return fmt.Sprintf("%q is not a whole number (xs:%s)", v, name)
		}
		x, _ := new(big.Int).SetString(strings.TrimPrefix(v, "+"), 10)
		lo, _ := new(big.Int).SetString(r[0], 10)
		hi, _ := new(big.Int).SetString(r[1], 10)
		if lo != nil && (x.Cmp(lo) < 0 || x.Cmp(hi) > 0) {
			return fmt.Sprintf("%s is beyond xs:%s (%s to %s)", v, name, r[0], r[1])
		}
	}
	return ""
}
