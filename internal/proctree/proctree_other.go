//go:build !unix && !windows

package proctree

type sysTree struct{}

func (t *Tree) start(bool) error { return t.cmd.Start() }

func (t *Tree) kill() {
	if t.cmd.ProcessState == nil {
		t.cmd.Process.Kill()
	}
}

func (t *Tree) release() {}

// EndWithParent does nothing here.
func EndWithParent() {}

func prepare() {}
