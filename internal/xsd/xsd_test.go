package xsd

import (
	"os"
	"strings"
	"testing"
)

// A small schema of the constructs the SSP schemas use: a sequence, an
// unbounded choice, a model group, a recursive named type, enumerations,
// lists, an ID; each document valid or refused with what is wrong where.
func TestValidate(t *testing.T) {
	s, err := Compile(os.DirFS("testdata"), "small.xsd")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"valid", `<root xmlns="urn:t" v="one" l="1 2e3 INF"><a id="x"><a/></a><b/><c n="7"/><b/><end/></root>`, ""},
		{"the group's last element missing", `<root xmlns="urn:t"><b/></root>`, `1:1: <root> lacks one of <b>, <d>, <c>, <end>`},
		{"a choice not taken", `<root xmlns="urn:t"><end/></root>`, `1:21: <end> is not expected here in <root>: expected one of <a>, <b>, <d>, <c>`},
		{"an element too many", `<root xmlns="urn:t"><b/><end/><end/><end/></root>`, `1:37: <end> is not expected here in <root>: expected nothing more`},
		{"a misspelt element", `<root xmlns="urn:t"><bb/><end/></root>`, `1:21: <bb> is no element of <root> (did you mean <b>?)`},
		{"an enumeration", `<root xmlns="urn:t" v="tow"><b/><end/></root>`, `1:21: <root v>: "tow" is none of one, two (did you mean "two"?)`},
		{"a list item", `<root xmlns="urn:t" l="1 x"><b/><end/></root>`, `<root l>: "x" in the list: "x" is not a number (xs:double)`},
		{"a required attribute", `<root xmlns="urn:t"><c/><end/></root>`, `1:21: <c> lacks its attribute n`},
		{"an unsigned byte", `<root xmlns="urn:t"><c n="256"/><end/></root>`, `<c n>: 256 is beyond xs:unsignedByte (0 to 255)`},
		{"nested recursion", `<root xmlns="urn:t"><a><a><b/></a></a><b/><end/></root>`, `1:27: <b> is no element of <a> (did you mean <a>?): expected <a>`},
		{"ids repeated", `<root xmlns="urn:t"><a id="k"><a id="k"/></a><b/><end/></root>`, `<a id>: "k" is the id of another element too (line 1)`},
		{"text", `<root xmlns="urn:t">text<b/><end/></root>`, `1:21: <root> holds elements only, not text`},
		{"no namespace", `<root><b/><end/></root>`, `expected xmlns="urn:t"`},
		{"an unknown attribute", `<root xmlns="urn:t" zzz="1"><b/><end/></root>`, `<root> has no attribute zzz: expected v, l`},
		// The xml and xsi namespaces' attributes, as xmllint takes them.
		{"xml:lang where none is declared", `<root xmlns="urn:t" xml:lang="en"><b/><end/></root>`, `1:21: <root> has no attribute xml:lang: expected v, l`},
		{"xml:space", `<root xmlns="urn:t"><c n="1" xml:space="preserve"/><end/></root>`, `1:30: <c> has no attribute xml:space: expected n`},
		{"an element of any type takes any attribute", `<root xmlns="urn:t"><b xml:space="preserve" zzz="1"/><end/></root>`, ""},
		{"the schema's location", `<root xmlns="urn:t"` + xsiNS + ` xsi:schemaLocation="urn:t small.xsd" xsi:noNamespaceSchemaLocation="x.xsd"><b/><end/></root>`, ""},
		{"an xsi attribute XML Schema has not", `<root xmlns="urn:t"` + xsiNS + ` xsi:bogus="1"><b/><end/></root>`, `<root> has no attribute xsi:bogus: the XML Schema instance namespace defines xsi:type, xsi:nil, xsi:schemaLocation and xsi:noNamespaceSchemaLocation only`},
		{"xsi:type of the declared type", `<root xmlns="urn:t"` + xsiNS + `><a xsi:type="TA"/><b/><end/></root>`, ""},
		{"xsi:type of a derived type", `<root xmlns="urn:t"` + xsiNS + `><a xsi:type="TA2" extra="3"/><b/><end/></root>`, ""},
		{"the derived type's attribute without it", `<root xmlns="urn:t"><a extra="3"/><b/><end/></root>`, `<a> has no attribute extra: expected id`},
		{"the derived type's attribute checked", `<root xmlns="urn:t"` + xsiNS + `><a xsi:type="TA2" extra="x"/><b/><end/></root>`, `<a extra>: "x" is not a whole number`},
		{"xsi:type of no type", `<root xmlns="urn:t"` + xsiNS + `><a xsi:type="foo"/><b/><end/></root>`, `<a xsi:type>: "foo" names no type the schema defines: expected "TA", <a>'s type, or no xsi:type`},
		{"xsi:type of a type not derived", `<root xmlns="urn:t"` + xsiNS + `><a xsi:type="TB"/><b/><end/></root>`, `<a xsi:type>: "TB" is not <a>'s type ("TA") nor a type derived from it`},
		{"xsi:type of a built-in", `<root xmlns="urn:t"` + xsiNS + ` xmlns:xs="http://www.w3.org/2001/XMLSchema"><a xsi:type="xs:string"/><b/><end/></root>`, `"xs:string" is not <a>'s type`},
		{"xsi:type with an unbound prefix", `<root xmlns="urn:t"` + xsiNS + `><a xsi:type="p:TA"/><b/><end/></root>`, `<a xsi:type>: the prefix "p" of "p:TA" is bound to no namespace`},
		{"xsi:type on an element of a type of its own", `<root xmlns="urn:t"` + xsiNS + `><c n="1" xsi:type="TA"/><end/></root>`, `<c xsi:type>: "TA" cannot stand for <c>'s type, which its declaration defines and no named type derives from: expected no xsi:type`},
		{"xsi:type on an element of any type", `<root xmlns="urn:t"` + xsiNS + `><b xsi:type="TA"><a/></b><end/></root>`, ""},
		{"xsi:type on an element of any type, checked", `<root xmlns="urn:t"` + xsiNS + `><b xsi:type="TA"><b/></b><end/></root>`, `<b> is no element of <b>`},
		{"xsi:nil on an element not nillable", `<root xmlns="urn:t"` + xsiNS + `><b xsi:nil="false"/><end/></root>`, `<b xsi:nil>: <b> is not nillable`},
		{"xsi:nil on a nillable element", `<root xmlns="urn:t"` + xsiNS + `><d xsi:nil="true"/><end/></root>`, ""},
		{"a nil element with content", `<root xmlns="urn:t"` + xsiNS + `><d xsi:nil="true"><a/></d><end/></root>`, `<d> is nil (xsi:nil="true"): expected it empty`},
		{"xsi:nil not a boolean", `<root xmlns="urn:t"` + xsiNS + `><d xsi:nil="yes"/><end/></root>`, `<d xsi:nil>: "yes" is not true, false, 1 or 0`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			var said []string
			for _, e := range s.Validate(root) {
				said = append(said, e.Error())
			}
			got := strings.Join(said, "\n")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// xsiNS declares the prefix xsi, for the XML Schema instance attributes.
const xsiNS = ` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"`

// A document that is not well-formed, or nested past MaxDepth, is
// refused with where.
func TestParseRefuses(t *testing.T) {
	for _, tt := range []struct{ name, doc, want string }{
		{"unclosed", "<a>\n<b></a>", "2:4: not well-formed XML: </a> closes <b>"},
		// The column where the decoder stopped, not 1.
		{"an unquoted value", "<a>\n  <b x=1/></a>", "2:8: not well-formed XML: unquoted or missing attribute value in element"},
		{"< in a value", "<a>\n  <b x='<'/></a>", "2:9: not well-formed XML: unescaped < inside quoted string"},
		{"an unknown entity", "<a>\n  <b>&bogus;</b></a>", "2:12: not well-formed XML: invalid character entity &bogus;"},
		{"-- in a comment", "<a>\n <!-- x -- y --></a>", "2:11: not well-formed XML: invalid sequence \"--\" not allowed in comments"},
		{"two roots", "<a/><b/>", "1:5: not well-formed XML: a second root element"},
		{"an unbound prefix", "<p:a/>", `the prefix "p" of <p:a> is bound to no namespace`},
		{"an attribute twice", `<a x="1" x="2"/>`, "attribute x is written twice"},
		{"a prefix bound to none", `<a xmlns:p=""/>`, `xmlns:p="": a prefix must be bound to a namespace`},
		{"deep", strings.Repeat("<a>", MaxDepth+1), "nested more than 256 deep"},
		{"empty", "", "no root element"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// Where an element, an attribute and text are: line and column in
// characters (ü is one).
func TestPositions(t *testing.T) {
	root, err := Parse([]byte("<r>\n  <ü a='1'\n     bb=\"2\">x</ü></r>"))
	if err != nil {
		t.Fatal(err)
	}
	c := root.Children[0]
	if c.Pos != (Pos{2, 3}) || c.TagLine != 3 || c.AttrPos("a") != (Pos{2, 6}) || c.AttrPos("bb") != (Pos{3, 6}) || c.TextPos != (Pos{3, 13}) {
		t.Errorf("%v tag line %d, a %v, bb %v, text %v", c.Pos, c.TagLine, c.AttrPos("a"), c.AttrPos("bb"), c.TextPos)
	}
}
