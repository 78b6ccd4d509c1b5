package system

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"beamconnect/config"
	"beamconnect/internal/xsd"
	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/ssp"
)

// Live edits. A system's run is reloaded whole, as a config's is: BeamNG's
// config compiled again, and each FMU component's parameter values (the
// plan's model parameters, by component) retuned; prepared and tried off
// the message path (each FMU's new values on a scratch instance of it, as
// the fmu model tries them), then swapped in between two messages by a
// step that cannot fail. Anything that fails refuses all of it. What a run
// cannot change (components, connectors, connections) is refused by
// Restructured before a reload is tried.

// Rebind prepares the system for a reloaded plan: BeamNG's fields its
// connections write and read, found again by name in the new plan; each
// component whose parameters changed, retuned (fmumodel.FMU.Rebind).
// running and params are the plans' model parameters: each component's
// values by its name.
func (m *Model) Rebind(plan *ports.Plan, running, params models.Params) (func(), error) {
	for name := range params {
		if c, _ := m.sys.Component(name); c == nil || c.BeamNG {
			return nil, fmt.Errorf("the system has no FMU component %q to take parameters", name)
		}
	}
	beam, feeds, reads, err := m.beamNGEnds(plan)
	if err != nil {
		return nil, err
	}
	var commits []func()
	for _, rc := range m.steps {
		was, now := asValues(running[rc.comp.Name]), asValues(params[rc.comp.Name])
		if reflect.DeepEqual(was, now) {
			continue
		}
		commit, err := rc.fmu.Rebind(rc.plan, rc.comp.modelParams(was, m.inProcess), rc.comp.modelParams(now, m.inProcess))
		if err != nil {
			return nil, fmt.Errorf("component %s: %s", rc.comp.Name, strings.TrimPrefix(err.Error(), "model fmu: "))
		}
		commits = append(commits, commit)
	}
	return func() {
		for _, c := range commits {
			c()
		}
		for _, rc := range m.steps {
			rc.feeds = feeds[rc]
		}
		m.toBeamNG, m.beam, m.reads = beam.feeds, beam.conns, reads
		m.carry() // the coupling lays its recording out again after the commit
	}, nil
}

