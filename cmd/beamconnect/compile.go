package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/models/kinds"
	"beamconnect/ports"
	"beamconnect/ssp"
)

var cmdCompile = &command{
	name:    "compile",
	args:    "FILE",
	summary: "show how a config maps onto BeamNG's messages, and the command that starts BeamNG's side",
	help: `Prints the compiled plan as a table, one row per port element: which slot of
BeamNG's message (and which bank reference) it reads or writes, its unit and its
contract. Then how to couple a real BeamNG.tech with the config's values filled
in, per vehicle: the line to type into BeamNG's Lua console (or, for Gen 2, the
Co-Simulation Signal Editor's steps), the same line for BeamNGpy's
vehicle.queue_lua_command, how to stop both sides, where the debug logs go,
and for two machines the addresses and firewall rules. docs/beamng.md is the
whole guide. Warnings go to stderr; an invalid config prints its errors and
exits 1.

For a system (an .ssp, or an .ssd with its files), first the system: its
components and how each FMU runs (its interface, its communication step,
multi-rate), the connections and what they do to values (units converted,
transformations), the order the FMUs are stepped in at every BeamNG message,
the parameters and where each is set; then BeamNG's config as above.`,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		fs.Bool("json", false, "print the plan as one JSON object")
		return compileCmd
	},
}

func compileCmd(c *call) int {
	if len(c.args) != 1 {
		fmt.Fprintf(c.stderr, "%s compile: expected exactly one config file, got %d\nRun '%s compile --help' for usage.\n", programName, len(c.args), programName)
		return exitUsage
	}
	plan, r, code := loadPlan(c, c.args[0])
	if plan == nil {
		return code
	}
	if ssp.IsSystem(c.args[0]) {
		return compileSystem(c, plan, r) // system.go
	}
	if c.json {
		writeJSON(c.stdout, planJSON(plan, r.Diagnostics))
		return exitOK
	}
	printPlan(c.stdout, plan, plan.Source)
	return exitOK
}

// printPlanHead is the plan's first lines: the protocol, the layout and
// BeamNG's timing, per vehicle for a Gen 2 fleet.
func printPlanHead(w io.Writer, p *ports.Plan) {
	v0 := p.Vehicles[0]
	switch {
	case v0.CSV != nil && len(p.Vehicles) > 1:
		fmt.Fprintf(w, "%s: BeamNG Gen 2 (cosimulationCoupling) coupling of %d vehicles, each laid out by its own CSV\n", p.Source, len(p.Vehicles))
		fmt.Fprintf(w, "  BeamNG sends every %s (%d physics steps of %s; sendSkips %d) for every vehicle\n",
			ms(p.Period), p.SendSkips+1, ms(p.PhysicsDt), p.SendSkips)
		for _, v := range p.Vehicles {
			fmt.Fprintf(w, "  vehicle %q: %s: BeamNG sends %d doubles and reads %d; 3rd Party Computation Time %s arrives as %s; at most %d in flight\n",
				v.Name, v.CSV.Path, v.Layout.Len(beamng.FromBeamNG), v.Layout.Len(beamng.ToBeamNG),
				cosim.LuaText(v.CSV.Time.Value), strconv.FormatFloat(cosim.Arrived(v.CSV.Time.Value), 'g', -1, 64), v.Unanswered)
		}
	case v0.CSV != nil:
		fmt.Fprintf(w, "%s: BeamNG Gen 2 (cosimulationCoupling) coupling laid out by %s\n", p.Source, v0.CSV.Path)
		fmt.Fprintf(w, "  BeamNG sends %d doubles and reads %d (1 + its signalTo and signalFrom rows)\n",
			v0.Layout.Len(beamng.FromBeamNG), v0.Layout.Len(beamng.ToBeamNG))
		fmt.Fprintf(w, "  BeamNG sends every %s (3rd Party Computation Time %s arrives as %s: %d physics steps of %s; sendSkips %d), at most %d in flight\n",
			ms(p.Period), cosim.LuaText(v0.CSV.Time.Value), strconv.FormatFloat(cosim.Arrived(v0.CSV.Time.Value), 'g', -1, 64),
			p.SendSkips+1, ms(p.PhysicsDt), p.SendSkips, v0.Unanswered)
	default:
		fmt.Fprintf(w, "%s: BeamNG Gen 1 (%s) coupling\n", p.Source, p.Protocol)
		fmt.Fprintf(w, "  BeamNG sends every %s (%d physics steps of %s; sendSkips %d), at most %d in flight\n",
			ms(p.Period), p.SendSkips+1, ms(p.PhysicsDt), p.SendSkips, p.Unanswered)
	}
	fmt.Fprintf(w, "  reply id: %s, time sync: %s, time dilation: %v\n", p.ReplyID, p.TimeSync, p.TimeDilation)
	fmt.Fprintf(w, "  model steps: %s\n", modeLine(p))
	for _, n := range kinds.Describe(p.Model, p.ModelParams, p) {
		fmt.Fprintf(w, "  model %s: %s\n", p.Model, n)
	}
	fmt.Fprintln(w)
}

