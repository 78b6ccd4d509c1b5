package models

import (
	"errors"
	"fmt"
	"math"

	"beamconnect/ports"
)

// Keep is the value a model writes to a control it leaves as BeamNG has it
// (an exec program's "keep"): a NaN with a payload of its own, so that it
// is told apart from a NaN a computation produced, which is a fault. Gen 1
// BeamNG keeps its value where a reply carries NaN; Gen 2 gets the value
// it last got. Copies keep the payload; arithmetic does not, and must not
// be done on it.
var Keep = math.Float64frombits(keepBits)

// keepBits is a quiet NaN whose payload spells "keep".
const keepBits = 0x7ff8_0000_6b65_6570

// IsKeep reports whether v is Keep.
func IsKeep(v float64) bool { return math.Float64bits(v) == keepBits }

// ErrLate is what a model's fault wraps when its step has not answered
// within the model timeout (a hung or too slow program or FMU): the
// coupling counts the messages answered with neutral controls meanwhile as
// having no controls in time, as it counts a step past its deadline.
var ErrLate = errors.New("no answer within the model timeout")

// Late is a fault of a step that has not answered within the model
// timeout, saying so in its own words: errors.Is(Late(msg), ErrLate).
func Late(msg string) error { return &late{msg} }

type late struct{ msg string }

func (e *late) Error() string        { return e.msg }
func (e *late) Is(target error) bool { return target == ErrLate }

// CheckDeadline checks modelParams.deadlineMs (an exec program's or an
// FMU's) against the plan: it is how long a message waits for its step in
// real time, so it must be shorter than the model timeout; in lockstep a
// message waits for its step up to the model timeout, and a deadline is
// said to have no effect.
func CheckDeadline(p Params, plan *ports.Plan) []Finding {
	d, ok := p["deadlineMs"].(float64)
	switch {
	case !ok || d <= 0:
		return nil
	case !plan.RealTime:
		return []Finding{{Param: "deadlineMs", Warning: true, Msg: fmt.Sprintf("%v ms has no effect in lockstep, where each reply waits for its step up to the model timeout (%v ms); it applies with beamng.realTime (run --real-time)", d, plan.ModelTimeout*1000)}}
	case d/1000 > plan.ModelTimeout:
		return []Finding{{Param: "deadlineMs", Msg: fmt.Sprintf("%v ms is longer than the model timeout (%v ms, beamng.modelTimeoutMs): expected a shorter deadline", d, plan.ModelTimeout*1000)}}
	}
	return nil
}
