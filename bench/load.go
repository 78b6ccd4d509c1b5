package bench

import (
	"fmt"
	"os/exec"
	"runtime"

	"beamconnect/internal/proctree"
)

// load is busy loops beside a measurement: processes of their own that
// only compute, at normal priority, as the PC beside BeamNG has every core
// busy (BeamNG's own threads, a Simulink model, a compile). They are
// programs, not goroutines of this process, so that the scheduler shares
// the cores between them and beamconnect's processes as it shares a PC's:
// thread for thread, process for process.
type load struct{ trees []*proctree.Tree }

// startLoad starts n busy loops, each argv (the binary in its busy mode,
// Busy). They end with this process however it ends (package proctree).
func startLoad(argv []string, n int) (*load, error) {
	l := &load{}
	for range n {
		t, err := proctree.Start(exec.Command(argv[0], argv[1:]...))
		if err != nil {
			l.stop()
			return nil, fmt.Errorf("starting a busy loop: %w", err)
		}
		l.trees = append(l.trees, t)
	}
	return l, nil
}

func (l *load) stop() {
	for _, t := range l.trees {
		t.Kill()
		t.Wait()
	}
	l.trees = nil
}

// Busy is a busy loop's program (`bench --load`): one thread computing,
// never waiting, until it is killed.
func Busy() {
	runtime.GOMAXPROCS(1)
	for x := uint64(0); ; x++ {
		spinSink = x
	}
}

// spinSink keeps Busy's loop from being compiled away.
var spinSink uint64
