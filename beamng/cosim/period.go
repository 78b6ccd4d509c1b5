package cosim

import (
	"math"
	"strconv"
	"strings"
)

// LuaText is how LuaJIT's tostring writes a number ("%.14g"), which is the
// text lpack carries a number as from BeamNG's editor to its controller.
func LuaText(v float64) string {
	return strconv.FormatFloat(v, 'g', 14, 64)
}

// LpackNumber decodes number text the way BeamNG's lpack.decode does: a
// number with an exponent goes through tonumber (exact); a plain decimal is
// built digit by digit, the fraction as Σ digit·scale with scale starting at
// 0.1 and multiplied by 0.1 for each digit, so 0.0005 arrives a little over
// 0.0005 (spec §3.5).
func LpackNumber(text string) float64 {
	if strings.ContainsAny(text, "eEnN") { // exponents, inf, nan
		v, _ := strconv.ParseFloat(text, 64)
		return v
	}
	neg := strings.HasPrefix(text, "-")
	text = strings.TrimLeft(text, "+-")
	whole, frac, _ := strings.Cut(text, ".")
	f := 0.0
	for _, c := range whole {
		f = f*10 + float64(c-'0')
	}
	scale := 0.1
	for _, c := range frac {
		f += float64(c-'0') * scale
		scale *= 0.1
	}
	if neg {
		return -f
	}
	return f
}

// Arrived is a time as BeamNG's controller gets it from the CSV's value:
// written by tostring, decoded by lpack.
func Arrived(v float64) float64 { return LpackNumber(LuaText(v)) }

// SendSkips is how many physics steps BeamNG's Gen 2 controller skips
// between sends for a 3rd Party Computation Time t:
// ceil(arrived t / physicsDt) - 1.
func SendSkips(t, physicsDt float64) int {
	return max(int(math.Ceil(Arrived(t)/physicsDt))-1, 0)
}

// Period is the send period BeamNG will really use for computation time t.
func Period(t, physicsDt float64) float64 {
	return float64(SendSkips(t, physicsDt)+1) * physicsDt
}

// Unanswered is how many messages BeamNG lets be in flight: ceil(ping / t),
// both as they arrive.
func Unanswered(ping, t float64) int {
	return max(int(math.Ceil(Arrived(ping)/Arrived(t))), 1)
}

// TimeText is a 3rd Party Computation Time that makes BeamNG send every
// steps physics steps exactly: the plain k·physicsDt often arrives a hair
// over it and costs a step (0.005 gives 11 steps), so the last of its 14
// significant digits is walked down until it arrives at or under.
func TimeText(steps int, physicsDt float64) string {
	want := float64(steps) * physicsDt
	for j := 0; j < 1000; j++ {
		v := want * (1 - float64(j)*1e-14)
		text := LuaText(v)
		parsed, err := strconv.ParseFloat(text, 64)
		if err != nil {
			continue
		}
		if SendSkips(parsed, physicsDt)+1 == steps {
			return text
		}
	}
	return LuaText(want) // not reached for physics steps BeamNG uses
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
