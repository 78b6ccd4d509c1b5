// Package schemas holds the JSON Schema of beamconnect's config, embedded in
// the binary so validation never depends on files beside it. Editors read the
// same file through a config's "$schema" key.
package schemas

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ConfigJSON is the schema document (draft 2020-12).
//
//go:embed config.schema.json
var ConfigJSON []byte

// ConfigURL is the schema's $id; validation error locations start with it.
const ConfigURL = "https://beamconnect.invalid/schemas/config.schema.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(ConfigURL, bytes.NewReader(ConfigJSON)); err != nil {
		return nil, fmt.Errorf("schemas: loading the config schema: %w", err)
	}
	s, err := c.Compile(ConfigURL)
	if err != nil {
		return nil, fmt.Errorf("schemas: compiling the config schema: %w", err)
	}
	return s, nil
})

// Config is the compiled config schema, built once. A compiled schema is safe
// for concurrent validation.
func Config() *jsonschema.Schema {
	s, err := compiled()
	if err != nil {
		// The schema ships inside the binary and a test compiles it: this is
		// a build defect, not a user error.
		panic(err)
	}
	return s
}

// Properties lists the keys the schema allows at a schema location such as
// "#/$defs/portGroup" (the location of an "additionalProperties" failure
// without its last element), so an unknown key can be answered with the
// nearest allowed one.
func Properties(fragment string) []string {
	node := schemaTree()
	for _, tok := range splitPointer(fragment) {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[tok]
	}
	m, _ := node.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	return keys
}

var schemaTree = sync.OnceValue(func() any {
	var v any
	if err := json.Unmarshal(ConfigJSON, &v); err != nil {
		panic(fmt.Errorf("schemas: %w", err))
	}
	return v
})

// splitPointer splits a JSON Pointer fragment ("#/$defs/field") into its
// unescaped tokens.
func splitPointer(fragment string) []string {
	p := strings.TrimPrefix(strings.TrimPrefix(fragment, "#"), "/")
	if p == "" {
		return nil
	}
	toks := strings.Split(p, "/")
	for i, t := range toks {
		toks[i] = unescape.Replace(t)
	}
	return toks
}

var unescape = strings.NewReplacer("~1", "/", "~0", "~")
