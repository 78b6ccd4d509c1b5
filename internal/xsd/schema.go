package xsd

import (
	"encoding/xml"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// xs is XML Schema's own namespace.
const xs = "http://www.w3.org/2001/XMLSchema"

// Schema is a set of schema documents compiled for validation: its global
// elements, types, model groups and attribute groups by qualified name.
type Schema struct {
	elements map[xml.Name]*elemDecl
	// The raw definitions, by qualified name, and what they compiled to.
	rawTypes, rawSimple, rawGroups, rawAttrGroups map[xml.Name]*Node
	types                                         map[xml.Name]*complexType
	simple                                        map[xml.Name]*simpleType
	groups                                        map[xml.Name]*particle
	attrGroups                                    map[xml.Name][]*attrDecl
	loaded                                        map[string]bool
	fsys                                          fs.FS
	err                                           error
}

// elemDecl is an element declaration.
type elemDecl struct {
	name     xml.Name
	typ      *complexType // the SSP schemas declare every element with a complex type
	simple   *simpleType  // or, where one is given, a simple type
	nillable bool         // xsi:nil may say it is nil
}

// complexType is a complex type: its content model (nil: empty), its
// attributes, whether text may stand between its elements.
type complexType struct {
	name    xml.Name
	base    *complexType // the type it extends, nil for none
	anyType bool         // xs:anyType, an element declared with no type: every type derives from it
	mixed   bool
	content *particle
	attrs   []*attrDecl
	// decls are the element declarations its content model holds, by
	// name: XML Schema wants one type per name in a content model
	// (Element Declarations Consistent), so a child's declaration is found
	// by its name.
	decls map[xml.Name]*elemDecl
	ready bool
}

// attrDecl is an attribute declaration.
type attrDecl struct {
	name     string
	typ      *simpleType
	required bool
}

type pkind uint8

const (
	pElem pkind = iota
	pSeq
	pChoice
	pAny
)

// particle is a term of a content model and how often it may occur (max
// -1: unbounded).
type particle struct {
	kind     pkind
	min, max int
	elem     *elemDecl
	items    []*particle
}

// simpleType is a simple type: a built-in one, or a restriction of
// another by facets, or a list of another.
type simpleType struct {
	name     string // the built-in's local name, or the type's
	builtin  string // the built-in type at its root
	base     *simpleType
	list     *simpleType
	enum     []string
	patterns []*regexp.Regexp
	minLen   int // -1: none
	minIncl  string
	maxIncl  string
}

// Compile reads the schema documents files (and the ones they import,
// from the same folder of fsys) and compiles their global declarations.
func Compile(fsys fs.FS, files ...string) (*Schema, error) {
	s := &Schema{fsys: fsys, elements: map[xml.Name]*elemDecl{},
		rawTypes: map[xml.Name]*Node{}, rawSimple: map[xml.Name]*Node{}, rawGroups: map[xml.Name]*Node{}, rawAttrGroups: map[xml.Name]*Node{},
		types: map[xml.Name]*complexType{}, simple: map[xml.Name]*simpleType{}, groups: map[xml.Name]*particle{},
		attrGroups: map[xml.Name][]*attrDecl{}, loaded: map[string]bool{}}
	var roots []*Node
	for _, f := range files {
		rs, err := s.load(f)
		if err != nil {
			return nil, err
		}
		roots = append(roots, rs...)
	}
	for _, r := range roots {
		tns, _ := r.Attr("targetNamespace")
		for _, c := range r.Children {
			if c.Name.Space != xs || c.Name.Local != "element" {
				continue
			}
			d := s.elementDecl(c, tns)
			s.elements[d.name] = d
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	return s, nil
}

// load reads a schema document and those it imports, once each, and
// notes its global definitions.
func (s *Schema) load(file string) ([]*Node, error) {
	file = path.Clean(file)
	if s.loaded[file] {
		return nil, nil
	}
	s.loaded[file] = true
	data, err := fs.ReadFile(s.fsys, file)
	if err != nil {
		return nil, err
	}
	root, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if root.Name != (xml.Name{Space: xs, Local: "schema"}) {
		return nil, fmt.Errorf("%s: not an XML Schema", file)
	}
	if q, _ := root.Attr("elementFormDefault"); q != "qualified" {
		return nil, fmt.Errorf("%s: only schemas whose local elements are qualified are read", file)
	}
	tns, _ := root.Attr("targetNamespace")
	out := []*Node{root}
	for _, c := range root.Children {
		if c.Name.Space != xs {
			continue
		}
		name, _ := c.Attr("name")
		q := xml.Name{Space: tns, Local: name}
		switch c.Name.Local {
		case "import", "include":
			loc, _ := c.Attr("schemaLocation")
			more, err := s.load(path.Join(path.Dir(file), loc))
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		case "complexType":
			s.rawTypes[q] = c
		case "simpleType":
			s.rawSimple[q] = c
		case "group":
			s.rawGroups[q] = c
		case "attributeGroup":
			s.rawAttrGroups[q] = c
		case "element", "annotation":
		default:
			return nil, fmt.Errorf("%s: xs:%s is not read", file, c.Name.Local)
		}
	}
	return out, nil
}

func (s *Schema) fail(n *Node, format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("schema %s: %s", n.Pos, fmt.Sprintf(format, args...))
	}
}

// qname resolves a QName written in a schema (type="ssc:TUnits").
func qname(n *Node, v string) xml.Name {
	prefix, local, ok := strings.Cut(v, ":")
	if !ok {
		return xml.Name{Space: n.NS[""], Local: v}
	}
	return xml.Name{Space: n.NS[prefix], Local: local}
}

// elementDecl compiles an element declaration (global or local, a
// reference to a global one is resolved by the caller).
func (s *Schema) elementDecl(n *Node, tns string) *elemDecl {
	name, _ := n.Attr("name")
	d := &elemDecl{name: xml.Name{Space: tns, Local: name}, nillable: boolAttr(n, "nillable")}
	if t, ok := n.Attr("type"); ok {
		q := qname(n, t)
		if q.Space == xs {
			d.simple = builtin(q.Local)
			return d
		}
		if _, ok := s.rawSimple[q]; ok {
			d.simple = s.simpleTypeNamed(n, q)
			return d
		}
		d.typ = s.complexTypeNamed(n, q)
		return d
	}
	for _, c := range n.Children {
		switch {
		case c.Name.Space != xs:
		case c.Name.Local == "complexType":
			d.typ = &complexType{}
			s.fillComplex(d.typ, c, tns)
		case c.Name.Local == "simpleType":
			d.simple = s.simpleTypeOf(c, tns)
		}
	}
	if d.typ == nil && d.simple == nil {
		d.typ = &complexType{mixed: true, content: &particle{kind: pAny, min: 0, max: -1}, ready: true, anyType: true}
	}
	return d
}

// complexTypeNamed is the global complex type q, compiled once (a type
// may hold elements of itself: TSystem).
func (s *Schema) complexTypeNamed(at *Node, q xml.Name) *complexType {
	if t, ok := s.types[q]; ok {
		return t
	}
	raw, ok := s.rawTypes[q]
	if !ok {
		s.fail(at, "no complex type %s", q.Local)
		return &complexType{ready: true}
	}
	t := &complexType{name: q}
	s.types[q] = t
	tns := q.Space
	s.fillComplex(t, raw, tns)
	return t
}

// fillComplex compiles a complexType definition into t.
func (s *Schema) fillComplex(t *complexType, n *Node, tns string) {
	t.mixed = boolAttr(n, "mixed")
	for _, c := range n.Children {
		if c.Name.Space != xs {
			continue
		}
		switch c.Name.Local {
		case "sequence", "choice", "group", "all":
			t.content = s.particleOf(c, tns)
		case "attribute", "attributeGroup":
			t.attrs = append(t.attrs, s.attrsOf(c, tns)...)
		case "complexContent":
			t.mixed = t.mixed || boolAttr(c, "mixed")
			for _, e := range c.Children {
				if e.Name.Space != xs || e.Name.Local != "extension" {
					continue
				}
				b, _ := e.Attr("base")
				base := s.complexTypeNamed(e, qname(e, b))
				t.base = base
				var ext *particle
				for _, x := range e.Children {
					if x.Name.Space != xs {
						continue
					}
					switch x.Name.Local {
					case "sequence", "choice", "group":
						ext = s.particleOf(x, tns)
					case "attribute", "attributeGroup":
						t.attrs = append(t.attrs, s.attrsOf(x, tns)...)
					}
				}
				t.attrs = append(append([]*attrDecl(nil), base.attrs...), t.attrs...)
				switch {
				case base.content == nil:
					t.content = ext
				case ext == nil:
					t.content = base.content
				default:
					t.content = &particle{kind: pSeq, min: 1, max: 1, items: []*particle{base.content, ext}}
				}
				t.mixed = t.mixed || base.mixed
			}
		case "annotation":
		default:
			s.fail(c, "xs:%s in a complex type is not read", c.Name.Local)
		}
	}
	t.decls = map[xml.Name]*elemDecl{}
	collectDecls(t.content, t.decls)
	t.ready = true
}

func collectDecls(p *particle, into map[xml.Name]*elemDecl) {
	if p == nil {
		return
	}
	if p.kind == pElem {
		if _, ok := into[p.elem.name]; !ok {
			into[p.elem.name] = p.elem
		}
	}
	for _, i := range p.items {
		collectDecls(i, into)
	}
}

// occurs reads minOccurs and maxOccurs.
func occurs(n *Node) (lo, hi int) {
	lo, hi = 1, 1
	if v, ok := n.Attr("minOccurs"); ok {
		lo, _ = strconv.Atoi(v)
	}
	if v, ok := n.Attr("maxOccurs"); ok {
		if v == "unbounded" {
			hi = -1
		} else {
			hi, _ = strconv.Atoi(v)
		}
	}
	return lo, hi
}

func boolAttr(n *Node, name string) bool {
	v, _ := n.Attr(name)
	return v == "true" || v == "1"
}

// particleOf compiles a sequence, choice, model group reference, element
// or wildcard.
func (s *Schema) particleOf(n *Node, tns string) *particle {
	lo, hi := occurs(n)
	p := &particle{min: lo, max: hi}
	switch n.Name.Local {
	case "sequence", "choice":
		p.kind = pSeq
		if n.Name.Local == "choice" {
			p.kind = pChoice
		}
		for _, c := range n.Children {
			if c.Name.Space != xs || c.Name.Local == "annotation" {
				continue
			}
			p.items = append(p.items, s.particleOf(c, tns))
		}
	case "group":
		ref, _ := n.Attr("ref")
		g := s.groupNamed(n, qname(n, ref))
		p.kind, p.items = pSeq, []*particle{g}
	case "element":
		p.kind = pElem
		if ref, ok := n.Attr("ref"); ok {
			q := qname(n, ref)
			if d, ok := s.elements[q]; ok {
				p.elem = d
			} else {
				p.elem = &elemDecl{name: q}
				s.fail(n, "element references are resolved only to elements declared before")
			}
		} else {
			p.elem = s.elementDecl(n, tns)
		}
	case "any":
		if ns, _ := n.Attr("namespace"); ns != "" && ns != "##any" {
			s.fail(n, "only wildcards of namespace ##any are read")
		}
		if pc, _ := n.Attr("processContents"); pc != "lax" {
			s.fail(n, "only lax wildcards are read")
		}
		p.kind = pAny
	default:
		s.fail(n, "xs:%s in a content model is not read", n.Name.Local)
		p.kind = pSeq
	}
	return p
}

// groupNamed is the model group q's sequence or choice.
func (s *Schema) groupNamed(at *Node, q xml.Name) *particle {
	if g, ok := s.groups[q]; ok {
		return g
	}
	raw, ok := s.rawGroups[q]
	if !ok {
		s.fail(at, "no model group %s", q.Local)
		return &particle{kind: pSeq, min: 1, max: 1}
	}
	for _, c := range raw.Children {
		if c.Name.Space == xs && (c.Name.Local == "sequence" || c.Name.Local == "choice") {
			g := s.particleOf(c, q.Space)
			s.groups[q] = g
			return g
		}
	}
	s.fail(raw, "model group %s holds no sequence or choice", q.Local)
	return &particle{kind: pSeq, min: 1, max: 1}
}

// attrsOf compiles an attribute declaration, or an attribute group
// reference into its attributes.
func (s *Schema) attrsOf(n *Node, tns string) []*attrDecl {
	if n.Name.Local == "attributeGroup" {
		ref, _ := n.Attr("ref")
		q := qname(n, ref)
		if g, ok := s.attrGroups[q]; ok {
			return g
		}
		raw, ok := s.rawAttrGroups[q]
		if !ok {
			s.fail(n, "no attribute group %s", q.Local)
			return nil
		}
		var out []*attrDecl
		for _, c := range raw.Children {
			if c.Name.Space == xs && (c.Name.Local == "attribute" || c.Name.Local == "attributeGroup") {
				out = append(out, s.attrsOf(c, q.Space)...)
			}
		}
		s.attrGroups[q] = out
		return out
	}
	name, _ := n.Attr("name")
	use, _ := n.Attr("use")
	a := &attrDecl{name: name, required: use == "required", typ: builtin("string")}
	if t, ok := n.Attr("type"); ok {
		a.typ = s.simpleTypeRef(n, qname(n, t))
	}
	for _, c := range n.Children {
		if c.Name.Space == xs && c.Name.Local == "simpleType" {
			a.typ = s.simpleTypeOf(c, tns)
		}
	}
	return []*attrDecl{a}
}

// simpleTypeRef is a built-in or a global simple type.
func (s *Schema) simpleTypeRef(at *Node, q xml.Name) *simpleType {
	if q.Space == xs {
		return builtin(q.Local)
	}
	return s.simpleTypeNamed(at, q)
}

func (s *Schema) simpleTypeNamed(at *Node, q xml.Name) *simpleType {
	if t, ok := s.simple[q]; ok {
		return t
	}
	raw, ok := s.rawSimple[q]
	if !ok {
		s.fail(at, "no simple type %s", q.Local)
		return builtin("string")
	}
	t := s.simpleTypeOf(raw, q.Space)
	t.name = q.Local
	s.simple[q] = t
	return t
}

// simpleTypeOf compiles a simpleType definition: a restriction or a list.
func (s *Schema) simpleTypeOf(n *Node, tns string) *simpleType {
	for _, c := range n.Children {
		if c.Name.Space != xs {
			continue
		}
		switch c.Name.Local {
		case "restriction":
			b, _ := c.Attr("base")
			base := s.simpleTypeRef(c, qname(c, b))
			t := &simpleType{name: base.name, builtin: base.builtin, base: base, minLen: -1}
			for _, f := range c.Children {
				if f.Name.Space != xs {
					continue
				}
				v, _ := f.Attr("value")
				switch f.Name.Local {
				case "enumeration":
					t.enum = append(t.enum, v)
				case "pattern":
					re, err := regexp.Compile(`^(?:` + v + `)$`)
					if err != nil {
						s.fail(f, "pattern %q: %v", v, err)
						continue
					}
					t.patterns = append(t.patterns, re)
				case "minLength":
					t.minLen, _ = strconv.Atoi(v)
				case "minInclusive":
					t.minIncl = v
				case "maxInclusive":
					t.maxIncl = v
				case "annotation":
				default:
					s.fail(f, "the facet xs:%s is not read", f.Name.Local)
				}
			}
			return t
		case "list":
			it, _ := c.Attr("itemType")
			return &simpleType{name: "list", builtin: "list", list: s.simpleTypeRef(c, qname(c, it)), minLen: -1}
		case "annotation":
		default:
			s.fail(c, "xs:%s in a simple type is not read", c.Name.Local)
		}
	}
	s.fail(n, "a simple type with neither a restriction nor a list")
	return builtin("string")
}
