package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"beamconnect/fmu"
	"beamconnect/fmu/host"
)

var cmdFmu = &command{
	name:    "fmu",
	args:    "inspect FILE | check FILE... | export CONFIG -o FILE.fmu",
	summary: "show what an FMU offers; check it against the FMI standard; or export a rig as an FMU for Simulink, Dymola, OpenModelica, fmusim",
	help: `'fmu inspect controller.fmu' reads the FMU's modelDescription.xml and lists its
FMI version, its interfaces (beamconnect steps CoSimulation ones), the
platforms it has a binary for and whether this machine is one, its default
experiment, whether it can handle variable step sizes, and every variable
with its causality, variability, type, unit and start value. The variables
beamconnect can bind are scalars of type Real/Float64, Float32,
Integer/Int32 or Boolean.

'beamconnect init --from-fmu controller.fmu' writes a config for it.

` + checkHelp + `

` + exportHelp,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		fs.Bool("json", false, "inspect: print the description as one JSON object; check: the problems as JSON")
		o := &exportOpts{given: map[string]string{}}
		fs.StringVarP(&o.out, "output", "o", "", "export: the FMU to write, e.g. rig.fmu (its name is the model's)")
		fs.IntVar(&o.fmi, "fmi", 2, "export: the FMI version, 2 or 3")
		fs.StringVar(&o.linux, "beamconnect-linux", "", "export: the x86-64 Linux beamconnect the FMU carries (default: this one, or the one beside it)")
		fs.StringVar(&o.windows, "beamconnect-windows", "", "export: the x86-64 Windows beamconnect.exe the FMU carries (default: this one, or the one beside it)")
		return func(c *call) int {
			for _, n := range []string{"output", "fmi", "beamconnect-linux", "beamconnect-windows"} {
				if fs.Changed(n) {
					o.changed = append(o.changed, "--"+n)
				}
			}
			return fmuCmd(c, o)
		}
	},
}

var cmdFmuHost = &command{
	name:     "fmu-host",
	summary:  "internal: runs one FMU for 'run' in a child process, speaking binary frames on stdin and stdout",
	internal: true,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		return func(c *call) int { return host.Main(os.Stdin, c.stdout, c.stderr) }
	},
}

// fmuInfo is fmu inspect's answer.
type fmuInfo struct {
	File         string        `json:"file"`
	FMIVersion   string        `json:"fmi_version"`
	ModelName    string        `json:"model_name"`
	Token        string        `json:"instantiation_token"`
	Generator    string        `json:"generation_tool,omitempty"`
	Interfaces   []string      `json:"interfaces"`
	Identifier   string        `json:"model_identifier,omitempty"`
	VariableStep bool          `json:"can_handle_variable_step_size"`
	FixedStep    float64       `json:"fixed_internal_step_size,omitempty"`
	MEIdentifier string        `json:"model_exchange_identifier,omitempty"`
	Platforms    []string      `json:"platforms"`
	Binaries     []string      `json:"binaries"`
	ThisMachine  string        `json:"this_machine"`
	Runs         bool          `json:"runs_here"`
	Why          string        `json:"why_not,omitempty"`
	Default      fmuExperiment `json:"default_experiment"`
	Variables    []fmuVariable `json:"variables"`
}

type fmuExperiment struct {
	StartTime *float64 `json:"start_time,omitempty"`
	StopTime  *float64 `json:"stop_time,omitempty"`
	Tolerance *float64 `json:"tolerance,omitempty"`
	StepSize  *float64 `json:"step_size,omitempty"`
}

type fmuVariable struct {
	Name        string `json:"name"`
	VR          uint32 `json:"value_reference"`
	Causality   string `json:"causality"`
	Variability string `json:"variability"`
	Type        string `json:"type"`
	Shape       string `json:"shape,omitempty"`
	Unit        string `json:"unit,omitempty"`
	Start       string `json:"start,omitempty"`
	Description string `json:"description,omitempty"`
	Bindable    bool   `json:"bindable"`
}

func fmuCmd(c *call, o *exportOpts) int {
	if len(c.args) == 2 && c.args[0] == "export" {
		return exportCmd(c, o)
	}
	check := len(c.args) >= 2 && c.args[0] == "check"
	if !check && (len(c.args) != 2 || c.args[0] != "inspect") {
		fmt.Fprintf(c.stderr, "%s fmu: expected 'inspect FILE', 'check FILE...' or 'export CONFIG -o FILE.fmu'\nRun '%s fmu --help' for usage.\n", programName, programName)
		return exitUsage
	}
	if len(o.changed) > 0 {
		fmt.Fprintf(c.stderr, "%s fmu %s: %s applies to export only\nRun '%s fmu --help' for usage.\n", programName, c.args[0], o.changed[0], programName)
		return exitUsage
	}
	if check {
		return checkCmd(c, c.args[1:])
	}
	f, err := fmu.Open(c.args[1])
	if err != nil {
		fmt.Fprintf(c.stderr, "%s fmu inspect: %v\n", programName, err)
		return exitFailed
	}
	defer f.Close()
	info := inspect(f)
	if c.json {
		writeJSON(c.stdout, info)
	} else {
		printInspect(c.stdout, info)
	}
	return exitOK
}

