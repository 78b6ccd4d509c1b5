package recording

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// Plotting a recording of 200 000 ports, 20 rows (each line 3 MB): it
// took minutes, drawing every port, before the fields were capped and the
// per-header work made linear.
func BenchmarkPlotManyPorts(b *testing.B) {
	rec := manyPorts(200_000, 20)
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		if _, err := Plot(io.Discard, "many.csv", CSVSource("many.csv", open(rec)), PlotOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// A recording of a 10-minute free run of the cruise rig: 1.2 million rows.
func BenchmarkPlotLongRun(b *testing.B) {
	var s strings.Builder
	s.WriteString("time,status,id,reply_id,reloads,out1.groundspeed,out2.throttle,out2.brake,out3.rpm,out3.gear,directive,in1.throttle,in1.brake\n")
	for i := range 1_200_000 {
		t := float64(i) * 0.0005
		fmt.Fprintf(&s, "%.6f,3,%d,%d,0,%g,%g,0,%g,%d,1,%g,0\n", t, i, i+1, 20+math.Sin(t), 0.3, 3000+1000*math.Sin(t), 1+i/300000, 0.3)
	}
	rec := s.String()
	b.SetBytes(int64(len(rec)))
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		if _, err := Plot(&out, "long.csv", CSVSource("long.csv", open(rec)), PlotOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(out.Len()), "svg-bytes")
}
