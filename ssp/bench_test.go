package ssp

import "testing"

func BenchmarkParseSSD(b *testing.B) {
	data := read(b, "testdata/valid.ssd")
	for b.Loop() {
		ParseSSD("f.ssd", data)
	}
}
