package coupling

import "beamconnect/ports"

// Status is VS Connect's connection status, port 0 of the outputs.
type Status = ports.Status

// The statuses, as the coupling's code and its users name them.
const (
	Unknown       = ports.Unknown
	Unconnected   = ports.Unconnected
	Connecting    = ports.Connecting
	Connected     = ports.Connected
	Error         = ports.Failed
	Disconnecting = ports.Disconnecting
)
