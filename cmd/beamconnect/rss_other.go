//go:build !unix && !windows

package main

import (
	"os"
	"time"
)

func selfPeakRSS() int64                  { return 0 }
func childPeakRSS(*os.ProcessState) int64 { return 0 }
func livePeakRSS(int) int64               { return 0 }

func currentRSS() int64 { return 0 }

func cpuTime() time.Duration { return 0 }
