package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
	"beamconnect/config"
	"beamconnect/config/draft"
)

var cmdCsv = &command{
	name:    "csv",
	args:    "CONFIG",
	summary: "write the Gen 2 CSV BeamNG's editor loads, for a config written JSON-first",
	help: `Writes the co-simulation CSV (Gen 2, cosimulationCoupling) that matches a config
with "protocol": "csv": a signalTo row for every output signal, a signalFrom row
for every input field (its params the row's kind: value, multiply, add or
freeze), in the order BeamNG's Co-Simulation Signal Editor writes them, with
the config's addresses as the connection rows and a 3rd Party Computation Time
that BeamNG decodes to exactly the config's period (0.0005 would make it send
every 1 ms; this writes 0.00049999999999999). Names are resolved against
BeamNG's catalogue ('beamconnect banks --protocol csv'); write Group/name where
a name is in two groups. The CSV the config names need not exist yet.

Load the result in BeamNG's World Editor (Co-Simulation Signal Editor), or
start the coupling with it; 'beamconnect compile' then checks the pair.`,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		out := fs.StringP("output", "o", "", "write the CSV here instead of standard output")
		force := fs.Bool("force", false, "overwrite an existing file")
		return func(c *call) int { return csvCmd(c, *out, *force) }
	},
}

var cmdInit = &command{
	name:    "init",
	args:    "--from-csv FILE | --from-fmu FILE | --ssp CONFIG FMU...",
	summary: "write a config for an existing Gen 2 CSV or for an FMU, or a system of FMUs around BeamNG",
	help: `--from-csv writes a beamconnect config for a co-simulation CSV saved by
BeamNG's editor: one outputs contract with a port per signalTo group, one
inputs contract with a port per signalFrom group (every row a field;
multiply, add and freeze rows carry their kind in params and a neutral
initialValue), the contracts' period as BeamNG will really send, "protocol":
"csv" and the CSV as "interface" (relative to the config). The addresses stay
in the CSV. The model is "hold": name yours in beamng.model. The config
validates as written.

` + initFMUHelp + `

` + initSSPHelp,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		from := fs.String("from-csv", "", "the CSV to map")
		fromFMU := fs.String("from-fmu", "", "the FMU to couple")
		out := fs.StringP("output", "o", "", "write the config here instead of standard output")
		force := fs.Bool("force", false, "overwrite an existing file")
		addrs := fs.String("addresses-from", "", "with --from-fmu: take the addresses (remoteIP, remotePort, remoteObject, beamng.localIP, beamng.localPort) from this config, such as examples/two-machines.json")
		system := fs.String("ssp", "", "the config of BeamNG's component: write a system (-o NAME.ssp) of it and the FMUs the arguments name")
		return func(c *call) int {
			switch {
			case *system != "" && (*from != "" || *fromFMU != ""):
				fmt.Fprintf(c.stderr, "%s init: --ssp and --from-csv or --from-fmu: expected one of them\nRun '%s init --help' for usage.\n", programName, programName)
				return exitUsage
			case *system != "":
				return initSSPCmd(c, *system, *out, *force) // initssp.go
			case *fromFMU != "" && *from != "":
				fmt.Fprintf(c.stderr, "%s init: --from-csv and --from-fmu: expected one of them\nRun '%s init --help' for usage.\n", programName, programName)
				return exitUsage
			case *fromFMU != "":
				return initFMUCmd(c, *fromFMU, *out, *addrs, *force)
			case *addrs != "":
				fmt.Fprintf(c.stderr, "%s init: --addresses-from applies to --from-fmu only (a CSV has its own addresses)\nRun '%s init --help' for usage.\n", programName, programName)
				return exitUsage
			}
			return initCmd(c, *from, *out, *force)
		}
	},
}

func csvCmd(c *call, out string, force bool) int {
	if len(c.args) != 1 {
		fmt.Fprintf(c.stderr, "%s csv: expected exactly one config file, got %d\nRun '%s csv --help' for usage.\n", programName, len(c.args), programName)
		return exitUsage
	}
	cfg, err := config.LoadJSONFirst(c.args[0])
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return exitFailed
	}
	for _, d := range cfg.Warnings {
		fmt.Fprintln(c.stderr, d)
	}
	csv := cfg.Vehicles[0].CSV // a config written JSON-first has one vehicle
	if cfg.Protocol != beamng.Gen2 || csv == nil {
		fmt.Fprintf(c.stderr, "%s: csv writes the CSV of a Gen 2 config: expected \"beamng\": {\"protocol\": \"csv\"}\n", c.args[0])
		return exitFailed
	}
	plan, err := config.Compile(cfg)
	if err != nil {
		return c.fail("csv", err)
	}
	steps := int(math.Round(plan.Period / plan.PhysicsDt))
	data := csv.Encode(cosim.TimeText(steps, plan.PhysicsDt))
	if out == "" {
		c.stdout.Write(append(data, '\n'))
		return exitOK
	}
	if code := refuseOverwrite(c, out, c.args[0], force); code != exitOK {
		return code
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return c.fail("csv", err)
	}
	fmt.Fprintf(c.stderr, "wrote %s: %d signalTo rows (BeamNG sends %d doubles), %d signalFrom rows (it reads %d), every %s\n",
		out, len(csv.To), plan.Vehicles[0].Layout.Len(beamng.FromBeamNG), len(csv.From), plan.Vehicles[0].Layout.Len(beamng.ToBeamNG), ms(plan.Period))
	return exitOK
}

// refuseOverwrite keeps a command from writing over its own input or, unless
// forced, over any existing file.
func refuseOverwrite(c *call, out, input string, force bool) int {
	if a, err := filepath.Abs(out); err == nil {
		if b, err := filepath.Abs(input); err == nil && a == b {
			fmt.Fprintf(c.stderr, "%s: refusing to write over the input file\n", out)
			return exitFailed
		}
	}
	if _, err := os.Stat(out); err == nil && !force {
		fmt.Fprintf(c.stderr, "%s exists: refusing to overwrite it (--force does)\n", out)
		return exitFailed
	}
	return exitOK
}

func initCmd(c *call, from, out string, force bool) int {
	if from == "" || len(c.args) > 0 {
		fmt.Fprintf(c.stderr, "%s init: expected --from-csv FILE or --from-fmu FILE, and no other argument\nRun '%s init --help' for usage.\n", programName, programName)
		return exitUsage
	}
	f, err := cosim.Load(from)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return exitFailed
	}
	for _, w := range f.Warnings {
		fmt.Fprintln(c.stderr, w)
	}
	iface := from
	if out != "" {
		if rel, err := filepath.Rel(filepath.Dir(out), from); err == nil {
			iface = rel
		}
	} else if abs, err := filepath.Abs(from); err == nil {
		iface = abs
	}
	data, err := json.MarshalIndent(draft.FromCSV(f, iface), "", "  ")
	if err != nil {
		return c.fail("init", err)
	}
	data = append(data, '\n')
	if out == "" {
		c.stdout.Write(data)
		return exitOK
	}
	if code := refuseOverwrite(c, out, from, force); code != exitOK {
		return code
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return c.fail("init", err)
	}
	fmt.Fprintf(c.stderr, "wrote %s: %d outputs and %d inputs from %s; check it with 'beamconnect compile %s'\n", out, len(f.To), len(f.From), from, out)
	return exitOK
}
