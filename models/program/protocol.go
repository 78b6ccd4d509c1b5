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
                the program answers "d i1 i2 …"          (the connection
                directive, then every input port element in port order)

One request at a time: the next request is written only once the program
has answered the previous one, and it is the newest; requests never queue
up in the pipe, so a slow program acts on data one request old at most,
never on a backlog. An answer is the answer to the request outstanding
when it comes (there is never more than one): it is used for that
request's message only, and an answer to an older request (one whose
message was answered without it) is dropped and counted, never used for
a later message.

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
1 MB (reading goes on with the next line), comes when no request is
outstanding, or comes later than the model timeout after its request.

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

Lines starting with '#' are ignored both ways. What the program writes to
stderr goes to beamconnect's stderr. The program runs in a process group
of its own: Ctrl-C in the terminal stops beamconnect, which then ends the
program, rather than reaching the program itself. What the program starts
ends with it: when it exits, when beamconnect stops it, and before a
restart (unix: its process group; Windows: a job object). If beamconnect
itself is killed, the program is killed too (Linux: a parent-death
signal; Windows: the job object). After a config reload a new
"# columns:" line comes before the next request, and the answers must
follow the new columns from then on.`
