package main

import (
	"fmt"
	"io"
	"net/netip"
	"strings"

	"beamconnect/beamng"
	"beamconnect/ports"
)

// BeamNG's own defaults for a Gen 1 coupling, which loading its controller
// without parameters (the console's loadControllerExternal, or the
// shortcut) uses.
var (
	beamngDefaultLocal  = netip.MustParseAddrPort("127.0.0.1:64890")
	beamngDefaultRemote = netip.MustParseAddrPort("127.0.0.1:64891")
)

const (
	gen1Stop = "extensions.tech_vehicleSystemsCoupling.stopCoupling()"
	gen2Stop = "controller.getController('cosimulationCoupling').stop(); controller.unloadControllerExternal('cosimulationCoupling')"
)

// StopCommand is the vehicle-Lua line that stops BeamNG's side of the
// coupling the plan starts.
func stopCommand(p *ports.Plan) string {
	if p.Protocol == beamng.Gen2 {
		return gen2Stop
	}
	return gen1Stop
}

// usesBeamNGDefaults reports whether vehicle v's coupling is the one BeamNG
// starts with no parameters: 5 ms, one message in flight, the default
// addresses.
func usesBeamNGDefaults(p *ports.Plan, v int) bool {
	veh := p.Vehicles[v]
	return p.Protocol == beamng.Gen1 && p.Period == 0.005 && p.PingTime == 1e-05 && veh.Local == beamngDefaultLocal && veh.Remote == beamngDefaultRemote
}

// printStartGuide writes how to start and stop BeamNG's side of the plan,
// per vehicle, with the config's values filled in: the same steps as
// docs/beamng.md.
func printStartGuide(w io.Writer, p *ports.Plan, config string) {
	fmt.Fprintf(w, "\nHow to couple a real BeamNG.tech (docs/beamng.md has the whole guide):\n")
	fmt.Fprintf(w, "  1. Start beamconnect first; it waits for BeamNG:\n       beamconnect run %s\n", config)
	if p.Protocol == beamng.Gen2 {
		printGen2Guide(w, p)
	} else {
		printGen1Guide(w, p)
	}
	printNetworkGuide(w, p)
}

func printGen1Guide(w io.Writer, p *ports.Plan) {
	fmt.Fprintln(w, "  2. In BeamNG.tech (Freeroam or a scenario), for each vehicle: enter it, open the console (~),")
	fmt.Fprintln(w, "     set the console's context at its bottom left to the vehicle (BeamNG - Current Vehicle), and run:")
	for i, v := range p.Vehicles {
		if len(p.Vehicles) > 1 {
			fmt.Fprintf(w, "     vehicle %q (beamconnect binds %v, BeamNG binds %v):\n", v.Name, v.Local, v.Remote)
		}
		fmt.Fprintf(w, "       %s\n", p.StartCommand(i))
		if usesBeamNGDefaults(p, i) {
			debug := "{}"
			if p.DebugFile {
				debug = "{debugFile=true}"
			}
			fmt.Fprintf(w, "     (this coupling is BeamNG's default, so its own line does the same:\n"+
				"       controller.loadControllerExternal('tech/vehicleSystemsCoupling', 'vehicleSystemsCoupling', %s))\n", debug)
		}
	}
	if !usesBeamNGDefaults(p, 0) {
		fmt.Fprintln(w, "     (not controller.loadControllerExternal('tech/vehicleSystemsCoupling', …) nor the shortcut: they start")
		fmt.Fprintln(w, "     BeamNG's defaults, 5 ms on 127.0.0.1:64890/64891, not this config's values)")
	}
	fmt.Fprintln(w, "     Or from Python with BeamNGpy, no typing in BeamNG (examples/beamngpy/start_coupling.py does it all):")
	for i := range p.Vehicles {
		fmt.Fprintf(w, "       vehicle.queue_lua_command(%q)\n", p.StartCommand(i))
	}
	fmt.Fprintf(w, "  3. To stop: in the same console (each vehicle's) run\n       %s\n", gen1Stop)
	fmt.Fprintln(w, "     then press Ctrl-C in beamconnect within 2 s (later, it reports BeamNG's silence as a fault).")
	if p.DebugFile {
		fmt.Fprintln(w, "     BeamNG then writes simulinkSendLog.csv, simulinkReceiveLog.csv and simulinkPhysicsStepsLog.csv")
		fmt.Fprintln(w, "     into its user folder; 'beamconnect timing FOLDER' reads them.")
	}
}

func printGen2Guide(w io.Writer, p *ports.Plan) {
	fmt.Fprintln(w, "  2. In BeamNG.tech, open the World Editor (F11) and from its menus the Co-Simulation Signal Editor;")
	for _, v := range p.Vehicles {
		who := "the vehicle"
		if len(p.Vehicles) > 1 {
			who = fmt.Sprintf("vehicle %q", v.Name)
		}
		fmt.Fprintf(w, "     select %s, load %s, and press \"Start coupling with 3rd party\"\n"+
			"     (BeamNG sends to %v, which beamconnect binds, and listens on %v).\n", who, v.CSV.Path, v.Local, v.Remote)
	}
	fmt.Fprintln(w, "     Or, for a CSV without sensors, in the console (~) with its context set to the vehicle (bottom left),")
	fmt.Fprintln(w, "     the line the editor runs:")
	for i, v := range p.Vehicles {
		if len(p.Vehicles) > 1 {
			fmt.Fprintf(w, "     vehicle %q:\n", v.Name)
		}
		fmt.Fprintf(w, "       %s\n", p.StartCommand(i))
	}
	fmt.Fprintln(w, "     BeamNG takes the addresses and the period from the CSV, as beamconnect does. From Python with")
	fmt.Fprintln(w, "     BeamNGpy, examples/beamngpy/start_coupling.py queues that line with vehicle.queue_lua_command.")
	fmt.Fprintf(w, "  3. To stop: the editor's stop button, or in the console\n       %s\n", gen2Stop)
	fmt.Fprintln(w, "     then press Ctrl-C in beamconnect within 2 s.")
}

// printNetworkGuide says what two machines need: the addresses, and the
// firewall rules for the UDP ports.
func printNetworkGuide(w io.Writer, p *ports.Plan) {
	var local, remote []string
	two := false
	for _, v := range p.Vehicles {
		local = append(local, fmt.Sprint(v.Local.Port()))
		remote = append(remote, fmt.Sprint(v.Remote.Port()))
		two = two || !v.Local.Addr().IsLoopback() || !v.Remote.Addr().IsLoopback()
	}
	if !two {
		if p.Protocol == beamng.Gen2 {
			fmt.Fprintln(w, "  BeamNG on another machine: set the CSV's otherUDP IP to this machine's address and beamngUDP IP to")
		} else {
			fmt.Fprintln(w, "  BeamNG on another machine: set beamng.localIP to this machine's address and remoteIP to")
		}
		fmt.Fprintln(w, "  BeamNG's; docs/beamng.md says which addresses go where and which firewall rules the UDP ports need.")
		return
	}
	v := p.Vehicles[0]
	fmt.Fprintf(w, "  Two machines: BeamNG sends to %v (this machine) and binds %v (its own address).\n", v.Local.Addr(), v.Remote.Addr())
	fmt.Fprintf(w, "  On BeamNG's Windows PC, let the replies in (PowerShell as administrator):\n"+
		"       New-NetFirewallRule -DisplayName \"BeamNG coupling from beamconnect\" -Direction Inbound -Protocol UDP -LocalPort %s -Action Allow\n",
		strings.Join(remote, ","))
	fmt.Fprintf(w, "  On this machine, let BeamNG's messages in on UDP %s (Linux with ufw: sudo ufw allow %s/udp;\n"+
		"  Windows: the same New-NetFirewallRule with -LocalPort %s).\n", strings.Join(local, ","), local[0], strings.Join(local, ","))
}
