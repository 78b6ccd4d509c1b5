// Package xsd reads XML documents with the place of every element and
// attribute, and checks them against XML Schemas: the subset of XML
// Schema 1.0 that the SSP standard's schemas are written in (global and
// local elements, complex types with sequences, choices, model groups,
// attribute groups, extension of a base type, lax wildcards; simple types
// by restriction with enumerations, patterns, lengths and bounds, and
// lists of the built-in types they use; the instance attributes xsi:type
// and xsi:nil, instance.go). Go's standard library has no
// XML Schema validator; this one is checked against xmllint (libxml2),
// which reads the same schemas, in the tests of package ssp.
package xsd

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"unicode/utf8"
)

// Node is an element of a document: its name (the namespace resolved),
// attributes, children in order, and where it is.
type Node struct {
	Name     xml.Name
	Attrs    []Attr
	Children []*Node
	Parent   *Node // nil for the root
	// Text says the element holds character data other than white space,
	// first at TextPos.
	Text    bool
	TextPos Pos
	Pos     Pos // where its start tag begins
	// TagLine is the line its start tag ends on: where libxml2
	// (xmllint) places what it says of the element.
	TagLine int
	// NS are the namespace prefixes in scope at the element, for the
	// values that name things by QName (a schema's type="ssc:TUnits").
	NS map[string]string
}

// Attr is one attribute and where it is written.
type Attr struct {
	Name  xml.Name
	Value string
	Pos   Pos
}

// Pos is a place in a document: 1-based line and column, the column in
// characters.
type Pos struct{ Line, Col int }

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Attr is the value of the attribute of that local name without a
// namespace, and whether it is there.
func (n *Node) Attr(name string) (string, bool) {
	if a := n.AttrNode(name); a != nil {
		return a.Value, true
	}
	return "", false
}

// AttrNode is the attribute of that local name without a namespace, nil
// when it is not there.
func (n *Node) AttrNode(name string) *Attr {
	for i := range n.Attrs {
		if a := &n.Attrs[i]; a.Name.Space == "" && a.Name.Local == name {
			return a
		}
	}
	return nil
}

// AttrPos is where the attribute is written, or the element when it is
// not there (a missing attribute is the element's to answer for).
func (n *Node) AttrPos(name string) Pos {
	if a := n.AttrNode(name); a != nil {
		return a.Pos
	}
	return n.Pos
}

// Child is the first child of that local name, nil when there is none.
func (n *Node) Child(local string) *Node {
	for _, c := range n.Children {
		if c.Name.Local == local {
			return c
		}
	}
	return nil
}

// ChildrenNamed are the children of that local name, in order.
func (n *Node) ChildrenNamed(local string) []*Node {
	var out []*Node
	for _, c := range n.Children {
		if c.Name.Local == local {
			out = append(out, c)
		}
	}
	return out
}

// MaxDepth bounds the nesting of a document's elements: a document nested
// deeper is refused rather than read (nothing SSP defines nests a
// hundredth as deep).
const MaxDepth = 256

// MaxNodes bounds a document's elements and attributes together.
const MaxNodes = 1 << 20

