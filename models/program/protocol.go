package program

// ExecProtocol documents the line protocol of the "exec" model.
const ExecProtocol = `The exec model runs modelParams.command (a string split at spaces, or an
array of strings) in the config file's directory and talks to it one line
per step over stdin and stdout, numbers separated by spaces:

  first, once:  "# columns: t status <outputs…> | directive <inputs…>"
                (the names of what follows, for the program's information)
  each step:    beamconnect writes  "t status o1 o2 …"   (the simulation's
                time in s: BeamNG's message id × its period, the model's
                time; the connection status 0–5; then every output port
                element in port order)
                the program answers "@t d i1 i2 …"       (the request's
                time as it was written, then the connection directive,
                then every input port element in port order)

Idle requests: while BeamNG is not connected (before its first message,
after it went silent, while the directive is 0 or a bind is retried) a
request is written every 50 ms of the machine's time, so the program sees
the status and can set the directive: its status is the connection's then
(2, 1 or 4, never 3), its time the model's, standing still, and nothing
answered to it reaches BeamNG. Their number depends on how long BeamNG
takes, not on the simulation: a program that keeps state steps it only on
requests with status 3 (BeamNG's steps), never counts idle ones.

One request at a time: the next request is written only once the program
has answered the previous one, and it is the newest; requests never queue
up in the pipe, so a slow program acts on data one request old at most,
never on a backlog.

Pairing: an answer that starts with "@t" answers the request whose time
was t, and is used for that request's message only; one that names
another request (a copy, or an answer that came after its step gave up on
it) is dropped and counted (model_old_answers), never used. Echo t as the
request wrote it: a time that repeats (requests while BeamNG is silent, a
model several vehicles share, asked once per vehicle at a simulation step)
is written another way ("12.5e0"), the same number, and only that text
names its request. "@t" may be left out: the answer is then the answer to
the request outstanding when it comes. A line beyond one answer per
request of such a program is a protocol fault: said at once when it comes
with no request outstanding, counted (model_discarded), and the next
message gets neutral controls; but a message answered before it was seen
may have carried it, another request's answer.

Starting over: when BeamNG starts its coupling again (its controller
reloaded, the scenario restarted: model_resets), the program starts from
its initial state. One that speaks reset says so with a line of its own,
"# protocol: reset", before its first answer: it is then written the line
"# reset" before its next request, and goes back to its initial state
itself. One that does not is ended and started again at once (it gets the
"# columns:" line first), which is not a fault. modelParams.reset chooses:
"auto" (the default) as said; "line" never starts the program again (one
that has not said it speaks reset is not reset: said, counted as
model_not_reset, the run not healthy); "restart" always starts it again;
"none" leaves it its state on purpose (said, no fault).

When an answer is awaited: by default (lockstep) each message's reply
waits for the program's answer to it, up to the model timeout
(beamng.modelTimeoutMs, default 1500 ms: BeamNG waits 2 s for a reply), so
a slow answer slows BeamNG and never changes what BeamNG gets. With
beamng.realTime (run --real-time) an answer must come within
modelParams.deadlineMs (default: 80 % of the coupling period) to be used:
a message without its answer by then gets neutral controls (counted; over
1 % of the messages is a fault), and the later answer is dropped.
` + NamesProtocol + `

"keep" in an answer leaves that control as BeamNG has it (Gen 1 BeamNG
keeps its value; Gen 2 gets the value it last got). A number that is not
finite ("nan", "inf") is a fault, not "keep": BeamNG gets neutral controls
for that message, it is counted as non_finite and logged, and the fault
ends with the next answer whose numbers are all finite. An answer is
discarded, counted and logged (at most once a second) when it has the
wrong count of numbers, something that is not a number, is longer than
1 MB (reading goes on with the next line), comes with no request
outstanding (without "@t": the protocol fault above), or comes later than
the model timeout after its request.

Faults: when the program exits or crashes, or has been asked for longer
than beamng.modelTimeoutMs without a valid answer (in real time the
default is 5 periods, at least 25 ms; the first answer after a start may
take 10 s; a program with nothing to answer is never hung), beamconnect
logs an error at once, reports status 4, and sends BeamNG neutral
controls (pedals released, wheel torques 0, drive mode pedals) instead of
the last ones, still answering every message so BeamNG does not stall
(while it is hung, at once); run exits non-zero at the end. A program
that answers again ends the fault. A program that
exited is started again after 1 s, then 2, 4 … up to 30 s between tries
(modelParams.restart: false turns that off); it gets the "# columns:" line
first, like the first one.

Lines starting with '#' are not requests nor answers: a program skips the
ones it does not know ("# reset" comes only to one that speaks reset), and
beamconnect those it does not know. What the program writes to
stderr goes to beamconnect's stderr. The program runs in a process group
of its own: Ctrl-C in the terminal stops beamconnect, which then ends the
program, rather than reaching the program itself. What the program starts
ends with it: when it exits, when beamconnect stops it, and before a
restart (unix: its process group; Windows: a job object). If beamconnect
itself is killed, the program is killed too (Linux: a parent-death
signal; Windows: the job object). After a config reload a new
"# columns:" line comes before the next request, and the answers must
follow the new columns from then on.`
