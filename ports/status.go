package ports

// Status is VS Connect's connection status, the value of port 0 of the
// outputs (StatusSource) that a model reads.
type Status int32

const (
	Unknown       Status = 0
	Unconnected   Status = 1 // directive 0: not trying
	Connecting    Status = 2 // bound, waiting for BeamNG, or BeamNG went silent
	Connected     Status = 3
	Error         Status = 4 // bind or socket failure (retried with backoff), or a model fault: VS Connect's "error"
	Disconnecting Status = 5 // directive went 0: neutral controls sent, port being released
)

func (s Status) String() string {
	switch s {
	case Unconnected:
		return "unconnected"
	case Connecting:
		return "connecting"
	case Connected:
		return "connected"
	case Error:
		return "error"
	case Disconnecting:
		return "disconnecting"
	}
	return "unknown"
}

// statusRank orders statuses for port 0 of several vehicles: an error if
// any vehicle has one, then disconnecting, connecting, unconnected,
// unknown, and connected only when every one is.
var statusRank = [...]int{Connected: 0, Unknown: 1, Unconnected: 2, Connecting: 3, Disconnecting: 4, Error: 5}

// Worse is the one of s and o that speaks for both: port 0 of several
// vehicles, or a run's status at its end.
func (s Status) Worse(o Status) Status {
	if statusRank[o] > statusRank[s] {
		return o
	}
	return s
}
