package xsd

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
)

// The attributes XML Schema gives every instance document (the xsi
// namespace), checked as a validating parser checks them (XML Schema 1.0,
// Validation Rules: Element Locally Valid (Element), cvc-elt; Schema-Related
// Markup in Documents Being Validated): xsi:schemaLocation and
// xsi:noNamespaceSchemaLocation are hints any element may carry; xsi:type
// must name the element's declared type or one derived from it, and the
// element is then checked against that type; xsi:nil only on an element
// its declaration makes nillable. The xml namespace's attributes (xml:lang,
// xml:space…) are attributes like any other: allowed only where the schema
// declares them, which SSP's schemas nowhere do.

// xsiHints are the xsi attributes every element may carry.
var xsiHints = []string{"schemaLocation", "noNamespaceSchemaLocation"}

// xsiAttr is n's attribute of the xsi namespace with that local name, nil
// when it has none.
func xsiAttr(n *Node, local string) *Attr {
	for i := range n.Attrs {
		if a := &n.Attrs[i]; a.Name.Space == xsi && a.Name.Local == local {
			return a
		}
	}
	return nil
}

// instanceType is the complex type n is checked against: its declaration's,
// or the one its xsi:type names when that is the declared type or derives
// from it. An xsi:type that names no type, or a type not derived from the
// declared one, is an error, and n is checked against its declared type.
func (v *validator) instanceType(n *Node, d *elemDecl) *complexType {
	a := xsiAttr(n, "type")
	if a == nil {
		return d.typ
	}
	value := strings.TrimSpace(a.Value)
	prefix, local, prefixed := strings.Cut(value, ":")
	if !prefixed {
		prefix, local = "", value
	}
	space, ok := n.NS[prefix]
	switch {
	case !ok && prefixed:
		v.errorf(n, a.Pos, "<%s xsi:type>: the prefix %q of %q is bound to no namespace", n.Name.Local, prefix, value)
		return d.typ
	case !reNCName.MatchString(local) || prefixed && !reNCName.MatchString(prefix):
		v.errorf(n, a.Pos, "<%s xsi:type>: %q is not a type's qualified name: expected one such as %s", n.Name.Local, value, v.typeName(n, d))
		return d.typ
	}
	q := xml.Name{Space: space, Local: local}
	var named *complexType
	switch {
	case v.s.rawTypes[q] != nil:
		named = v.s.complexTypeNamed(n, q)
	case v.s.rawSimple[q] != nil, q.Space == xs && (local == "anyType" || builtinNames[local]):
	default:
		expected := fmt.Sprintf("%s, <%s>'s type, or no xsi:type", v.typeName(n, d), n.Name.Local)
		if d.typ != nil && d.typ.name.Local == "" {
			expected = fmt.Sprintf("no xsi:type (<%s>'s type is the one its declaration defines)", n.Name.Local)
		}
		v.errorf(n, a.Pos, "<%s xsi:type>: %q names no type the schema defines: expected %s", n.Name.Local, value, expected)
		return d.typ
	}
	if d.typ != nil && d.typ.anyType {
		return named // every type derives from xs:anyType (a simple one: nil, checked as a value)
	}
	for t := named; t != nil && d.typ != nil; t = t.base {
		if t == d.typ {
			return named
		}
	}
	if st := d.simple; st != nil && q.Space == xs && st.base == nil && st.list == nil && st.name == local {
		return nil // the built-in type it is declared with
	}
	if d.typ != nil && d.typ.name.Local == "" {
		v.errorf(n, a.Pos, "<%s xsi:type>: %q cannot stand for <%s>'s type, which its declaration defines and no named type derives from: expected no xsi:type", n.Name.Local, value, n.Name.Local)
		return d.typ
	}
	v.errorf(n, a.Pos, "<%s xsi:type>: %q is not <%s>'s type (%s) nor a type derived from it: expected that type, or no xsi:type", n.Name.Local, value, n.Name.Local, v.typeName(n, d))
	return d.typ
}

// typeName is the name of d's type as n's document could write it, or
// says it has none (a type defined in the element's declaration).
func (v *validator) typeName(n *Node, d *elemDecl) string {
	q := xml.Name{}
	switch {
	case d.typ != nil:
		q = d.typ.name
	case d.simple != nil && d.simple.base == nil && d.simple.list == nil:
		q = xml.Name{Space: xs, Local: d.simple.name}
	}
	if q.Local == "" {
		return "none (a type defined in its declaration)"
	}
	for _, p := range sortedPrefixes(n.NS) {
		if n.NS[p] == q.Space {
			if p == "" {
				return fmt.Sprintf("%q", q.Local)
			}
			return fmt.Sprintf("%q", p+":"+q.Local)
		}
	}
	return "{" + q.Space + "}" + q.Local
}

// builtinNames are XML Schema 1.0's built-in simple types.
var builtinNames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`anySimpleType string normalizedString token language Name NCName ID IDREF IDREFS
		ENTITY ENTITIES NMTOKEN NMTOKENS boolean decimal integer nonPositiveInteger negativeInteger long int short byte
		nonNegativeInteger unsignedLong unsignedInt unsignedShort unsignedByte positiveInteger float double duration
		dateTime time date gYearMonth gYear gMonthDay gDay gMonth hexBinary base64Binary anyURI QName NOTATION`) {
		builtinNames[n] = true
	}
}

// nilled checks n's xsi:nil and reports whether n is nil (xsi:nil true on
// a nillable element: it must be empty, and its content is not checked).
func (v *validator) nilled(n *Node, d *elemDecl) bool {
	a := xsiAttr(n, "nil")
	if a == nil {
		return false
	}
	if !d.nillable {
		v.errorf(n, a.Pos, "<%s xsi:nil>: <%s> is not nillable (its declaration does not say nillable=\"true\"): expected no xsi:nil", n.Name.Local, n.Name.Local)
		return false
	}
	if msg := builtin("boolean").check(a.Value); msg != "" {
		v.errorf(n, a.Pos, "<%s xsi:nil>: %s", n.Name.Local, msg)
		return false
	}
	if b := strings.TrimSpace(a.Value); b != "true" && b != "1" {
		return false
	}
	if len(n.Children) > 0 || n.Text {
		v.errorf(n, n.Pos, "<%s> is nil (xsi:nil=\"true\"): expected it empty", n.Name.Local)
	}
	return true
}

// instanceAttr checks one of n's attributes in the xsi namespace other
// than type and nil (which element checks): the hints pass, any other is
// none XML Schema defines.
func (v *validator) instanceAttr(n *Node, a *Attr) {
	if a.Name.Local == "type" || a.Name.Local == "nil" || slices.Contains(xsiHints, a.Name.Local) {
		return
	}
	v.errorf(n, a.Pos, "<%s> has no attribute %s: the XML Schema instance namespace defines xsi:type, xsi:nil, xsi:schemaLocation and xsi:noNamespaceSchemaLocation only", n.Name.Local, attrName(n, a.Name))
}

// attrName is an attribute's name as n's document could write it: its
// local name, or prefixed (xml:lang, xsi:type, or a prefix in scope).
func attrName(n *Node, q xml.Name) string {
	switch q.Space {
	case "":
		return q.Local
	case xmlNS:
		return "xml:" + q.Local
	}
	for _, p := range sortedPrefixes(n.NS) {
		if p != "" && n.NS[p] == q.Space {
			return p + ":" + q.Local
		}
	}
	return "{" + q.Space + "}" + q.Local
}

func sortedPrefixes(ns map[string]string) []string {
	var out []string
	for p := range ns {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
