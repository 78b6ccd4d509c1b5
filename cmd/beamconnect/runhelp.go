package main

import (
	"beamconnect/coupling"
	"beamconnect/models/fmumodel"
	"beamconnect/models/program"
)

// runHelp is run's --help: what a coupling does, fail-safe, lockstep,
// reloads and recording, then the layouts and protocols a user meets.
func runHelp() string {
	return `Binds the config's local address, waits for BeamNG, and for every BeamNG message
updates the output ports, steps the model and replies with the input ports, at
whatever rate BeamNG sends. Port 0 carries the connection directive (in) and
status (out): 1 unconnected, 2 connecting, 3 connected, 4 error, 5 disconnecting.

The model is the config's beamng.model, unless --model names another:
` + modelList() + `.
--model hold runs any config as a pure logger.

` + systemHelp + ` Its FMUs are stepped at every
BeamNG message (or every few, each at its own communication step), one after
another along the connections; the reply carries BeamNG's controls only when
every FMU computed them for that step. Every connector is recorded under its
component (controller.demand). Editing its parameter sets (.ssv, .ssm), the
.ssd's parameter bindings or BeamNG's config retunes the run live, whole or
not at all, as a config's reload does.

With --emulate, BeamNG's side runs in the same process on free loopback ports,
so every example runs on a machine without BeamNG. --emulate-client fixes the
port beamconnect binds (where the emulated BeamNG sends), --emulate-listen the
one the emulated BeamNG binds (where beamconnect replies): an address such as
127.0.0.1:7000, or "config" for the config's own (localIP:localPort and
remoteIP:remotePort), so two emulated runs and other programs share a
machine predictably.

Reply ids: "next" (default) answers id+1 and, after BeamNG's 2 s blocking
timeout (a pause of the model, a lost reply), restarts its ids so BeamNG is
back in lockstep at once; "echo" is the S-function's; "counter" the FMU's.

Fail-safe: only BeamNG's whole messages reach the model: datagrams from its
host, from the port it sends from (latched at its first message; another
port is taken only once that one has been silent for 10 periods, at least
100 ms, as when BeamNG's controller is reloaded, never while it still sends),
of the length its protocol sends, with ids it can have sent; others are
counted and warned about, naming the address seen and the one expected. A
message that lacks fields the model reads (a Gen 2 CSV row BeamNG could not
resolve) is answered with neutral controls. A reply carries the model's
controls only when the model computed them from that message's data;
otherwise they are neutral (pedals released, wheel torques 0) and counted.
An answer of the model is used for its own request only (an exec program
pairs its answers by echoing each request's time as "@t"; a line beyond one
answer per request of a program that does not is a fault).

Lockstep (the default): each reply waits for the model's step on its
message's data, so a slow step slows BeamNG (which waits up to 2 s for a
reply) and never changes what BeamNG gets: the same config and messages
give the same recording on a quiet or a loaded machine. With --real-time
(or beamng.realTime), for a rig that drives hardware, a step is awaited
only up to its deadline (modelParams.deadlineMs, default 80 % of the
period): a message whose step is late gets neutral controls, counted, and
over 1 % of the messages is a fault ("the model could not keep up").

A model that reads another vehicle whose data stopped coming is not
stepped on them. A model that dies, hangs (no answer within the model
timeout: beamng.modelTimeoutMs, default 1500 ms in lockstep, 5 periods
and at least 25 ms in real time), panics or computes NaN or infinite
controls is a fault: an error is logged at once,
status 4 is reported, BeamNG gets neutral controls instead of the last ones
and keeps being answered; a fault ends when its cause does. A reload is
prepared whole (the model's new binding and parameters included) while the
coupling goes on, then swapped in between two messages; anything in it that
fails refuses all of it. A bind that fails (another program on the port) is
retried with backoff for --bind-timeout (10 s), then the run ends with the
error and a hint (exit 1); a socket that fails after it was bound is bound
again for as long as it takes. A watchdog
sees BeamNG run ahead of the replies (out of lockstep) and repairs its
window where the protocol allows. --record writes whole rows every 250 ms,
even while BeamNG is silent; it refuses the config file, and any existing
file that is not a recording unless --force; a write error (a full disk)
is logged at once and the coupling goes on. A name ending .mf4 records ASAM
MDF 4 (CANape, INCA, MATLAB's mdfRead, asammdf, DIAdem open it): a channel
group per vehicle and direction with units and meanings, reloads, model
faults, status changes and diagnoses as events, the config attached; a run
that is killed leaves a file that opens with everything up to the last
250 ms. 'beamconnect convert' turns one format into the other.

A config with several vehicles (beamng.vehicles) couples every one of them:
a socket pair, reply ids and counters per vehicle, one model for all, stepped
by each vehicle's message with that vehicle's fresh data and the others'
latest; port 0 reports connected only when every vehicle is; --json adds a
"vehicles" object and --record a vehicle column. Fields may relate two
vehicles (distance or VSAP_DISTANCE, gap, closingSpeed, timeGap,
timeToCollision; params names the other vehicle).

--http 127.0.0.1:8080 serves a live page while it runs: the status and its
history, rates, turnaround, a scope of every port (uPlot, embedded; samples
by Server-Sent Events from a ring the loop never waits on), reloads and
refusals, the config in use; and /metrics in Prometheus' text format. It
binds only where told (":8080" is loopback), answers only GET, and only to
requests for this machine's addresses or localhost: a request for another
name (DNS rebinding) is refused; --http-host NAME allows a name of yours.
'beamconnect plot' draws a --record file afterwards.

Exit status: 0 for a healthy run, 1 when anything went wrong: never
connected, datagrams that were not BeamNG's, BeamNG stalls, silences or lost
lockstep, model faults, lost recording rows; the summary lists each. Not
faults, and noted: BeamNG pausing (it goes on where it left off, the same
reply ids, in lockstep at once), and BeamNG stopping before beamconnect is
stopped (Ctrl-C, SIGTERM), however soon after: with every message answered,
BeamNG was not waiting for a reply. How well the model controlled is a
verdict of its own: with --fail-on control (or "failOn": ["control"] in the
config's beamng block) a healthy run whose control verdict is not good for
every loop (poor, not settled, no data, or no loop at all) exits 4, and the
summary says which; faults still exit 1.
--fault (with --emulate) makes the emulated BeamNG misbehave, to see all this.

` + coupling.PingResultsLayout + `

` + program.ExecProtocol + `

` + fmumodel.Protocol
}
