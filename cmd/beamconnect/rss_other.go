//go:build !unix

package main

import "os"

func selfPeakRSS() int64                  { return 0 }
func childPeakRSS(*os.ProcessState) int64 { return 0 }
func livePeakRSS(int) int64               { return 0 }

func currentRSS() int64 { return 0 }
