package contracts

// Incoming is the run-time state of an incoming contract (an outputs group):
// the latest update's serial number and times, and VS Connect's overdue
// detection. It never allocates.
type Incoming struct {
	Schedule Schedule
	// Overdue is how long past an update's expected arrival the contract
	// waits before it counts as blocked, in seconds; < 0 disables it.
	Overdue float64

	Received   bool
	Serial     float64 // serial number (BeamNG's message id) of the latest update
	RemoteTime float64 // remote simulation time the latest update was generated at
	LocalTime  float64 // local time it was received at
	Blocked    bool
	since      float64 // local time the contract started waiting
}

// Start begins waiting for data at local time t: the first update is
// expected within one period.
func (c *Incoming) Start(t float64) {
	c.Received, c.Blocked, c.since = false, false, t
}

// Update records an update received at local time local.
func (c *Incoming) Update(serial, remote, local float64) {
	c.Received, c.Serial, c.RemoteTime, c.LocalTime = true, serial, remote, local
	c.Blocked = false
}

// ReceiveTimeOffset is VS Connect's receive_time_offset: the local time the
// latest update arrived minus the remote time it was generated at.
func (c *Incoming) ReceiveTimeOffset() float64 { return c.LocalTime - c.RemoteTime }

// Check updates and returns the blocked state at local time now: blocked
// once the next update is more than Overdue past its expected arrival (the
// last arrival plus one period), as in the memo's example (update at 10.0,
// period 0.1, timeout 0.5: blocked from 10.6).
func (c *Incoming) Check(now float64) bool {
	if c.Overdue < 0 {
		c.Blocked = false
		return false
	}
	last := c.since
	if c.Received {
		last = c.LocalTime
	}
	c.Blocked = now > last+c.Schedule.Period+c.Overdue
	return c.Blocked
}
