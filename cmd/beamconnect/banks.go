package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"beamconnect/beamng"
	"beamconnect/beamng/cosim"
)

var cmdBanks = &command{
	name:    "banks",
	args:    "[NAME...]",
	summary: "list the slots of BeamNG's Gen 1 messages: bank reference, name, unit, meaning",
	help: `Lists every slot of the message BeamNG sends (111 doubles, banks A–H) and of
the reply it reads (64 doubles, banks A–B). A config's propertyName may be the
name or the bank reference. NAME arguments keep the slots whose name or
reference contains any of them, ignoring letter case.

--protocol csv lists BeamNG's Gen 2 (co-simulation) catalogue instead: the
signals a CSV row may name, by group, which of them BeamNG applies when they
come back (From), their Gen 1 equivalent, and the ones BeamNG's controller
mishandles. Wheels signals take the wheel id (wheelSpeedFL); Electrics take any
key of the vehicle's electrics; Powertrain "<device> <field>".`,
	flags: func(fs *pflag.FlagSet) func(*call) int {
		fs.Bool("json", false, "print the slots as a JSON array")
		fs.StringSlice("bank", nil, "only these banks, e.g. --bank D,E")
		fs.Bool("from", false, "only the message BeamNG sends (for outputs)")
		fs.Bool("to", false, "only the reply BeamNG reads (for inputs)")
		fs.String("protocol", "fixed", "fixed (Gen 1 banks) or csv (Gen 2 catalogue)")
		return func(c *call) int {
			if proto, _ := fs.GetString("protocol"); proto != "fixed" {
				if proto != "csv" {
					fmt.Fprintf(c.stderr, "%s banks: --protocol %q: expected fixed or csv\n", programName, proto)
					return exitUsage
				}
				to, _ := fs.GetBool("to")
				return catalogueCmd(c, to)
			}
			banks, _ := fs.GetStringSlice("bank")
			from, _ := fs.GetBool("from")
			to, _ := fs.GetBool("to")
			return banksCmd(c, banks, from, to)
		}
	},
}

type bankSlot struct {
	Direction string `json:"direction"` // "from" (BeamNG sends) or "to" (BeamNG reads)
	Bank      string `json:"bank"`
	Ref       string `json:"ref"`
	Index     int    `json:"index"`
	Name      string `json:"name"`
	Unit      string `json:"unit"`
	Desc      string `json:"description"`
}