// modeLine says what a late model step does in the plan's mode.
func modeLine(p *ports.Plan) string {
	timeout := fmt.Sprintf("%s (%s)", ms(p.ModelTimeout), p.ModelTimeoutFrom)
	if !p.RealTime {
		return "lockstep: each reply waits for the model's step on its message; a slow step slows BeamNG, a step not answered within " + timeout + " is a fault"
	}
	deadline := fmt.Sprintf("%s (80 %% of the period)", ms(0.8*p.Period))
	if d, ok := p.ModelParams["deadlineMs"].(float64); ok {
		deadline = fmt.Sprintf("%s (modelParams.deadlineMs)", ms(d/1000))
	}
	return "real time (beamng.realTime): a step is awaited up to its deadline, " + deadline + ", then its message gets neutral controls; a step not answered within " + timeout + " is a fault"
}

// printPlan prints the plan p as a table, then how to couple a real
// BeamNG.tech with it, run being the file `beamconnect run` takes (the
// config, or the system whose BeamNG it is).
func printPlan(w io.Writer, p *ports.Plan, run string) {
	v0 := p.Vehicles[0]
	printPlanHead(w, p)
	several := len(p.Vehicles) > 1
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	refHead := "BANK"
	if v0.CSV != nil {
		refHead = "CSV ROW"
	}
	fmt.Fprint(tw, "PORT\tELEM\tFIELD\tDIRECTION\tSLOT\t"+refHead+"\tUNIT\tCONTRACT")
	if several {
		fmt.Fprint(tw, "\tVEHICLE")
	}
	fmt.Fprintln(tw)
	for _, side := range []struct {
		label string
		ports []ports.Port
		dir   beamng.Direction
	}{{"in", p.Inputs, beamng.ToBeamNG}, {"out", p.Outputs, beamng.FromBeamNG}} {
		for _, port := range side.ports {
			contract := "-"
			if port.Contract >= 0 {
				ct := p.Contracts[port.Contract]
				contract = ct.Name
				if !ct.CommData && ct.Schedule.Every > 1 {
					contract += " every " + ms(ct.Schedule.Period)
				}
			}
			for fi := range port.Fields {
				f := &port.Fields[fi]
				vehicle := p.Vehicles[f.Vehicle].Name
				if f.Source == ports.DirectiveSource || f.Source == ports.StatusSource {
					vehicle = "all" // one link state for the whole coupling
				}
				for k := range f.Width {
					name, dirText, slot, ref, unit := f.Name, "", "-", "-", ""
					switch f.Source {
					case ports.Slot:
						s := f.Signal(side.dir, k)
						name, slot, ref, unit = s.Name, strconv.Itoa(s.Index), s.Ref, s.Unit
						if s.Group != "" {
							name = s.Group + "/" + s.Name
							if s.Kind != "" && s.Kind != "value" {
								name += " (" + s.Kind + ")"
							}
						}
						dirText = side.dir.String()
						if ref == "" {
							ref = "id"
						}
					case ports.Relative:
						name, dirText, unit = f.Label(p), "relative", f.Relative.Unit()
					case ports.Meta:
						name = f.Meta.String()
						if f.Width > 1 {
							name += "[" + strconv.Itoa(k) + "]"
						}
						dirText, unit = "meta", metaUnit(f)
					case ports.DirectiveSource, ports.StatusSource:
						dirText = "link"
					}
					if unit == "" {
						unit = "-"
					}
					fmt.Fprintf(tw, "%s %d\t%d\t%s\t%s\t%s\t%s\t%s\t%s",
						side.label, port.Number, f.Offset+k, name, dirText, slot, ref, unit, contract)
					if several {
						fmt.Fprintf(tw, "\t%s", vehicle)
					}
					fmt.Fprintln(tw)
				}
			}
		}
	}
	tw.Flush()
	fmt.Fprintln(w, "\nin 0 is the connection directive: 0 disconnects, anything else (the default, 1) connects.")
	fmt.Fprintln(w, "out 0 is the connection status: 0 unknown, 1 unconnected, 2 connecting, 3 connected, 4 error, 5 disconnecting.")
	if v0.CSV != nil {
		fmt.Fprintln(w, "Reply rows no input maps carry a neutral value (multiply 1; value, add and freeze 0), applied by BeamNG every step.")
		fmt.Fprintln(w, "BeamNG's Gen 2 has no NaN filter: a NaN or Inf from the model is replaced by the last value sent.")
	} else {
		fmt.Fprintln(w, "Reply slots no input maps are sent as NaN: BeamNG keeps their previous value.")
	}
	printStartGuide(w, p, run)
}

