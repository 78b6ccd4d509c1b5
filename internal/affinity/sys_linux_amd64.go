//go:build linux && amd64

package affinity

const sysGetcpu = 309
