package fmu

import (
	"fmt"
	"os"
	"strconv"
)

// What beamconnect reads of an FMU's model description is bounded, so
// that an FMU with a huge one (a physical model exported with every
// internal state) cannot take minutes and gigabytes to validate or run:
// unbounded, 1.9 M variables took 37 s and 2.2 GB. A controller has tens
// of variables, a large plant model tens of thousands. Both limits can be
// raised through the environment, for the rare FMU that needs it.
const (
	// MaxVariables is the most variables a model description may declare.
	MaxVariables = 100_000
	// MaxDescription is the largest model description read, in bytes.
	MaxDescription = 64 << 20
)

// The environment variables that raise the limits.
const (
	envMaxVariables   = "BEAMCONNECT_FMU_MAX_VARIABLES"
	envMaxDescription = "BEAMCONNECT_FMU_MAX_DESCRIPTION_MB"
)

// limit is a limit as the environment sets it, or def.
func limit(env string, def, unit int64) (int64, error) {
	v, ok := os.LookupEnv(env)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s %q: expected a whole number greater than 0", env, v)
	}
	return n * unit, nil
}

func variablesLimit() (int, error) {
	n, err := limit(envMaxVariables, MaxVariables, 1)
	return int(n), err
}

func descriptionLimit() (int64, error) { return limit(envMaxDescription, MaxDescription, 1<<20) }

// tooManyVariables is the error for a description over the limit: the
// limit, and the ways out.
func tooManyVariables(n int) error {
	return fmt.Errorf("modelDescription.xml declares more than %d variables, the most beamconnect reads: export the FMU without its local or protected variables (most tools have an option for that), or raise the limit with the environment variable %s", n, envMaxVariables)
}

func tooLarge(size uint64, n int64) error {
	return fmt.Errorf("modelDescription.xml is %d bytes, more than the %d (%d MB) beamconnect reads: export the FMU without its local or protected variables (most tools have an option for that), or raise the limit with the environment variable %s (in MB)", size, n, n>>20, envMaxDescription)
}
