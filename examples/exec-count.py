#!/usr/bin/env python3
"""A program with state, for beamconnect's exec model: its throttle counts
BeamNG's steps it has answered (1/10000 each), so a run shows when it
starts over. A step is a request whose status is 3 (connected); the idle
requests beamconnect writes while BeamNG is not connected (every 50 ms of
the machine's time) are answered but not counted, so identical runs record
identical values. It echoes each request's time ("@t"), so every answer is
used for its own request only, and it speaks reset: after "# reset" it
counts from 0. With --no-reset it does not say so, and beamconnect starts
it again instead."""
import sys

if "--no-reset" not in sys.argv:
    print("# protocol: reset", flush=True)  # "# reset" comes before a request
count = 0  # its state: BeamNG's steps answered since it started over

for line in sys.stdin:
    line = line.strip()
    if line == "# reset":  # BeamNG started its coupling again
        count = 0
        continue
    if not line or line.startswith("#"):  # "# columns: …", and lines it does not know
        continue
    t, status = line.split()[:2]  # the request's time, as it was written; the status
    print(f"@{t} 1 {count / 10000}", flush=True)  # the directive, then the throttle
    if status == "3":  # one of BeamNG's steps, not an idle request
        count += 1