// asValues reads a component's parameters as a plan carries them.
func asValues(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// Restructured says what differs between a running system and a reloaded
// one that a run cannot take (its components, their FMUs and connectors,
// the connections and what they do to values), each placed at the element
// of the reloaded .ssd where it differs (where one was removed, the element
// that held it); none when only what a reload takes changed (parameter
// values, BeamNG's config).
func Restructured(was, now *System) config.Diagnostics {
	var ds config.Diagnostics
	file := now.display(now.Pkg.SSDFile)
	refuse := func(n *xsd.Node, what string) {
		ds = append(ds, ssp.Diag(file, n.Pos, pathOf(n), false, "cannot change while running (restart beamconnect for it): "+what))
	}
	names := func(s *System) []string {
		var out []string
		for _, c := range s.Components {
			out = append(out, c.Name)
		}
		return out
	}
	if a, b := names(was), names(now); !slices.Equal(a, b) {
		refuse(firstDiffering(len(a), len(b), func(i int) bool { return a[i] == b[i] }, func(i int) *xsd.Node { return now.Components[i].Node }, elementsOf(now)),
			fmt.Sprintf("the components (%s → %s)", strings.Join(a, ", "), strings.Join(b, ", ")))
		return ds
	}
	for i, a := range was.Components {
		b := now.Components[i]
		switch {
		case a.BeamNG != b.BeamNG || a.Vehicle != b.Vehicle:
			refuse(b.Node, "what the component "+a.Name+" is")
		case !a.BeamNG && (a.digest != b.digest || a.Interface != b.Interface):
			refuse(b.Node, "the FMU of "+a.Name)
		case connectors(a) != connectors(b):
			at := firstDiffering(len(a.Connectors), len(b.Connectors), func(k int) bool { return connector(a.Connectors[k]) == connector(b.Connectors[k]) },
				func(k int) *xsd.Node { return b.Connectors[k].Node }, b.Node)
			refuse(at, "the connectors of "+a.Name+" ("+connectors(a)+" → "+connectors(b)+")")
		}
	}
	if a, b := links(was), links(now); !slices.Equal(a, b) {
		refuse(firstDiffering(len(a), len(b), func(k int) bool { return a[k] == b[k] }, func(k int) *xsd.Node { return now.Links[k].Node }, connectionsOf(now)),
			"the connections ("+strings.Join(a, "; ")+" → "+strings.Join(b, "; ")+")")
	}
	return ds
}

// firstDiffering is the element of the reloaded file where two lists (of
// lengths la, lb) first differ: the reloaded list's element there (at),
// or, where the reloaded list is the shorter, the element that holds it.
func firstDiffering(la, lb int, same func(int) bool, at func(int) *xsd.Node, holder *xsd.Node) *xsd.Node {
	k := 0
	for k < min(la, lb) && same(k) {
		k++
	}
	if k < lb {
		return at(k)
	}
	return holder
}

// elementsOf is the <Elements> of s's system, connectionsOf its
// <Connections> (or the system, when it has none).
func elementsOf(s *System) *xsd.Node { return s.Components[0].Node.Parent }

func connectionsOf(s *System) *xsd.Node {
	sys := elementsOf(s).Parent
	if c := sys.Child("Connections"); c != nil {
		return c
	}
	return sys
}

func connectors(c *Component) string {
	var out []string
	for _, cn := range c.Connectors {
		out = append(out, connector(cn))
	}
	return strings.Join(out, ", ")
}

// connector says a connector as Restructured compares it: its name, kind
// and unit.
func connector(cn *Connector) string { return cn.Name + " " + cn.Kind + " " + unitName(cn.Unit) }

// unitName is a unit's name as messages say it, "no unit" for none.
func unitName(u unit) string {
	if u.name == "" {
		return "no unit"
	}
	return u.name
}

func links(s *System) []string {
	var out []string
	for _, l := range s.Links {
		d := fmt.Sprintf("%s.%s → %s.%s", s.Components[l.From].Name, l.FromConn.Name, s.Components[l.To].Name, l.ToConn.Name)
		if t := l.Transform; t != nil {
			d += fmt.Sprintf(" %s %v %v %v %v %v", t.Kind, t.Factor, t.Offset, t.BoolMap, t.IntMap, t.EnumMap)
		}
		if l.Units.on {
			d += fmt.Sprintf(" %s→%s", unitName(l.FromConn.Unit), unitName(l.ToConn.Unit))
		}
		out = append(out, d)
	}
	return out
}

// Reload moves a run of the system at path, whose structure is running's,
// to its files as they are now: the system checked whole again, refused
// when its structure changed, then handed to reload (the session's,
// coupling.Session.Reload), which retunes it all or nothing and counts
// what it refuses; refused counts a reload refused before (nil: none).
// The diagnostics are a system that is not valid now, or what of its
// structure changed (Restructured); err why nothing was applied otherwise.
func Reload(path string, running *System, reload func(*ports.Plan) (ports.Changes, error), refused func()) (ports.Changes, config.Diagnostics, error) {
	if refused == nil {
		refused = func() {}
	}
	sys, ds, err := Load(path)
	switch {
	case err != nil:
		refused()
		return ports.Changes{}, nil, err
	case sys == nil:
		refused()
		return ports.Changes{}, ds, nil
	}
	defer sys.Close()
	if ds := Restructured(running, sys); len(ds) > 0 {
		refused()
		return ports.Changes{}, ds, nil
	}
	ch, err := reload(sys.Plan)
	// A component's parameter, as the .ssv names it: controller.kp.
	ch.Params = strings.ReplaceAll(ch.Params, "beamng.modelParams.", "")
	return ch, nil, err
}
