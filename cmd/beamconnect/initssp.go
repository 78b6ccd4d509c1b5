package main

import (
	"fmt"
	"strings"

	"beamconnect/ssp"
	"beamconnect/system"
)

const initSSPHelp = `--ssp CONFIG FMU... -o SYSTEM.ssp writes a system of BeamNG (as CONFIG
couples it) and the FMUs, as an SSP archive (or, for -o NAME.ssd, an .ssd
with its resources/ folder beside it) that validates as written, for you
to edit in any SSP tool or by hand: every FMU input named like one of
BeamNG's signals (groundspeed, or a case or typo of it; or the only signal
of its unit's quantity, km/h taking groundspeed's m/s converted) takes it,
every FMU output named like a control (throttle, brake…) drives it, and an
FMU input named like another FMU's output takes that. Each connection made
in another name than its own is listed, to check; inputs no connection
feeds keep their start values; the FMUs' parameters go to
resources/parameters.ssv at their start values, bound to the system. See
docs/systems.md.`

// initSSPCmd writes a system for a config and FMUs (init --ssp).
func initSSPCmd(c *call, cfg, out string, force bool) int {
	switch {
	case len(c.args) == 0:
		fmt.Fprintf(c.stderr, "%s init: --ssp CONFIG needs the FMUs to connect: init --ssp CONFIG FMU... -o SYSTEM.ssp\nRun '%s init --help' for usage.\n", programName, programName)
		return exitUsage
	case !ssp.IsSystem(out):
		fmt.Fprintf(c.stderr, "%s init: --ssp writes a system: expected -o NAME.ssp (an archive) or -o NAME.ssd (with resources/ beside it), got %q\nRun '%s init --help' for usage.\n", programName, out, programName)
		return exitUsage
	}
	if code := refuseOverwrite(c, out, cfg, force); code != exitOK {
		return code
	}
	d, err := system.Draft(cfg, c.args)
	if err != nil {
		return c.fail("init", err)
	}
	if err := ssp.Write(out, d.Files); err != nil {
		return c.fail("init", err)
	}
	sys, ds, err := system.Load(out)
	if err != nil {
		return c.fail("init", err)
	}
	if sys != nil {
		sys.Close()
	}
	say := func(format string, args ...any) {
		fmt.Fprint(c.stderr, wrapText(fmt.Sprintf(format, args...), summaryWidth(c), "  ", "    "))
	}
	fmt.Fprintf(c.stderr, "wrote %s: BeamNG and %d FMUs, %d connections; check it with 'beamconnect compile %s'\n", out, len(c.args), len(d.Connected), out)
	if len(d.Connected) > 0 {
		say("connected: %s", strings.Join(d.Connected, "; "))
	}
	if len(d.Unconnected) > 0 {
		say("not connected: %s", strings.Join(d.Unconnected, "; "))
	}
	for _, dg := range ds {
		fmt.Fprintln(c.stderr, dg.String())
	}
	if sys == nil {
		fmt.Fprintf(c.stderr, "%s is not valid as written: a defect of init; please report it\n", out)
		return exitFailed
	}
	return exitOK
}
