#!/usr/bin/env python3
"""Start a BeamNG.tech scenario with the vehicles a beamconnect config couples,
and load BeamNG's coupling controller on each: a rig starts with no typing in
BeamNG.

    beamconnect run examples/cruise-pedals.json &      # beamconnect first: it waits
    python3 examples/beamngpy/start_coupling.py examples/cruise-pedals.json \\
        --home 'C:\\BeamNG.tech.v0.33.3.0'

The Lua lines come from `beamconnect compile --json CONFIG` (each vehicle's
start_command and stop_command, with the config's period, ping time and
addresses), so what BeamNG runs always matches what beamconnect expects. Each
line is queued on its vehicle with BeamNGpy's Vehicle.queue_lua_command, which
runs it in the vehicle's Lua, where the coupling controller lives.

Ctrl-C stops BeamNG's side of the coupling on every vehicle and leaves BeamNG
running; then stop beamconnect (whenever you like: a clean stop).
--dry-run prints what would be sent, without BeamNG or BeamNGpy.
See docs/beamng.md.
"""

import argparse
import json
import shlex
import subprocess
import sys
import time


def plan(beamconnect, config):
    """The compiled plan of config, as `beamconnect compile --json` prints it."""
    cmd = shlex.split(beamconnect) + ["compile", "--json", config]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{why(done)}")
    return json.loads(done.stdout)


def why(done):
    """What a failed `beamconnect ... --json` said: its JSON answer on stdout
    (the config's placed errors, or the error), else its stderr."""
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        return done.stderr
    diags = (answer.get("config") or {}).get("diagnostics") or []
    lines = [f"{d['file']}:{d['line']}:{d['column']}: {d['path']}: {d['message']}" for d in diags]
    return "\n".join(lines or [answer.get("error", "")] + answer.get("lines", [])) or done.stderr


def positions(n, spacing, given):
    """Where each vehicle goes: given ones as asked, the others in a row along
    the map's Y axis, spacing metres apart."""
    out = []
    for i in range(n):
        out.append(given.get(i, (0.0, i * spacing, 0.2)))
    return out


def parse_position(text):
    """INDEX=X,Y,Z for --position."""
    index, _, xyz = text.partition("=")
    try:
        x, y, z = (float(v) for v in xyz.split(","))
        return int(index), (x, y, z)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected INDEX=X,Y,Z, e.g. 1=0,40,0.2")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="the beamconnect config to couple")
    ap.add_argument("--beamconnect", default="beamconnect",
                    help="how to run beamconnect (default: from the PATH; e.g. 'go run ./cmd/beamconnect')")
    ap.add_argument("--host", default="localhost", help="BeamNG.tech's host for BeamNGpy")
    ap.add_argument("--port", type=int, default=25252, help="BeamNGpy's port (default 25252)")
    ap.add_argument("--home", help="BeamNG.tech's installation folder (to launch it)")
    ap.add_argument("--user", help="BeamNG.tech's user folder (where its debug logs go)")
    ap.add_argument("--no-launch", action="store_true", help="connect to a running BeamNG.tech instead of launching one")
    ap.add_argument("--level", default="smallgrid", help="the level (default smallgrid)")
    ap.add_argument("--model", default="etk800", help="the vehicle model for every vehicle (default etk800)")
    ap.add_argument("--spacing", type=float, default=40.0, help="metres between vehicles in the row (default 40)")
    ap.add_argument("--position", type=parse_position, action="append", default=[],
                    help="INDEX=X,Y,Z: where the config's vehicle INDEX (from 0) goes (repeatable)")
    ap.add_argument("--dry-run", action="store_true", help="print the vehicles and lines, send nothing")
    args = ap.parse_args()

    p = plan(args.beamconnect, args.config)
    vehicles = p["vehicles"]
    where = positions(len(vehicles), args.spacing, dict(args.position))
    names = [v["name"] or "ego" for v in vehicles]

    if args.dry_run:
        for name, v, pos in zip(names, vehicles, where):
            print(f"vehicle {name} ({args.model}) at {pos}: BeamNG sends to {v['local']}, listens on {v['remote']}")
            print(f"  start: {v['start_command']}")
            print(f"  stop:  {v['stop_command']}")
        return

    # Imported here, so --dry-run needs no BeamNGpy.
    from beamngpy import BeamNGpy, Scenario, Vehicle

    bng = BeamNGpy(args.host, args.port, home=args.home, user=args.user)
    bng.open(launch=not args.no_launch)
    scenario = Scenario(args.level, "beamconnect")
    cars = []
    for name, pos in zip(names, where):
        car = Vehicle(name, model=args.model, license=name[:8].upper())
        scenario.add_vehicle(car, pos=pos, rot_quat=(0, 0, 0, 1))
        cars.append(car)
    scenario.make(bng)
    bng.scenario.load(scenario)
    bng.scenario.start()

    for car, v in zip(cars, vehicles):
        car.queue_lua_command(v["start_command"])
        print(f"{car.vid}: coupling started (BeamNG sends to {v['local']}, listens on {v['remote']})")
    print("Coupled. Ctrl-C stops BeamNG's side; then stop beamconnect.")
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        for car, v in zip(cars, vehicles):
            car.queue_lua_command(v["stop_command"])
            print(f"{car.vid}: coupling stopped")
    finally:
        bng.disconnect()


if __name__ == "__main__":
    main()