func metaUnit(f *ports.Field) string {
	switch f.Meta.String() {
	case "time", "receive_time_offset":
		return "s"
	}
	return ""
}

// ms formats seconds as milliseconds without float noise.
func ms(s float64) string {
	return strconv.FormatFloat(float64(int64(s*1e9+0.5))/1e6, 'f', -1, 64) + " ms"
}

type planField struct {
	Name    string  `json:"name"`
	Source  string  `json:"source"`
	Slot    *int    `json:"slot,omitempty"`
	Ref     string  `json:"bank_ref,omitempty"`
	Unit    string  `json:"unit,omitempty"`
	Meta    string  `json:"meta,omitempty"`
	Width   int     `json:"width"`
	Offset  int     `json:"offset"`
	Initial float64 `json:"initial_value"`
	Invalid float64 `json:"invalid_value"`
	Vehicle string  `json:"vehicle,omitempty"`
	Config  string  `json:"config_path,omitempty"`
}

type planPort struct {
	Port     int         `json:"port"`
	Width    int         `json:"width"`
	Contract string      `json:"contract,omitempty"`
	Fields   []planField `json:"fields"`
}

func planJSON(p *ports.Plan, warnings []jsonDiag) any {
	type vehicle struct {
		Name         string `json:"name"`
		Local        string `json:"local"`
		Remote       string `json:"remote"`
		Interface    string `json:"interface,omitempty"` // Gen 2: its CSV
		Unanswered   int    `json:"unanswered"`
		StartCommand string `json:"start_command"`
		StopCommand  string `json:"stop_command"`
		MappedSlots  []int  `json:"mapped_reply_slots"`
	}
	type contract struct {
		Name     string  `json:"name"`
		Dir      string  `json:"direction"`
		CommData bool    `json:"comm_data"`
		PeriodS  float64 `json:"period_s,omitempty"`
		Every    int     `json:"every_messages,omitempty"`
		TimeSync bool    `json:"time_sync"`
		OverdueS float64 `json:"overdue_s"`
		Ports    []int   `json:"ports"`
	}
	var vs []vehicle
	for i, v := range p.Vehicles {
		var mapped []int
		for s, x := range v.Template[1:] {
			if x == x { // not NaN: a field maps the slot
				mapped = append(mapped, s+1)
			}
		}
		iface := ""
		if v.CSV != nil {
			iface = v.CSV.Path
		}
		vs = append(vs, vehicle{v.Name, v.Local.String(), v.Remote.String(), iface, v.Unanswered, p.StartCommand(i), stopCommand(p), mapped})
	}
	var cs []contract
	for _, c := range p.Contracts {
		dir := "out"
		if c.Dir == beamng.ToBeamNG {
			dir = "in"
		}
		cs = append(cs, contract{c.Name, dir, c.CommData, c.Schedule.Period, c.Schedule.Every, c.TimeSync, c.Overdue, c.Ports})
	}
	conv := func(list []ports.Port, dir beamng.Direction) []planPort {
		var out []planPort
		for _, port := range list {
			pp := planPort{Port: port.Number, Width: port.Width, Fields: []planField{}}
			if port.Contract >= 0 {
				pp.Contract = p.Contracts[port.Contract].Name
			}
			for i := range port.Fields {
				f := &port.Fields[i]
				pf := planField{Name: f.Name, Source: f.Source.String(), Width: f.Width, Offset: f.Offset,
					Initial: f.Initial, Invalid: f.Invalid, Config: f.Path}
				switch f.Source {
				case ports.Slot:
					s := f.Signal(dir, 0)
					slot := s.Index
					pf.Slot, pf.Ref, pf.Unit = &slot, s.Ref, s.Unit
					pf.Vehicle = p.Vehicles[f.Vehicle].Name
				case ports.Meta:
					pf.Meta = f.Meta.String()
				case ports.Relative:
					pf.Meta = f.Label(p)
					pf.Vehicle = p.Vehicles[f.Vehicle].Name
				}
				pp.Fields = append(pp.Fields, pf)
			}
			out = append(out, pp)
		}
		return out
	}
	return struct {
		File         string     `json:"file"`
		Protocol     string     `json:"protocol"`
		PeriodS      float64    `json:"period_s"`
		PhysicsDtS   float64    `json:"physics_dt_s"`
		SendSkips    int        `json:"send_skips"`
		Unanswered   int        `json:"unanswered"`
		PingTimeS    float64    `json:"ping_time_s"`
		ReplyID      string     `json:"reply_id"`
		TimeSync     string     `json:"time_sync"`
		TimeDilation float64    `json:"time_dilation"`
		Mode         string     `json:"mode"`
		ModelTimeout float64    `json:"model_timeout_ms"`
		TimeoutFrom  string     `json:"model_timeout_from"`
		Vehicles     []vehicle  `json:"vehicles"`
		Inputs       []planPort `json:"inputs"`
		Outputs      []planPort `json:"outputs"`
		Contracts    []contract `json:"contracts"`
		ModelNotes   []string   `json:"model_notes,omitempty"`
		Warnings     []jsonDiag `json:"warnings"`
	}{p.Source, p.Protocol.String(), p.Period, p.PhysicsDt, p.SendSkips, p.Unanswered, p.PingTime, string(p.ReplyID),
		p.TimeSync.String(), p.TimeDilation, p.Mode(), p.ModelTimeout * 1000, p.ModelTimeoutFrom, vs, conv(p.Inputs, beamng.ToBeamNG), conv(p.Outputs, beamng.FromBeamNG), cs,
		kinds.Describe(p.Model, p.ModelParams, p), warnings}
}

// loadPlan loads, checks and compiles a config for a command: errors print
// with file:line:col and give the exit code; warnings print to stderr.
func loadPlan(c *call, path string) (*ports.Plan, fileResult, int) {
	plan, r := check(path)
	if !r.Valid {
		if c.json {
			// JSON on stdout, as validate --json and run --json answer.
			writeJSON(c.stdout, runError{Error: "the config is not valid", Config: &r})
		} else {
			printResult(c.stderr, r)
		}
		return nil, r, exitFailed
	}
	for _, d := range r.Diagnostics {
		printDiag(c.stderr, d)
	}
	return plan, r, exitOK
}
