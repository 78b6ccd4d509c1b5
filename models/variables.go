package models

// Variable is one of a model's own values, which a recording keeps and the
// live page shows under the model's name for it, with its unit and what it
// is: an FMU's output, local or parameter, a value an exec program names,
// a built-in controller's internal signal.
type Variable struct {
	Name        string // as the model names it: h, der(h), y[2]
	Unit        string // "" when it has none
	Description string
	// Kind says what it is to the model: "output", "local", "parameter",
	// "input" (an FMU's causality), "signal" (a built-in's).
	Kind string
	// Component is the component of a system (package system) whose
	// connector it is: the recording names it Component.Name
	// (controller.demand), not model.Name.
	Component string
	// Drives says the variable drives the input port element At (data to
	// BeamNG): that field's column is named after the variable, and shows
	// what the reply carried. A variable that drives nothing has a column
	// of its own.
	Drives bool
	At     Ref
	// Carried says the variable is port element At itself as BeamNG's side
	// carried it (a system's connectors of BeamNG's): an input element (a
	// control) as the reply carried it, an output element (FromBeamNG) as
	// BeamNG's message did. The coupling records that value, not Sample's,
	// so the column is what BeamNG got or sent whatever the model's step
	// did (a fault's neutral controls included).
	Carried    bool
	FromBeamNG bool
}

// Sampler is a Model with variables of its own to record: the coupling
// records and shows them beside the ports, without knowing what kind of
// model it steps.
//
// Variables lists them. It returns the same slice, unchanged, until they
// change (a Rebind's commit, a program that names its values): the
// coupling compares the slice it got last with the one it gets (the same
// first element and length) and lays the recording out again only when
// they differ. Sample writes each variable's value after the model's
// latest step into values (len(Variables()) of them; NaN for one the model
// has no value of yet). Both are called on the coupling's loop, between
// steps, after every message; neither may allocate or block.
type Sampler interface {
	Variables() []Variable
	Sample(values []float64)
}

// SameVariables reports whether a and b are the same list as Variables
// returns it: the same slice, not only equal contents.
func SameVariables(a, b []Variable) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// LateSampler is a Sampler whose variables are named by something that
// starts after the model does: an exec program names them in its first
// lines. VariablesPending is true until they are known (the program has
// said something), and the recording holds its first rows back meanwhile
// (for a bounded time), so that they come under the names too rather
// than in a file of their own.
type LateSampler interface {
	Sampler
	VariablesPending() bool
}
