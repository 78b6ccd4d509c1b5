// Package config reads a rig's VS Connect-style JSON config: JSON syntax,
// the embedded JSON Schema, defaults and aliases (seconds or milliseconds,
// deprecated names), and the semantic checks that need BeamNG's catalogue.
// Every finding names file:line:col and the JSON path, and all of them come
// at once, in file order.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/contracts"
	"beamconnect/relative"

	"beamconnect/ports"
)

// Defaults that apply when a config does not say otherwise (design.md).
const (
	DefaultRemoteIP     = "127.0.0.1"
	DefaultRemotePort   = 64891 // BeamNG's udpReceivePort
	DefaultLocalIP      = "127.0.0.1"
	DefaultLocalPort    = 64890 // BeamNG's udpSendPort
	DefaultPeriod       = 0.005 // BeamNG's simulinkTime
	DefaultPingTime     = 1e-5  // BeamNG's pingTime
	DefaultTimeDilation = 1.0
)

// Config is a checked config with every default and alias applied. It is
// what Compile reads; nothing in it refers back to the JSON.
type Config struct {
	File         string
	Text         []byte  // the file's contents, as parsed
	TimeDilation float64 // ≤ 0: unthrottled
	RemoteObject string  // top-level default, "" when unset
	Protocol     *beamng.Protocol
	ReplyID      ports.ReplyID
	PhysicsDt    float64 // seconds
	PingTime     float64 // seconds
	DebugFile    bool
	BusyPoll     bool // beamng.busyPoll
	// RealTime is beamng.realTime: a model's step is bounded by its
	// deadline, and a message whose step is late gets neutral controls
	// (for a rig that drives hardware). false, the default, is lockstep: a
	// late step slows BeamNG and never changes what it gets.
	RealTime    bool
	Model       string         // "hold" unless the config names one
	ModelParams map[string]any // float64, bool, string, []string or map[string]any values
	// ModelTimeout is how long a model's step may go without an answer
	// before it is a fault, in seconds (beamng.modelTimeoutMs); 0 means the
	// default (see ports.Plan.ModelTimeout).
	ModelTimeout float64
	// Vehicles are the coupled vehicles, at least one. Each has its own
	// message layout: with Gen 2 each its own CSV.
	Vehicles []Vehicle
	// Period is the coupling period: how often BeamNG sends, in seconds, a
	// whole number of physics steps, the same for every vehicle: the
	// fastest contract's (Gen 1), or what the CSVs' computation time comes
	// to (Gen 2). PingTime is the config's (Gen 1) or the first vehicle's
	// CSV's (Gen 2); each vehicle's window is its Unanswered.
	Period  float64
	Inputs  []Group // data to BeamNG
	Outputs []Group // data from BeamNG
	// Quality lists the controlled quantities beamng.quality names, whose
	// names Compile resolves.
	Quality []Loop
	// FailOnControl is beamng.failOn's "control": run exits non-zero when
	// a loop's verdict is not good.
	FailOnControl bool
	Warnings      Diagnostics

	ix *index // where each value sits in the file, for Locate
}

// CSVPaths lists the CSV files the config depends on besides itself: each
// vehicle's interface with Gen 2, in vehicle order; none with Gen 1. A run
// that reloads the config when its file changes watches these too, and
// re-reads the config when one of them changes.
func (c *Config) CSVPaths() []string {
	var out []string
	for _, v := range c.Vehicles {
		if v.CSV != nil {
			out = append(out, v.CSV.Path)
		}
	}
	return out
}

// Limits beyond which a config is refused: past them the coupling cannot
// work as BeamNG's protocol expects.
const (
	// MaxCouplingPeriod bounds BeamNG's send period: beamconnect takes
	// 1.9 s without a message for BeamNG's 2 s blocking timeout, so BeamNG
	// must send several times a second.
	MaxCouplingPeriod = 0.5
	// MinTimeDilation is the slowest master pacing: 1000× slower than real time.
	MinTimeDilation = 0.001
	// LockstepReplyLimitMs is how late a reply may be and still be BeamNG's:
	// it waits 2 s for one, and beamconnect takes 1.9 s without a message
	// for that timeout (a later reply is withheld).
	LockstepReplyLimitMs = 1900
	// LockstepModelTimeoutMs is the model timeout in lockstep (no
	// beamng.realTime) unless the config sets one: a step may take that
	// long before it is a fault, which leaves its neutral reply 0.4 s to
	// reach BeamNG within its 2 s wait.
	LockstepModelTimeoutMs = ports.LockstepModelTimeout * 1000
)

// Locate is the position and display path of the value at JSON Pointer
// ptr in the config file (the nearest enclosing value when ptr is absent),
// for findings made after Parse, such as a model's parameters.
func (c *Config) Locate(ptr string) (Pos, string) {
	if c.ix == nil {
		return Pos{1, 1}, ""
	}
	ix := *c.ix // its own cursor, so concurrent calls share no state
	return ix.value(ptr)
}

