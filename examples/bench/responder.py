#!/usr/bin/env python3
"""The simplest Gen 1 client: answer every BeamNG message with id + 1 and
NaN everywhere else. For `beamconnect bench --responder`:
    python3 examples/bench/responder.py LISTEN BEAMNG   (both IP:port)
"""
import socket
import struct
import sys

def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)

listen, beamng = addr(sys.argv[1]), addr(sys.argv[2])
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(listen)
nan = float("nan")
reply = [nan] * 64
pack = struct.Struct("<64d").pack
while True:
    data = sock.recv(2048)
    if len(data) != 888:
        continue
    reply[0] = struct.unpack_from("<d", data)[0] + 1
    sock.sendto(pack(*reply), beamng)
