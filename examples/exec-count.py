#!/usr/bin/env python3
"""A program with state, for beamconnect's exec model: its throttle counts
the requests it has answered (1/10000 each), so a run shows when it starts
over. It echoes each request's time ("@t"), so every answer is used for its
own request only, and it speaks reset: after "# reset" it counts from 0.
With --no-reset it does not say so, and beamconnect starts it again instead."""
import sys

if "--no-reset" not in sys.argv:
    print("# protocol: reset", flush=True)  # "# reset" comes before a request
count = 0  # its state: the requests answered since it started over

for line in sys.stdin:
    line = line.strip()
    if line == "# reset":  # BeamNG started its coupling again
        count = 0
        continue
    if not line or line.startswith("#"):  # "# columns: …", and lines it does not know
        continue
    t = line.split()[0]  # the request's time, as it was written
    print(f"@{t} 1 {count / 10000}", flush=True)  # the directive, then the throttle
    count += 1