// Parse reads a document into its root element. The document must be
// well-formed XML 1.0; an error says where it is not.
func Parse(data []byte) (*Node, error) {
	lines := newLines(data)
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	var root *Node
	var stack []*Node
	var raw []xml.Name // the start tags' names as written, to match their end tags
	count := 0
	for {
		off := d.InputOffset()
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				// Where the decoder stopped: the character it could not take
				// (the last it read).
				return nil, &Error{Pos: lines.pos(max(int(off), int(d.InputOffset())-1)), Msg: "not well-formed XML: " + se.Msg}
			}
			return nil, &Error{Pos: lines.pos(int(d.InputOffset())), Msg: "not well-formed XML: " + err.Error()}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root != nil && len(stack) == 0 {
				return nil, &Error{Pos: lines.pos(int(off)), Msg: "not well-formed XML: a second root element"}
			}
			if len(stack) >= MaxDepth {
				return nil, &Error{Pos: lines.pos(int(off)), Msg: fmt.Sprintf("elements nested more than %d deep", MaxDepth)}
			}
			count += 1 + len(t.Attr)
			if count > MaxNodes {
				return nil, &Error{Pos: lines.pos(int(off)), Msg: fmt.Sprintf("more than %d elements and attributes", MaxNodes)}
			}
			n := &Node{Pos: lines.pos(int(off)), TagLine: lines.pos(int(d.InputOffset()) - 1).Line}
			n.NS = map[string]string{"xml": xmlNS}
			if len(stack) > 0 {
				n.NS = stack[len(stack)-1].NS
			}
			end := int(d.InputOffset())
			for i, a := range t.Attr {
				for _, b := range t.Attr[:i] {
					if a.Name == b.Name {
						return nil, &Error{Pos: n.Pos, Msg: fmt.Sprintf("not well-formed XML: the attribute %s is written twice", rawName(a.Name))}
					}
				}
			}
			copied := false
			for _, a := range t.Attr {
				prefix, bind := "", false
				switch {
				case a.Name.Space == "" && a.Name.Local == "xmlns":
					bind = true
				case a.Name.Space == "xmlns":
					prefix, bind = a.Name.Local, true
				}
				if !bind {
					continue
				}
				switch {
				case prefix != "" && a.Value == "":
					return nil, &Error{Pos: n.Pos, Msg: fmt.Sprintf("xmlns:%s=\"\": a prefix must be bound to a namespace, not to none", prefix)}
				case strings.ContainsAny(a.Value, " \t\r\n"):
					return nil, &Error{Pos: n.Pos, Msg: fmt.Sprintf("%s=%q: a namespace is a URI, which holds no white space", rawName(a.Name), a.Value)}
				}
				if !copied {
					n.NS, copied = maps.Clone(n.NS), true
				}
				n.NS[prefix] = a.Value
			}
			name, ok := resolve(t.Name, n.NS, true)
			if !ok {
				return nil, &Error{Pos: n.Pos, Msg: fmt.Sprintf("the prefix %q of <%s:%s> is bound to no namespace", t.Name.Space, t.Name.Space, t.Name.Local)}
			}
			n.Name = name
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
					continue
				}
				an, ok := resolve(a.Name, n.NS, false)
				if !ok {
					return nil, &Error{Pos: n.Pos, Msg: fmt.Sprintf("the prefix %q of the attribute %s:%s is bound to no namespace", a.Name.Space, a.Name.Space, a.Name.Local)}
				}
				for _, b := range n.Attrs {
					if b.Name == an {
						return nil, &Error{Pos: n.Pos, Msg: fmt.Sprintf("the attribute %s is written twice (by two prefixes of one namespace)", an.Local)}
					}
				}
				n.Attrs = append(n.Attrs, Attr{Name: an, Value: a.Value, Pos: lines.pos(attrOffset(data, int(off), end, a.Name))})
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.Children, n.Parent = append(p.Children, n), p
			} else {
				root = n
			}
			stack, raw = append(stack, n), append(raw, t.Name)
		case xml.EndElement:
			if len(stack) == 0 {
				return nil, &Error{Pos: lines.pos(int(off)), Msg: "not well-formed XML: an end tag without its start"}
			}
			if open := raw[len(raw)-1]; open != t.Name {
				return nil, &Error{Pos: lines.pos(int(off)), Msg: fmt.Sprintf("not well-formed XML: </%s> closes <%s>", rawName(t.Name), rawName(open))}
			}
			stack, raw = stack[:len(stack)-1], raw[:len(raw)-1]
		case xml.CharData:
			if len(stack) == 0 {
				if len(bytes.TrimSpace(t)) > 0 {
					return nil, &Error{Pos: lines.pos(int(off)), Msg: "not well-formed XML: text outside the root element"}
				}
				continue
			}
			if n := stack[len(stack)-1]; !n.Text {
				if i := bytes.IndexFunc(t, func(r rune) bool { return !isSpace(r) }); i >= 0 {
					n.Text, n.TextPos = true, lines.pos(int(off))
				}
			}
		}
	}
	if root == nil {
		return nil, &Error{Pos: Pos{Line: 1, Col: 1}, Msg: "not well-formed XML: no root element"}
	}
	if len(stack) > 0 {
		return nil, &Error{Pos: lines.pos(len(data)), Msg: fmt.Sprintf("not well-formed XML: <%s> is not closed", stack[len(stack)-1].Name.Local)}
	}
	return root, nil
}

func rawName(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// xmlNS is the namespace the prefix xml is bound to in every document.
const xmlNS = "http://www.w3.org/XML/1998/namespace"

// resolve turns a raw name's prefix into its namespace; an unprefixed
// element takes the default namespace, an unprefixed attribute none.
func resolve(n xml.Name, ns map[string]string, element bool) (xml.Name, bool) {
	if n.Space == "" {
		if element {
			return xml.Name{Space: ns[""], Local: n.Local}, true
		}
		return n, true
	}
	url, ok := ns[n.Space]
	return xml.Name{Space: url, Local: n.Local}, ok
}

// attrOffset finds where the attribute name is written in the start tag
// data[start:end]; start when it cannot be found.
func attrOffset(data []byte, start, end int, name xml.Name) int {
	if end > len(data) || start > end {
		return start
	}
	want := name.Local
	if name.Space != "" {
		want = name.Space + ":" + name.Local
	}
	tag := data[start:end]
	for i := 0; i+len(want) <= len(tag); {
		j := bytes.Index(tag[i:], []byte(want))
		if j < 0 {
			break
		}
		at := i + j
		after := strings.TrimLeft(string(tag[at+len(want):min(len(tag), at+len(want)+8)]), " \t\r\n")
		if at > 0 && isSpace(rune(tag[at-1])) && strings.HasPrefix(after, "=") {
			return start + at
		}
		i = at + 1
	}
	return start
}

// lines turns byte offsets into lines and columns.
type lines struct {
	data   []byte
	starts []int
}

func newLines(data []byte) *lines {
	l := &lines{data: data, starts: []int{0}}
	for i, b := range data {
		if b == '\n' {
			l.starts = append(l.starts, i+1)
		}
	}
	return l
}

func (l *lines) pos(off int) Pos {
	off = max(0, min(off, len(l.data)))
	lo, hi := 0, len(l.starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if l.starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return Pos{Line: lo + 1, Col: utf8.RuneCount(l.data[l.starts[lo]:off]) + 1}
}

// Error is a problem at a place in a document.
type Error struct {
	Pos Pos
	Msg string
	// TagLine is the TagLine of the element it concerns (0 for a
	// document that is not well-formed).
	TagLine int
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }
