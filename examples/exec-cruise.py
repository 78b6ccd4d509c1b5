#!/usr/bin/env python3
"""A model in another process: beamconnect's "exec" model protocol.

beamconnect writes one line per BeamNG message: "t status o1 o2 ...", the
simulation time, the connection status and every output port element; it
first sends a "# columns: ..." line naming them. This program answers one
line: "@t directive i1 i2 ...", the request's time as it was written (so
the answer is used for that request only), the connection directive (1:
stay connected) and every input port element. Here: a PI speed controller
on the pedals, the same as the built-in cruise-pedals model.

It says it speaks reset ("# protocol: reset"): when BeamNG starts its
coupling again, beamconnect writes "# reset" before the next request, and
the controller's integral starts from 0 again (a program that does not
say so is started again instead).

It names what it answers with a "# columns:" line of its own: "-" keeps the
config's names for the directive and the inputs, and two values it appends
to every answer, its speed error and integral, are recorded and shown under
its names and units (model.speedError, model.integral), not sent to BeamNG.
"""
import sys

SET_SPEED = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0  # m/s
KP, KI = 0.3, 0.05

outputs, inputs = [], []
print("# protocol: reset", flush=True)


def start():
    """The controller's initial state."""
    global integral, last_t, throttle, brake
    integral, last_t = 0.0, None
    throttle = brake = 0.0


start()
for line in sys.stdin:
    line = line.strip()
    if line == "# reset":  # BeamNG started its coupling again
        start()
        continue
    if line.startswith("# columns:"):
        left, right = line[len("# columns:"):].split("|")
        outputs = left.split()  # "t", "status", then the output elements
        inputs = right.split()  # "directive", then the input elements
        names = " ".join("-" for _ in inputs)  # the config's names, kept
        print(f"# columns: {names} speedError[m/s] integral[m]", flush=True)
        continue
    if not line or line.startswith("#"):
        continue
    fields = line.split()
    values = dict(zip(outputs, map(float, fields)))
    t, status = values["t"], values["status"]
    if status == 3 and last_t is not None and 0 < t - last_t < 1:
        error = SET_SPEED - values["groundspeed"]
        u = KP * error + KI * integral
        if not (u >= 1 and error > 0) and not (u <= -1 and error < 0):
            integral += error * (t - last_t)
        u = max(-1.0, min(1.0, KP * error + KI * integral))
        throttle, brake = max(0.0, u), max(0.0, -u)
    last_t = t
    answer = {"directive": 1.0, "throttle": throttle, "brake": brake, "driveMode": 0.0}
    error = SET_SPEED - values.get("groundspeed", 0.0)
    numbers = [answer.get(name, float("nan")) for name in inputs] + [error, integral]
    # "@" and the request's time as it was written: fields[0], not t printed again
    print("@" + fields[0], " ".join(repr(x) for x in numbers), flush=True)
