package timeslice

const (
	sysSchedSetattr = 274
	sysSchedGetattr = 275
)
