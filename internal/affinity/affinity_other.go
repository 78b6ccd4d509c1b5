//go:build !windows && !(linux && (amd64 || arm64))

package affinity

// Current is 0 here: no processor is known.
func Current() Processor { return 0 }

// Follower moves nothing here.
type Follower struct{}

// Follow does nothing here and reports false.
func (*Follower) Follow(Processor) bool { return false }
