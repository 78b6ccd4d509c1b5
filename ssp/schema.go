package ssp

import (
	"embed"
	"fmt"
	"sync"

	"beamconnect/config"
	"beamconnect/internal/xsd"
)

// schemas are SSP 2.0's XML Schemas, unmodified (schema/README.md).
//
//go:embed schema/*.xsd
var schemas embed.FS

// The kinds of document, each checked against its schema.
type docKind int

const (
	docSSD docKind = iota
	docSSV
	docSSM
)

var docSchemas = [...]string{docSSD: "SystemStructureDescription.xsd", docSSV: "SystemStructureParameterValues.xsd", docSSM: "SystemStructureParameterMapping.xsd"}

// What each kind's root element is, for messages.
var docRoots = [...]string{docSSD: "ssd:SystemStructureDescription", docSSV: "ssv:ParameterSet", docSSM: "ssm:ParameterMapping"}

var compiled [3]struct {
	once   sync.Once
	schema *xsd.Schema
	err    error
}

// schemaOf is the compiled schema of a kind of document.
func schemaOf(kind docKind) *xsd.Schema {
	c := &compiled[kind]
	c.once.Do(func() { c.schema, c.err = xsd.Compile(schemas, "schema/"+docSchemas[kind]) })
	if c.err != nil {
		panic(fmt.Sprintf("ssp: the embedded schema %s: %v", docSchemas[kind], c.err)) // a defect, caught by the tests
	}
	return c.schema
}

// parseValid reads a document and checks it against its kind's schema:
// the root element, or nil and why not.
func parseValid(file string, data []byte, kind docKind) (*xsd.Node, config.Diagnostics) {
	root, err := xsd.Parse(data)
	if err != nil {
		pos := xsd.Pos{Line: 1, Col: 1}
		msg := err.Error()
		if e, ok := err.(*xsd.Error); ok {
			pos, msg = e.Pos, e.Msg
		}
		return nil, config.Diagnostics{Diag(file, pos, "", false, msg)}
	}
	if ds := validate(file, root, kind); len(ds) > 0 {
		return nil, ds
	}
	return root, nil
}

// validate checks an element against kind's schema, as its root.
func validate(file string, root *xsd.Node, kind docKind) config.Diagnostics {
	var ds config.Diagnostics
	for _, e := range schemaOf(kind).Validate(root) {
		ds = append(ds, Diag(file, e.Pos, "", false, e.Msg+" (the SSP 2.0 schema, "+docSchemas[kind]+")"))
	}
	return ds
}

// SchemaFS is the embedded schemas, for tests that hand them to another
// validator (xmllint).
func SchemaFS() embed.FS { return schemas }
