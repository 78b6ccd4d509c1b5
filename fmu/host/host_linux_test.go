package host

import (
	"syscall"
	"testing"

	"beamconnect/fmu/testfmu"
)

// Stopping the host is the coupling's to order: a SIGTERM from elsewhere
// (a service manager stopping every process of the service, beamconnect
// included, which then stops its host itself) leaves it serving, not
// dead and counted as a crashed FMU.
func TestHostOutlivesSIGTERM(t *testing.T) {
	c, _ := start(t, setup(t, testfmu.Options{}))
	out := make([]float64, 3)
	step(t, c, 0, []float64{0}, out)
	syscall.Kill(c.tree.Pid(), syscall.SIGTERM)
	for i := 1; i <= 50; i++ {
		step(t, c, float64(i)*0.005, []float64{0}, out)
	}
}
