// Package timesync holds the simulation clock: who owns time in a coupling
// (VS Connect's absolute time sync, as master or slave) and how BeamNG's
// message ids map onto remote simulation time.
package timesync

import "beamconnect/beamng"

// Mode is the client's role in time synchronisation.
type Mode uint8

const (
	// None: replies go as soon as the model has stepped; local time is wall
	// time scaled by timeDilation.
	None Mode = iota
	// Slave: timeSyncMode "absolute" on an outputs group. BeamNG is the
	// master; local time follows the remote time of the latest message.
	Slave
	// Master: timeSyncMode "absolute" on an inputs group. A local clock paced
	// by timeDilation holds replies, so BeamNG cannot run ahead of it.
	Master
)

func (m Mode) String() string {
	switch m {
	case Slave:
		return "slave"
	case Master:
		return "master"
	}
	return "none"
}

// ModeFor is the role an "absolute" contract gives the client: an incoming
// contract (outputs, data from BeamNG) makes BeamNG the master, an outgoing
// one (inputs, data to BeamNG) makes the client the master.
func ModeFor(d beamng.Direction) Mode {
	if d == beamng.FromBeamNG {
		return Slave
	}
	return Master
}

// RemoteTime is the simulation time at which BeamNG generated message id.
// BeamNG's messages carry no time; ids count sends from 0, one per send
// period, so message k was generated at k × sendPeriod.
func RemoteTime(id, sendPeriod float64) float64 { return id * sendPeriod }
