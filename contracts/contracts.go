// Package contracts holds what VS Connect calls a contract, one per port
// group: its update schedule and the meta values it reports about the data
// it carries (time, receive_time_offset, serial_number, ping_results).
package contracts

import "math"

// Meta names a value the client computes about received data or about the
// link, rather than a slot of BeamNG's message (a field with
// "propertyType": "meta").
type Meta uint8

const (
	NotMeta           Meta = iota
	Time                   // remote simulation time the data was generated at
	ReceiveTimeOffset      // local receive time minus remote time
	SerialNumber           // serial number of the latest update: BeamNG's message id
	PingResults            // link timing statistics (commData groups only)
)

var metaNames = [...]string{
	Time:              "time",
	ReceiveTimeOffset: "receive_time_offset",
	SerialNumber:      "serial_number",
	PingResults:       "ping_results",
}

// String is the canonical propertyName of m.
func (m Meta) String() string {
	if m == NotMeta || int(m) >= len(metaNames) {
		return "not meta"
	}
	return metaNames[m]
}

// CommData reports whether m belongs in a commData group; the others belong
// in contract groups (VS Connect memo, table 4).
func (m Meta) CommData() bool { return m == PingResults }

// ParseMeta reads a meta propertyName. The memo spells the ping statistics
// both "ping_results" and "pingResults"; both are accepted.
func ParseMeta(name string) (Meta, bool) {
	switch name {
	case "time":
		return Time, true
	case "receive_time_offset":
		return ReceiveTimeOffset, true
	case "serial_number":
		return SerialNumber, true
	case "ping_results", "pingResults":
		return PingResults, true
	}
	return NotMeta, false
}

// MetaNames lists the canonical meta propertyNames, for hints.
func MetaNames() []string { return metaNames[1:] }

// Schedule says when a contract updates, in units of BeamNG messages: BeamNG
// sends one message per coupling period, and a contract whose period is a
// multiple of that takes part in every Every-th message.
type Schedule struct {
	Period float64 // seconds, as BeamNG really runs it (whole physics steps)
	Every  int     // BeamNG messages per update, ≥ 1
}

// NewSchedule fits a contract period onto the coupling period. A period that
// is not a whole multiple is rounded up, so the contract never updates more
// often than it asked.
func NewSchedule(period, couplingPeriod float64) Schedule {
	every := 1
	if couplingPeriod > 0 && period > couplingPeriod {
		r := period / couplingPeriod
		every = int(math.Round(r))
		if math.Abs(r-float64(every)) > 1e-9 {
			every = int(math.Ceil(r))
		}
	}
	return Schedule{Period: float64(every) * couplingPeriod, Every: every}
}

// Due reports whether the message with the given id carries an update.
// BeamNG's ids count messages from 0, so id 0 is always due.
func (s Schedule) Due(id uint64) bool {
	return s.Every <= 1 || id%uint64(s.Every) == 0
}
