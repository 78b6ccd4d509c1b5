package timeslice

const (
	sysSchedSetattr = 314
	sysSchedGetattr = 315
)