func inspect(f *fmu.FMU) fmuInfo {
	d := f.Desc
	info := fmuInfo{
		File: f.Path, FMIVersion: d.FMIVersion, ModelName: d.ModelName, Token: d.Token, Generator: d.Generator,
		Interfaces: append([]string{}, d.Interfaces...), Platforms: append([]string{}, f.Platforms...),
		Binaries:  append([]string{}, f.Binaries...),
		Default:   fmuExperiment{d.Default.StartTime, d.Default.StopTime, d.Default.Tolerance, d.Default.StepSize},
		Variables: []fmuVariable{},
	}
	if d.CoSim != nil {
		info.Identifier, info.VariableStep, info.FixedStep = d.CoSim.ModelIdentifier, d.CoSim.VariableStep, d.CoSim.FixedInternalStepSize
	}
	if d.ME != nil {
		info.MEIdentifier = d.ME.ModelIdentifier
	}
	folder, _, ok := fmu.Platform(d.Major)
	info.ThisMachine = runtime.GOOS + "/" + runtime.GOARCH
	if ok {
		info.ThisMachine = folder
	}
	if err := f.Supported(); err != nil {
		info.Why = err.Error()
	} else {
		info.Runs = true
	}
	for i := range d.Variables {
		v := &d.Variables[i]
		info.Variables = append(info.Variables, fmuVariable{
			Name: v.Name, VR: v.VR, Causality: v.Causality, Variability: v.Variability, Type: v.Type, Shape: d.Shape(v),
			Unit: v.Unit, Start: v.Start, Description: v.Description,
			Bindable: v.Kind != fmu.Unsupported && v.Kind != fmu.String && v.Kind != fmu.Binary,
		})
	}
	return info
}

func printInspect(w io.Writer, i fmuInfo) {
	gen := ""
	if i.Generator != "" {
		gen = ", generated by " + i.Generator
	}
	fmt.Fprintf(w, "%s: FMI %s FMU %q%s\n", i.File, i.FMIVersion, i.ModelName, gen)
	ifaces := strings.Join(i.Interfaces, ", ")
	if ifaces == "" {
		ifaces = "none"
	}
	fmt.Fprintf(w, "  %-20s%s\n", "interfaces:", ifaces)
	if i.Identifier != "" {
		fmt.Fprintf(w, "  %-20sbinary %s, variable step sizes %s", "co-simulation:", i.Identifier, yesNo(i.VariableStep))
		if i.FixedStep > 0 {
			fmt.Fprintf(w, ", fixed internal step %s", seconds(i.FixedStep))
		}
		fmt.Fprintln(w)
	}
	if i.MEIdentifier != "" {
		fmt.Fprintf(w, "  %-20sbinary %s, integrated by beamconnect\n", "model exchange:", i.MEIdentifier)
	}
	bins := "none (source only)"
	if len(i.Binaries) > 0 {
		bins = "binaries/" + strings.Join(i.Binaries, ", binaries/")
	}
	fmt.Fprintf(w, "  %-20s%s\n", "binaries:", bins)
	if i.Runs {
		fmt.Fprintf(w, "  %-20s%s: runs here\n", "this machine:", i.ThisMachine)
	} else {
		fmt.Fprintf(w, "  %-20s%s: does not run here: %s\n", "this machine:", i.ThisMachine, i.Why)
	}
	var de []string
	for _, x := range []struct {
		name string
		v    *float64
		sec  bool
	}{{"start", i.Default.StartTime, true}, {"stop", i.Default.StopTime, true}, {"step", i.Default.StepSize, true}, {"tolerance", i.Default.Tolerance, false}} {
		if x.v != nil {
			if x.sec {
				de = append(de, x.name+" "+seconds(*x.v))
			} else {
				de = append(de, x.name+" "+strconv.FormatFloat(*x.v, 'g', -1, 64))
			}
		}
	}
	if len(de) > 0 {
		fmt.Fprintf(w, "  %-20s%s\n", "default experiment:", strings.Join(de, ", "))
	}
	fmt.Fprintf(w, "  %-20s%s\n\n", "token:", i.Token)
	fmt.Fprintf(w, "%d variables (an array's elements are bound one by one, as u[1], u[2]…; * is not exchanged at every step: a String or Binary is set once, in modelParams.parameters; a Clock is not driven):\n", len(i.Variables))
	tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tCAUSALITY\tVARIABILITY\tTYPE\tUNIT\tSTART\tDESCRIPTION")
	order := []string{"input", "output", "parameter", "structuralParameter", "calculatedParameter", "independent", "local"}
	vars := slices.Clone(i.Variables)
	slices.SortStableFunc(vars, func(a, b fmuVariable) int {
		return slices.Index(order, a.Causality) - slices.Index(order, b.Causality)
	})
	for _, v := range vars {
		mark := ""
		if !v.Bindable {
			mark = "*"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s%s%s\t%s\t%s\t%s\n", v.Name, v.Causality, v.Variability, v.Type, v.Shape, mark, dash(v.Unit), dash(v.Start), v.Description)
	}
	tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// seconds writes a time in ms below a second.
func seconds(s float64) string {
	if s != 0 && s < 1 {
		return strconv.FormatFloat(s*1000, 'g', -1, 64) + " ms"
	}
	return strconv.FormatFloat(s, 'g', -1, 64) + " s"
}
