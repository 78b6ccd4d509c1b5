// Package draft writes a first config for a rig from what it starts from:
// a co-simulation CSV that BeamNG's Signal Editor saved (every row mapped),
// or an FMU (its inputs and outputs bound to the BeamNG signals they are
// named like, its parameters with their start values, a period it can
// run at). `beamconnect init` prints or writes what it drafts.
package draft

import (
	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"path/filepath"
)

type field struct {
	PropertyName string   `json:"propertyName"`
	Params       string   `json:"params,omitempty"`
	InitialValue *float64 `json:"initialValue,omitempty"`
}

type group struct {
	UpdatePeriodMs float64   `json:"updatePeriodMs"`
	Ports          [][]field `json:"ports"`
}

// FromCSV is a config that maps every row of a CSV: a port per group, in
// file order, the model "hold". iface is the CSV's path as the config
// names it (beamng.interface).
func FromCSV(f *cosim.File, iface string) any {
	period := f.Period(beamng.PhysicsDt) * 1000
	// A name needs its group where two groups of its section have it.
	qualify := func(rows []cosim.Row, r cosim.Row) string {
		for _, o := range rows {
			if o.Name == r.Name && o.Group != r.Group {
				return r.Group + "/" + r.Name
			}
		}
		return r.Name
	}
	portsOf := func(rows []cosim.Row, inputs bool) []group {
		if len(rows) == 0 {
			return []group{}
		}
		g := group{UpdatePeriodMs: period}
		index := map[string]int{}
		for _, r := range rows {
			k, ok := index[r.Group]
			if !ok {
				k = len(g.Ports)
				index[r.Group] = k
				g.Ports = append(g.Ports, nil)
			}
			jf := field{PropertyName: qualify(rows, r)}
			if inputs && r.Value != "value" {
				jf.Params = r.Value
				v := beamng.Gen2.Unset(beamng.Signal{Kind: r.Value})
				jf.InitialValue = &v
			}
			g.Ports[k] = append(g.Ports[k], jf)
		}
		return []group{g}
	}
	in, outs := portsOf(f.From, true), portsOf(f.To, false)
	return struct {
		Version float64        `json:"version"`
		Inputs  []group        `json:"inputs"`
		Outputs []group        `json:"outputs"`
		BeamNG  map[string]any `json:"beamng"`
	}{2, in, outs, map[string]any{"protocol": "csv", "interface": filepath.ToSlash(iface), "model": "hold"}}
}
