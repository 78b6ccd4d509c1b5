package xsd

import (
	"encoding/xml"
	"fmt"
	"slices"
	"sort"
	"strings"

	"beamconnect/internal/suggest"
)

// xsi is the namespace of the attributes XML Schema gives every instance
// (xsi:type, xsi:nil, xsi:schemaLocation: instance.go).
const xsi = "http://www.w3.org/2001/XMLSchema-instance"

// Validate checks a document against the schema, as a validating parser
// would: the root one of the schema's global elements, then every element
// its declaration's content model, attributes and their values, IDs
// unique. The errors are in document order.
func (s *Schema) Validate(root *Node) []Error {
	v := &validator{s: s, ids: map[string]Pos{}}
	d, ok := s.elements[root.Name]
	if !ok {
		var names []string
		for n := range s.elements {
			names = append(names, n.Local)
		}
		sort.Strings(names)
		v.errorf(root, root.Pos, "the root element <%s> is none the schema declares: expected %s%s", root.Name.Local, strings.Join(names, " or "), nsHint(root.Name, s.elements))
		return v.errs
	}
	v.element(root, d)
	sort.SliceStable(v.errs, func(i, j int) bool {
		a, b := v.errs[i].Pos, v.errs[j].Pos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	return v.errs
}

// nsHint says when an element has the right name in the wrong namespace.
func nsHint(n xml.Name, decls map[xml.Name]*elemDecl) string {
	for q := range decls {
		if q.Local == n.Local && q.Space != n.Space {
			if n.Space == "" {
				return fmt.Sprintf(" (<%s> is in no namespace: expected xmlns=%q)", n.Local, q.Space)
			}
			return fmt.Sprintf(" (<%s> is in the namespace %q: expected %q)", n.Local, n.Space, q.Space)
		}
	}
	return ""
}

type validator struct {
	s    *Schema
	errs []Error
	ids  map[string]Pos
}

// errorf notes an error of element n at a place in it.
func (v *validator) errorf(n *Node, at Pos, format string, args ...any) {
	v.errs = append(v.errs, Error{Pos: at, Msg: fmt.Sprintf(format, args...), TagLine: n.TagLine})
}

// element checks n against its declaration d.
func (v *validator) element(n *Node, d *elemDecl) {
	t := v.instanceType(n, d)
	nilled := v.nilled(n, d)
	if t == nil {
		if len(n.Children) > 0 && !nilled {
			v.errorf(n.Children[0], n.Children[0].Pos, "<%s> holds a value, not elements", n.Name.Local)
		}
		v.attributes(n, nil, false)
		return
	}
	v.attributes(n, t.attrs, t.anyType)
	if nilled {
		return // empty, as nilled says
	}
	if n.Text && !t.mixed {
		v.errorf(n, n.TextPos, "<%s> holds elements only, not text", n.Name.Local)
	}
	// As libxml2 does, the children from one the content model does not
	// expect on are not looked into: what is wrong is said once.
	upTo := v.content(n, t)
	for _, c := range n.Children[:upTo] {
		if cd, ok := t.decls[c.Name]; ok {
			v.element(c, cd)
			continue
		}
		// A wildcard's element (lax): checked when the schema declares it
		// globally, taken as it is otherwise.
		if gd, ok := v.s.elements[c.Name]; ok && hasAny(t.content) {
			v.element(c, gd)
		}
	}
}

func hasAny(p *particle) bool {
	if p == nil {
		return false
	}
	if p.kind == pAny {
		return true
	}
	return slices.ContainsFunc(p.items, hasAny)
}

// attributes checks n's attributes against decls: each declared, each
// required one there, each value of its type, IDs unique. An element of
// any type (declared with none) takes any attribute (xs:anyType's
// wildcard, lax: none of the SSP schemas' attributes is global).
func (v *validator) attributes(n *Node, decls []*attrDecl, anyType bool) {
	for _, a := range n.Attrs {
		if a.Name.Space == xsi {
			v.instanceAttr(n, &a)
			continue
		}
		if anyType {
			continue
		}
		i := slices.IndexFunc(decls, func(d *attrDecl) bool { return a.Name.Space == "" && d.name == a.Name.Local })
		if i < 0 {
			var names []string
			for _, d := range decls {
				names = append(names, d.name)
			}
			msg := fmt.Sprintf("<%s> has no attribute %s", n.Name.Local, attrName(n, a.Name))
			switch s := suggest.Closest(a.Name.Local, names); {
			case a.Name.Space != "" && len(names) > 0: // xml:lang is no misspelt lang
				msg += ": expected " + strings.Join(names, ", ")
			case s != "":
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			case len(names) == 0:
				msg += ": it takes none"
			default:
				msg += ": expected " + strings.Join(names, ", ")
			}
			v.errorf(n, a.Pos, "%s", msg)
			continue
		}
		d := decls[i]
		if msg := d.typ.check(a.Value); msg != "" {
			v.errorf(n, a.Pos, "<%s %s>: %s", n.Name.Local, a.Name.Local, msg)
			continue
		}
		if d.typ.builtin == "ID" {
			id := strings.TrimSpace(a.Value)
			if first, dup := v.ids[id]; dup {
				v.errorf(n, a.Pos, "<%s id>: %q is the id of another element too (line %d): expected ids unique in the file", n.Name.Local, id, first.Line)
			} else {
				v.ids[id] = a.Pos
			}
		}
	}
	for _, d := range decls {
		if d.required && n.AttrNode(d.name) == nil {
			v.errorf(n, n.Pos, "<%s> lacks its attribute %s", n.Name.Local, d.name)
		}
	}
}

// content checks the sequence of n's children against t's content model,
// and returns how many of them fit it before one does not.
func (v *validator) content(n *Node, t *complexType) int {
	names := make([]xml.Name, len(n.Children))
	for i, c := range n.Children {
		names[i] = c.Name
	}
	if t.content == nil {
		if len(names) > 0 {
			v.errorf(n.Children[0], n.Children[0].Pos, "<%s> is not expected: <%s> holds no elements", n.Children[0].Name.Local, n.Name.Local)
		}
		return 0
	}
	m := newMatcher(names)
	if slices.Contains(m.occurs(t.content, 0), len(names)) {
		return len(names)
	}
	j := m.far(t.content, 0)
	next := m.expected(t, j)
	if j < len(names) {
		c := n.Children[j]
		msg := fmt.Sprintf("<%s> is not expected here in <%s>", c.Name.Local, n.Name.Local)
		if _, known := t.decls[c.Name]; !known {
			msg = fmt.Sprintf("<%s> is no element of <%s>", c.Name.Local, n.Name.Local)
			var locals []string
			for _, q := range next {
				locals = append(locals, q.Local)
			}
			if s := suggest.Closest(c.Name.Local, locals); s != "" {
				msg += fmt.Sprintf(" (did you mean <%s>?)", s)
			} else if h := nsHint(c.Name, t.decls); h != "" {
				msg += h
			}
		}
		if len(next) > 0 {
			msg += ": expected " + nameList(next)
		} else {
			msg += ": expected nothing more"
		}
		v.errorf(c, c.Pos, "%s", msg)
		return j
	}
	v.errorf(n, n.Pos, "<%s> lacks %s", n.Name.Local, nameList(next))
	return len(names)
}

func nameList(names []xml.Name) string {
	var parts []string
	for _, q := range names {
		if q.Local == "*" {
			parts = append(parts, "any element")
			continue
		}
		parts = append(parts, "<"+q.Local+">")
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "one of " + strings.Join(parts, ", ")
}

// matcher matches a sequence of element names against content models.
// Sets of positions are sorted slices; every result is remembered, so a
// content model of n children costs a few passes over them per particle.
type matcher struct {
	seq     []xml.Name
	memo    map[memoKey][]int
	farMemo map[memoKey]int
}

type memoKey struct {
	p     *particle
	start int
	once  bool
}

func newMatcher(seq []xml.Name) *matcher {
	return &matcher{seq: seq, memo: map[memoKey][]int{}, farMemo: map[memoKey]int{}}
}

// set gathers positions without repeats.
type set struct {
	in   []bool
	list []int
}

func (m *matcher) newSet() *set { return &set{in: make([]bool, len(m.seq)+1)} }

func (s *set) add(e int) bool {
	if s.in[e] {
		return false
	}
	s.in[e] = true
	s.list = append(s.list, e)
	return true
}

func (s *set) sorted() []int {
	slices.Sort(s.list)
	return s.list
}

// occurs is every position a match of p, all its occurrences, can end at
// when it starts at start (sorted).
func (m *matcher) occurs(p *particle, start int) []int {
	k := memoKey{p, start, false}
	if r, ok := m.memo[k]; ok {
		return r
	}
	m.memo[k] = nil // a cycle through empty matches adds nothing
	out := m.newSet()
	if p.min == 0 {
		out.add(start)
	}
	frontier := []int{start}
	seen := m.newSet()
	for count := 1; len(frontier) > 0 && (p.max < 0 || count <= p.max); count++ {
		next := m.newSet()
		for _, s := range frontier {
			for _, e := range m.once(p, s) {
				next.add(e)
			}
		}
		frontier = next.list
		if count >= p.min {
			// Past the minimum only new positions can lead further.
			var fresh []int
			for _, e := range next.list {
				out.add(e)
				if seen.add(e) {
					fresh = append(fresh, e)
				}
			}
			frontier = fresh
		}
	}
	r := out.sorted()
	m.memo[k] = r
	return r
}

// once is every end of one occurrence of p from start.
func (m *matcher) once(p *particle, start int) []int {
	switch p.kind {
	case pElem:
		if start < len(m.seq) && m.seq[start] == p.elem.name {
			return []int{start + 1}
		}
		return nil
	case pAny:
		if start < len(m.seq) {
			return []int{start + 1}
		}
		return nil
	}
	k := memoKey{p, start, true}
	if r, ok := m.memo[k]; ok {
		return r
	}
	var r []int
	if p.kind == pChoice {
		out := m.newSet()
		for _, it := range p.items {
			for _, e := range m.occurs(it, start) {
				out.add(e)
			}
		}
		r = out.sorted()
	} else {
		r = []int{start}
		for _, it := range p.items {
			next := m.newSet()
			for _, s := range r {
				for _, e := range m.occurs(it, s) {
					next.add(e)
				}
			}
			r = next.sorted()
		}
	}
	m.memo[k] = r
	return r
}

// far is the furthest position a match of p from start can reach, whole
// or begun: how much of the sequence fits p as a prefix of a valid one.
func (m *matcher) far(p *particle, start int) int {
	k := memoKey{p, start, false}
	if r, ok := m.farMemo[k]; ok {
		return r
	}
	m.farMemo[k] = start
	best := start
	frontier := []int{start}
	seen := m.newSet()
	seen.add(start)
	for count := 1; len(frontier) > 0 && (p.max < 0 || count <= p.max); count++ {
		var next []int
		for _, s := range frontier {
			best = max(best, m.farOnce(p, s))
			for _, e := range m.once(p, s) {
				best = max(best, e)
				if seen.add(e) {
					next = append(next, e)
				}
			}
		}
		frontier = next
	}
	m.farMemo[k] = best
	return best
}

// farOnce is far of one occurrence of p.
func (m *matcher) farOnce(p *particle, start int) int {
	switch p.kind {
	case pElem, pAny:
		if len(m.once(p, start)) > 0 {
			return start + 1
		}
		return start
	}
	k := memoKey{p, start, true}
	if r, ok := m.farMemo[k]; ok {
		return r
	}
	m.farMemo[k] = start
	best := start
	if p.kind == pChoice {
		for _, it := range p.items {
			best = max(best, m.far(it, start))
		}
	} else {
		pos := []int{start}
		for _, it := range p.items {
			next := m.newSet()
			for _, s := range pos {
				best = max(best, m.far(it, s))
				for _, e := range m.occurs(it, s) {
					next.add(e)
				}
			}
			pos = next.list
		}
	}
	m.farMemo[k] = best
	return best
}

// expected are the element names that could come at position j after
// the first j children, in the content model's order.
func (m *matcher) expected(t *complexType, j int) []xml.Name {
	var cands []xml.Name
	var walk func(p *particle)
	walk = func(p *particle) {
		switch p.kind {
		case pElem:
			if !slices.Contains(cands, p.elem.name) {
				cands = append(cands, p.elem.name)
			}
		case pAny:
			if !slices.Contains(cands, xml.Name{Local: "*"}) {
				cands = append(cands, xml.Name{Local: "*"})
			}
		}
		for _, it := range p.items {
			walk(it)
		}
	}
	walk(t.content)
	var out []xml.Name
	for _, c := range cands {
		probe := newMatcher(append(slices.Clone(m.seq[:j]), c))
		if c.Local == "*" {
			probe.seq[j] = xml.Name{Space: "\x00", Local: "*"} // only a wildcard takes it
		}
		if probe.far(t.content, 0) == j+1 {
			out = append(out, c)
		}
	}
	return out
}
