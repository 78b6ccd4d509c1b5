/* What the shim and beamconnect's child process say to each other
 * (fmuexport/child, protocol.go): the protocol's version, which the child
 * checks, the requests, and the codes of the child's table of variables.
 *
 * Written by fmuexport/child's TestCHeader (go generate ./fmuexport/child)
 * from the Go constants: do not edit. */
#ifndef BEAMCONNECT_PROTOCOL_H
#define BEAMCONNECT_PROTOCOL_H

/* The protocol's version: the child refuses another (fmuexport.Protocol). */
#define SHIM_PROTOCOL 3

/* Requests: a type byte, then its payload. */
#define REQ_OPEN 'O'
#define REQ_INIT 'I'
#define REQ_STEP 'S'
#define REQ_CONTINUE 'C'
#define REQ_TERMINATE 'T'
#define REQ_RESET 'R'
#define REQ_LIST 'L'

/* The answer that says "more to come": log lines of a call still going on;
 * the shim logs them and asks on (REQ_CONTINUE). */
#define RESULT_PENDING 255

/* A variable's type. */
#define T_REAL 0
#define T_INTEGER 1
#define T_STRING 2

/* A variable's causality. */
#define C_OUTPUT 0
#define C_INPUT 1
#define C_PARAMETER 2
#define C_INDEPENDENT 3

#endif