func banksCmd(c *call, banks []string, from, to bool) int {
	if !from && !to {
		from, to = true, true
	}
	for _, b := range banks {
		if len(b) != 1 || !strings.Contains("ABCDEFGH", strings.ToUpper(b)) {
			fmt.Fprintf(c.stderr, "%s banks: --bank %q: expected a bank letter A–H\n", programName, b)
			return exitUsage
		}
	}
	matched := make([]bool, len(c.args))
	keep := func(s beamng.Signal) bool {
		if len(banks) > 0 {
			ok := false
			for _, b := range banks {
				ok = ok || strings.EqualFold(b, s.Bank)
			}
			if !ok {
				return false
			}
		}
		if len(c.args) == 0 {
			return true
		}
		ok := false
		for i, a := range c.args {
			if strings.Contains(strings.ToLower(s.Name), strings.ToLower(a)) || strings.EqualFold(s.Ref, a) {
				ok, matched[i] = true, true
			}
		}
		return ok
	}
	var out []bankSlot
	for _, d := range []struct {
		on   bool
		dir  beamng.Direction
		name string
	}{{from, beamng.FromBeamNG, "from"}, {to, beamng.ToBeamNG, "to"}} {
		if !d.on {
			continue
		}
		for _, s := range beamng.Signals(d.dir) {
			if keep(s) {
				out = append(out, bankSlot{d.name, s.Bank, s.Ref, s.Index, s.Name, s.Unit, s.Desc})
			}
		}
	}
	if c.json {
		if out == nil {
			out = []bankSlot{}
		}
		writeJSON(c.stdout, out)
		return exitOK
	}
	var missed []string
	for i, a := range c.args {
		if !matched[i] {
			missed = append(missed, a)
		}
	}
	if len(out) == 0 || len(missed) > 0 && !c.json {
		fmt.Fprintln(c.stderr, "no slot matches"+unmatched(missed, gen1Names(from, to)))
	}
	if len(out) == 0 {
		return exitFailed
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	last := ""
	for _, s := range out {
		if s.Direction != last {
			if last != "" {
				fmt.Fprintln(tw)
			}
			if s.Direction == "from" {
				fmt.Fprintf(tw, "BeamNG → client: %d doubles (config outputs)\n", beamng.StateLen)
			} else {
				fmt.Fprintf(tw, "client → BeamNG: %d doubles (config inputs)\n", beamng.ControlLen)
			}
			fmt.Fprintln(tw, "REF\tINDEX\tNAME\tUNIT\tMEANING")
			last = s.Direction
		}
		ref, unit := s.Ref, s.Unit
		if ref == "" {
			ref = "-"
		}
		if unit == "" {
			unit = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ref, strconv.Itoa(s.Index), s.Name, unit, s.Desc)
	}
	tw.Flush()
	return exitOK
}

type catalogueEntry struct {
	Group   string `json:"group"`
	Name    string `json:"name"`
	From    bool   `json:"from"` // BeamNG applies it as a signalFrom row
	Unit    string `json:"unit"`
	Gen1    string `json:"gen1,omitempty"`
	Desc    string `json:"description"`
	Warning string `json:"warning,omitempty"`
}

// catalogueCmd lists BeamNG's Gen 2 signal catalogue.
func catalogueCmd(c *call, onlyFrom bool) int {
	var out []catalogueEntry
	for _, d := range cosim.Catalogue() {
		if onlyFrom && !d.From {
			continue
		}
		name := d.Name
		if d.Group == "Wheels" {
			name += "<FL|FR|RL|RR>"
		}
		e := catalogueEntry{d.Group, name, d.From, d.Unit, strings.ReplaceAll(d.Meaning, "%s", "<W>"), d.Desc, d.Trap}
		keep := len(c.args) == 0
		for _, a := range c.args {
			keep = keep || strings.Contains(strings.ToLower(name), strings.ToLower(a)) || strings.EqualFold(d.Group, a)
		}
		if keep {
			out = append(out, e)
		}
	}
	if c.json {
		if out == nil {
			out = []catalogueEntry{}
		}
		writeJSON(c.stdout, out)
		return exitOK
	}
	if len(out) == 0 {
		var names []string
		for _, d := range cosim.Catalogue() {
			names = append(names, d.Name, d.Group)
		}
		fmt.Fprintln(c.stderr, "no signal matches"+unmatched(c.args, names))
		return exitFailed
	}
	fmt.Fprintln(c.stdout, "BeamNG's co-simulation catalogue (Gen 2): a CSV row is Section,Group,Name; FROM marks what BeamNG applies")
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tNAME\tFROM\tUNIT\tGEN 1\tMEANING")
	for _, e := range out {
		from, unit, gen1 := "-", e.Unit, e.Gen1
		if e.From {
			from = "yes"
		}
		if unit == "" {
			unit = "-"
		}
		if gen1 == "" {
			gen1 = "-"
		}
		desc := e.Desc
		if e.Warning != "" {
			desc += " (warning: " + e.Warning + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Group, e.Name, from, unit, gen1, desc)
	}
	tw.Flush()
	return exitOK
}

// gen1Names are the names and bank references of the Gen 1 slots in the
// directions listed.
func gen1Names(from, to bool) []string {
	var names []string
	for _, d := range []struct {
		on  bool
		dir beamng.Direction
	}{{from || !to, beamng.FromBeamNG}, {to || !from, beamng.ToBeamNG}} {
		if d.on {
			for _, s := range beamng.Signals(d.dir) {
				names = append(names, s.Name)
			}
		}
	}
	return names
}

// unmatched says which NAME arguments matched nothing, with the closest
// name for each: ` "grondspeed" (did you mean "groundspeed"?)`.
func unmatched(args, names []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %q%s", a, didYouMean(a, names))
	}
	return b.String()
}
