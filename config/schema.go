package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"beamconnect/internal/suggest"
	"beamconnect/schemas"
)

// validateSchema checks doc against the embedded schema and turns each leaf
// failure into a positioned diagnostic that says what was expected.
func (p *parser) validateSchema(doc any) {
	err := schemas.Config().Validate(doc)
	if err == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		p.add(Error, Pos{1, 1}, "", "schema validation failed: "+err.Error())
		return
	}
	for _, e := range ve.BasicOutput().Errors {
		// The tree's inner nodes ("doesn't validate with …") only repeat their leaves.
		if e.KeywordLocation == "" || e.Error == "" || strings.HasPrefix(e.Error, "doesn't validate with") || e.Error == "allOf failed" {
			continue
		}
		kw := e.KeywordLocation[strings.LastIndexByte(e.KeywordLocation, '/')+1:]
		il := e.InstanceLocation
		switch kw {
		case "then", "else":
			continue // "if-else failed": its leaves say what
		case "additionalProperties":
			at := e.AbsoluteKeywordLocation
			at = at[strings.IndexByte(at, '#'):]
			allowed := schemas.Properties(strings.TrimSuffix(at, "/additionalProperties"))
			for _, name := range quoted(e.Error) {
				msg := fmt.Sprintf("unknown key %q", name)
				if s := suggest.Closest(name, allowed); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", s)
				} else {
					msg += "; expected one of " + strings.Join(sortedQuoted(allowed), ", ")
				}
				p.atKey(Error, il+"/"+escapePointer(name), "%s", msg)
			}
		case "required":
			for _, name := range quoted(e.Error) {
				p.at(Error, il, "missing required key %q", name)
			}
		case "enum":
			got := instance(doc, il)
			msg := fmt.Sprintf("%s is not allowed: expected %s", got, strings.TrimPrefix(e.Error, "value must be "))
			if s, ok := instanceValue(doc, il).(string); ok {
				if sug := suggest.Closest(s, enumValues(e.Error)); sug != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", sug)
				}
			}
			p.at(Error, il, "%s", msg)
		case "const":
			want := strings.Trim(strings.TrimPrefix(e.Error, "value must be "), `"`)
			p.at(Error, il, "%s is not allowed: expected %s", instance(doc, il), want)
		case "type":
			// "expected number, but got string"
			p.at(Error, il, "%s", strings.Replace(e.Error, ", but got", ", got", 1))
		default:
			p.at(Error, il, "%s", readable(e.Error))
		}
	}
}

var quotedRe = regexp.MustCompile(`'([^']*)'`)

// quoted extracts the names the validator quotes with single quotes, as in
// "additionalProperties 'a', 'b' not allowed" or "missing properties: 'a'".
func quoted(msg string) []string {
	var out []string
	for _, m := range quotedRe.FindAllStringSubmatch(msg, -1) {
		out = append(out, m[1])
	}
	return out
}

// enumValues reads the choices out of `value must be one of "a", "b"`.
func enumValues(msg string) []string {
	var out []string
	for _, f := range strings.Split(strings.TrimPrefix(msg, "value must be one of "), ", ") {
		if s, err := strconv.Unquote(f); err == nil {
			out = append(out, s)
		}
	}
	return out
}

func sortedQuoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	slices.Sort(out)
	return out
}

var boundRe = regexp.MustCompile(`^must be (.+) but found (.+)$`)

// readable rephrases the validator's bound messages as expected/got.
func readable(msg string) string {
	if m := boundRe.FindStringSubmatch(msg); m != nil {
		return "expected a value " + plainNumbers(m[1]) + ", got " + m[2]
	}
	switch {
	case strings.HasPrefix(msg, "length must be >= 1"):
		return "expected a non-empty string"
	case strings.HasPrefix(msg, "minimum 1 items required"):
		return "expected at least one element, got an empty array"
	}
	return msg
}

// plainNumbers writes the validator's "<= 3.6e+06" as "<= 3600000", as
// the schema and a user write it.
func plainNumbers(bound string) string {
	op, num, ok := strings.Cut(bound, " ")
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || math.Abs(f) >= 1e15 {
		return bound
	}
	return op + " " + strconv.FormatFloat(f, 'f', -1, 64)
}

// instanceValue finds the value at a JSON Pointer in a decoded document.
func instanceValue(doc any, ptr string) any {
	v := doc
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// instance renders the value at ptr as JSON, shortened for messages.
func instance(doc any, ptr string) string {
	b, err := json.Marshal(instanceValue(doc, ptr))
	if err != nil {
		return "the value"
	}
	if len(b) > 40 {
		return string(b[:37]) + "…"
	}
	return string(b)
}
