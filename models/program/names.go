package program

import (
	"fmt"
	"math"
	"strings"

	"beamconnect/models"
	"beamconnect/ports"
)

// A program names its answers' values with a line of its own, as
// beamconnect names its requests' (NamesProtocol): the recording and the
// live page then show them under its names, and values it appends after
// the inputs are recorded, not sent.

// NamesProtocol documents a program's "# columns:" line for run --help.
const NamesProtocol = `A program may name what it answers, with a line of its own before its
answers (and again after a reload):

  "# columns: directive NAME[UNIT] … NAME[UNIT] …"

a name per number of its answers: the directive's, then one per input port
element (the recording and the live page show that field under the name
and unit; "-" keeps the config's), then any number of names for values
the program appends to every answer after the inputs: BeamNG does not get
them; they are recorded (model.NAME) and shown. "[UNIT]" is optional; a
name has no spaces. From that line on, answers must have that many
numbers.`

// declaration is what a program's "# columns:" line says, as read.
type declaration struct {
	text  string   // the line, to tell a repeat from a change
	names []string // the inputs' names ("" keeps the config's), then the appended values'
	units []string
	extra int // values appended after the inputs
}

// declare reads a program's "# columns:" line for answers of width
// numbers; msg says why it is not usable.
func declare(line string, width int) (*declaration, string) {
	rest, ok := strings.CutPrefix(line, "# columns:")
	if !ok {
		return nil, ""
	}
	fields := strings.Fields(rest)
	if len(fields) < width {
		return nil, fmt.Sprintf("the program's \"# columns:\" line names %d values, its answers have at least %d (the directive, then every input port element): ignored", len(fields), width)
	}
	d := &declaration{text: line, extra: len(fields) - width}
	for _, f := range fields[1:] {
		name, unit := f, ""
		if i := strings.IndexByte(f, '['); i > 0 && strings.HasSuffix(f, "]") {
			name, unit = f[:i], f[i+1:len(f)-1]
		}
		if name == "-" {
			name = ""
		}
		d.names = append(d.names, name)
		d.units = append(d.units, unit)
	}
	return d, ""
}

// inputRefs are the input port elements in answer order after the
// directive: ports 1 on.
func inputRefs(plan *ports.Plan) []models.Ref {
	var out []models.Ref
	for _, p := range plan.Inputs[1:] {
		for e := range p.Width {
			out = append(out, models.Ref{Port: p.Number, Elem: e})
		}
	}
	return out
}

// Variables are the values the program named (NamesProtocol): those of
// the inputs it named, then those it appends. They change when it names
// them anew, or a reload moves the inputs.
func (m *Exec) Variables() []models.Variable {
	d := m.declared.Load()
	if d == m.varsOf && m.varsGen == m.gen {
		return m.vars
	}
	m.varsOf, m.varsGen = d, m.gen
	m.vars, m.varIdx = nil, nil
	if d == nil {
		return nil
	}
	refs := m.refs
	for i, name := range d.names {
		switch {
		case i < len(refs) && name != "":
			m.vars = append(m.vars, models.Variable{Name: name, Unit: d.units[i], Kind: "output", Drives: true, At: refs[i]})
		case i >= len(refs):
			m.vars = append(m.vars, models.Variable{Name: name, Unit: d.units[i], Kind: "output",
				Description: "a value the program appends to its answers"})
		default:
			continue
		}
		m.varIdx = append(m.varIdx, 1+i) // after the directive
	}
	return m.vars
}

// VariablesPending is true until the program has said anything since it
// first started: until then whether it names its values is not known.
func (m *Exec) VariablesPending() bool { return !m.everSpoke.Load() }

// Sample writes the named values of the latest answer taken.
func (m *Exec) Sample(values []float64) {
	for k, i := range m.varIdx {
		if k >= len(values) {
			return
		}
		values[k] = math.NaN()
		if i < len(m.stepAns) {
			values[k] = m.stepAns[i]
		}
	}
}
