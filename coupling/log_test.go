package coupling

import (
	"context"
	"testing"
	"time"

	"beamconnect/beamng/emulator"
	"beamconnect/logtest"
)

// logBuffer is the log a test reads while the coupling writes it.
type logBuffer = logtest.Buffer

// runBoth runs a bound coupling against an emulator until the emulator has
// done its steps.
func runBoth(t *testing.T, c *Coupling, em *emulator.Emulator) emulator.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		c.Run(ctx)
		close(done)
	}()
	sum, _ := em.Run(ctx)
	cancel()
	<-done
	return sum
}