// Vehicle is one coupled vehicle and its socket pair.
type Vehicle struct {
	Name   string         // its remoteObject; "" for the single vehicle of a config without beamng.vehicles
	Local  netip.AddrPort // beamconnect binds this; BeamNG sends here
	Remote netip.AddrPort // BeamNG's coupling binds this; beamconnect replies here
	// Layout is the vehicle's message layout: beamng.Fixed for Gen 1, its
	// CSV's for Gen 2 (CSV, nil for Gen 1).
	Layout *beamng.Layout
	CSV    *cosim.File
	// Unanswered is how many messages BeamNG lets this vehicle have in
	// flight before it blocks: ceil(pingTime / period), with Gen 2 from
	// the vehicle's CSV as BeamNG decodes it (lpack).
	Unanswered int
}

// Group is one port group: a contract, or a commData group.
type Group struct {
	Path     string // e.g. "outputs[0]"
	Pos      Pos
	Dir      beamng.Direction
	CommData bool
	Schedule contracts.Schedule // zero for commData groups
	TimeSync bool               // timeSyncMode "absolute"
	Overdue  float64            // seconds past the expected arrival; < 0: detection off
	Ports    []Port
}

// Port is one vector port of the model: its fields side by side.
type Port struct {
	Path   string
	Pos    Pos
	Fields []Field
}

// Field is one field of a port.
type Field struct {
	Path         string
	Pos          Pos
	PropertyName string         // as written
	Meta         contracts.Meta // NotMeta for a signal of BeamNG's message
	// Relative is a cross-vehicle ("function") property of this field's
	// vehicle to vehicle Other (params); None for others.
	Relative     relative.Property
	Other        int
	Signal       beamng.Signal // the first slot, for signal fields
	ArraySize    int
	Vehicle      int    // index into Config.Vehicles
	RemoteObject string // resolved: the field's, its group's or the top-level one
	InitialValue float64
	InvalidValue float64
	Params       string
}

// Load reads and checks the config file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Parse checks data, the contents of the config named file. On success the
// Config carries the warnings; otherwise the error is a Diagnostics holding
// every error and warning in file order.
func Parse(file string, data []byte) (*Config, error) {
	return parse(&parser{file: file}, data)
}

// LoadJSONFirst reads a Gen 2 config written JSON-first, before its CSV exists:
// the layout is made from the fields themselves (signalTo rows from the
// outputs, signalFrom rows from the inputs, names resolved against BeamNG's
// catalogue), the addresses and period from the config. It is what
// `beamconnect csv` writes a CSV from.
func LoadJSONFirst(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(&parser{file: path, jsonFirst: true}, data)
}

func parse(p *parser, data []byte) (*Config, error) {
	// Windows editors may start a UTF-8 file with a byte order mark, which
	// JSON does not allow; it is not worth an error.
	body := trimBOM(data)
	base := len(data) - len(body)
	ix, err := newIndex(data, base)
	p.ix = ix
	if err != nil {
		se := err.(*syntaxError)
		p.add(Error, ix.pos(se.off), "", se.msg)
		return nil, p.diags
	}
	for _, d := range ix.dups {
		pos, path := ix.pos(d.off), ix.nodes[d.ptr].path
		p.add(Error, pos, path, fmt.Sprintf("key given twice; the first is at %v and JSON readers silently keep only the last", ix.pos(d.first)))
	}

	for _, o := range ix.overflows {
		p.add(Error, ix.pos(o.off), o.path, fmt.Sprintf("%s is out of range: expected a number a double can hold (magnitude below 1.8e308)", o.text))
	}
	var doc any
	if err := jsonUnmarshalNumber(body, &doc); err != nil {
		p.add(Error, Pos{1, 1}, "", "invalid JSON: "+err.Error()) // the index walk already accepted it; not expected
		return nil, p.diags
	}
	before := len(p.diags)
	p.validateSchema(doc)
	if len(ix.overflows) > 0 {
		// A schema bound broken by 1e400 only repeats the overflow.
		kept := p.diags[:before]
		for _, d := range p.diags[before:] {
			if !slices.ContainsFunc(ix.overflows, func(o overflow) bool { return o.path == d.Path }) {
				kept = append(kept, d)
			}
		}
		p.diags = kept
	}
	schemaErrs := len(p.diags)
	// Decode what the schema let through. Even when it found errors the
	// semantic checks still run, so a user sees every problem in one pass,
	// as long as the values have the types the checks rely on.
	var raw rawConfig
	if len(ix.overflows) > 0 {
		p.diags.sortByPosition(p.file)
		return nil, p.diags
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		if schemaErrs == 0 {
			// The schema and rawConfig disagree: a defect in beamconnect.
			p.add(Error, Pos{1, 1}, "", "internal error: the schema accepted what the decoder refuses: "+err.Error())
		}
		p.diags.sortByPosition(p.file)
		return nil, p.diags
	}
	cfg := p.resolve(&raw)
	cfg.ix = ix
	p.diags = p.diags.without(schemaErrs)
	p.diags.sortByPosition(p.file, cfg.CSVPaths()...)
	if p.diags.Errors() > 0 {
		return nil, p.diags
	}
	cfg.Warnings = p.diags
	cfg.Text = data
	return cfg, nil
}

func trimBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) }

// jsonUnmarshalNumber decodes keeping numbers as json.Number, the form the
// schema validator wants (go-notes §1.1).
func jsonUnmarshalNumber(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}

type parser struct {
	file      string
	ix        *index
	diags     Diagnostics
	jsonFirst bool // Gen 2 without its CSV: lay it out from the fields (LoadJSONFirst)
	// vptrs is where each vehicle is configured: "/beamng" for the one
	// vehicle of a config without beamng.vehicles, else its entry there.
	vptrs []string
	rows  []rowIndex // Gen 2: each vehicle's CSV rows by name
}

func (p *parser) add(sev Severity, pos Pos, path, msg string) {
	p.diags = append(p.diags, Diagnostic{File: p.file, Pos: pos, Path: path, Severity: sev, Msg: msg})
}

// at reports a finding about the value at the JSON Pointer ptr.
func (p *parser) at(sev Severity, ptr string, format string, args ...any) {
	pos, path := p.ix.value(ptr)
	p.add(sev, pos, path, fmt.Sprintf(format, args...))
}

// atKey reports a finding about the member name at ptr, for findings about a
// key being there at all (deprecated, given twice, conflicting).
func (p *parser) atKey(sev Severity, ptr string, format string, args ...any) {
	pos, path := p.ix.key(ptr)
	p.add(sev, pos, path, fmt.Sprintf(format, args...))
}

// The file as written. Optional values are pointers so that "absent" and
// "zero" stay apart; numbers are float64 because JSON Schema's integer also
// admits 64890.0.
type rawConfig struct {
	Schema       string     `json:"$schema"`
	Version      float64    `json:"version"`
	TimeDilation *float64   `json:"timeDilation"`
	RemoteIP     *string    `json:"remoteIP"`
	RemotePort   *float64   `json:"remotePort"`
	RemoteObject *string    `json:"remoteObject"`
	Inputs       []rawGroup `json:"inputs"`
	Outputs      []rawGroup `json:"outputs"`
	BeamNG       *rawBeamNG `json:"beamng"`
}

type rawGroup struct {
	GroupType            *string      `json:"groupType"`
	RemoteObject         *string      `json:"remoteObject"`
	UpdatePeriod         *float64     `json:"updatePeriod"`
	UpdatePeriodMs       *float64     `json:"updatePeriodMs"`
	TimeSyncMode         *string      `json:"timeSyncMode"`
	OverdueDataTimeout   *float64     `json:"overdueDataTimeout"`
	OverdueDataTimeoutMs *float64     `json:"overdueDataTimeoutMs"`
	BlockTimeThreshold   *float64     `json:"blockTimeThreshold"`
	BlockTimeThresholdMs *float64     `json:"blockTimeThresholdMs"`
	Ports                [][]rawField `json:"ports"`
}

type rawField struct {
	RemoteObject *string  `json:"remoteObject"`
	PropertyName string   `json:"propertyName"`
	PropertyType *string  `json:"propertyType"`
	DataType     *string  `json:"dataType"`
	DataSize     *float64 `json:"dataSize"`
	ArraySize    *float64 `json:"arraySize"`
	InitialValue *float64 `json:"initialValue"`
	InvalidValue *float64 `json:"invalidValue"`
	Params       *string  `json:"params"`
}

type rawBeamNG struct {
	Protocol       *string                `json:"protocol"`
	Interface      *string                `json:"interface"`
	LocalIP        *string                `json:"localIP"`
	LocalPort      *float64               `json:"localPort"`
	ReplyID        *string                `json:"replyId"`
	PhysicsDt      *float64               `json:"physicsDt"`
	PingTime       *float64               `json:"pingTime"`
	DebugFile      *bool                  `json:"debugFile"`
	BusyPoll       *bool                  `json:"busyPoll"`
	RealTime       *bool                  `json:"realTime"`
	Model          *string                `json:"model"`
	ModelTimeoutMs *float64               `json:"modelTimeoutMs"`
	ModelParams    map[string]any         `json:"modelParams"`
	Quality        json.RawMessage        `json:"quality"`
	FailOn         []string               `json:"failOn"`
	Vehicles       map[string]*rawVehicle `json:"vehicles"`
}

type rawVehicle struct {
	Interface  *string  `json:"interface"`
	LocalIP    *string  `json:"localIP"`
	LocalPort  *float64 `json:"localPort"`
	RemoteIP   *string  `json:"remoteIP"`
	RemotePort *float64 `json:"remotePort"`
}
