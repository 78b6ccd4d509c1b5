//go:build linux && arm64

package affinity

const sysGetcpu = 168
