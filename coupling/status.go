package coupling

// Status is VS Connect's connection status, port 0 of the outputs.
type Status int32

const (
	Unknown       Status = 0
	Unconnected   Status = 1 // directive 0: not trying
	Connecting    Status = 2 // bound, waiting for BeamNG, or BeamNG went silent
	Connected     Status = 3
	Error         Status = 4 // bind or socket failure (retried with backoff), or a model fault
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

// worse is the one of a and b that port 0 reports for both.
func worse(a, b Status) Status {
	if statusRank[b] > statusRank[a] {
		return b
	}
	return a
}
