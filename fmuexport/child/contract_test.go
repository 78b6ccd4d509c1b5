package child

import (
	"flag"
	"testing"

	"beamconnect/fmuexport"
	"beamconnect/internal/cheader"
)

var update = flag.Bool("update", false, "write the shim's protocol.h (fmuexport/shim/c) from this package's constants")

// The shim speaks this package's protocol in C: its protocol.h (the
// version, the requests, the answer that says more is to come, the
// variables' types and causalities) is written from the constants here,
// and must be what they write. After changing one: `go generate
// ./fmuexport/child`, then `bash fmuexport/shim/build`.
func TestCHeader(t *testing.T) {
	h := cheader.Write("BEAMCONNECT_PROTOCOL_H",
		"What the shim and beamconnect's child process say to each other (fmuexport/child, protocol.go): the protocol's version, which the child checks, the requests, and the codes of the child's table of variables.",
		"fmuexport/child's TestCHeader (go generate ./fmuexport/child)",
		[]cheader.Define{
			cheader.Int("SHIM_PROTOCOL", fmuexport.Protocol, "The protocol's version: the child refuses another (fmuexport.Protocol)."),
			cheader.Char("REQ_OPEN", reqOpen, "Requests: a type byte, then its payload."),
			cheader.Char("REQ_INIT", reqInit, ""),
			cheader.Char("REQ_STEP", reqStep, ""),
			cheader.Char("REQ_CONTINUE", reqContinue, ""),
			cheader.Char("REQ_TERMINATE", reqTerminate, ""),
			cheader.Char("REQ_RESET", reqReset, ""),
			cheader.Char("REQ_LIST", reqList, ""),
			cheader.Int("RESULT_PENDING", resultPending, "The answer that says \"more to come\": log lines of a call still going on; the shim logs them and asks on (REQ_CONTINUE)."),
			cheader.Int("T_REAL", fmuexport.Real, "A variable's type."),
			cheader.Int("T_INTEGER", fmuexport.Integer, ""),
			cheader.Int("T_STRING", fmuexport.String, ""),
			cheader.Int("C_OUTPUT", fmuexport.Output, "A variable's causality."),
			cheader.Int("C_INPUT", fmuexport.Input, ""),
			cheader.Int("C_PARAMETER", fmuexport.Parameter, ""),
			cheader.Int("C_INDEPENDENT", fmuexport.Independent, ""),
		})
	cheader.Check(t, "../shim/c/protocol.h", h, *update,
		"run `go generate ./fmuexport/child` and `bash fmuexport/shim/build`, and commit what they write")
}
