package models

// Tuner is a Model whose parameters (beamng.modelParams) can change while
// it runs, as a Simulink user tunes a running model's parameters. A config
// reload that changes only parameters is checked with CheckTune before
// anything of it is applied, and applied with Tune between two messages.
type Tuner interface {
	// CheckTune reports whether params can replace the running parameters.
	// The error names every parameter that cannot change while the model
	// runs (restart-only) or has a bad value; nothing is applied then.
	CheckTune(params Params) error
	// Tune applies params, which CheckTune accepted. It runs on the
	// coupling's loop between two messages and must be quick.
	Tune(params Params)
}
