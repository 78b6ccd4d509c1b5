package recording

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Bad files are refused with the file, line and column and what was
// expected (testdata/errors.txt holds the expected messages).
func TestScanErrors(t *testing.T) {
	want, err := os.ReadFile("testdata/errors.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		file := line[:strings.IndexByte(line, ':')]
		f, err := os.Open(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		err = Scan(f, file, func(*Header) error { return nil }, func(*Header, *Row) error { return nil })
		f.Close()
		if err == nil || err.Error() != line {
			t.Errorf("%s:\n got %v\nwant %s", file, err, line)
		}
	}
}

// A recording with a reload that added a field: two headers, a vehicle-less
// layout; rows keep their columns.
const reloaded = `time,status,id,reply_id,reloads,out1.groundspeed,directive,in1.throttle
0.000,3,0,1,0,0,1,0.5
0.005,3,1,2,0,0.1,1,0.5
0.010,3,2,3,0,0.2,1,0.4
time,status,id,reply_id,reloads,out1.groundspeed,out1.rpm,directive,in1.throttle
0.015,3,3,4,1,0.3,900,1,0.3
0.020,3,4,5,1,0.4,950,1,NaN
0.025,3,5,6,1,0.5,1000,1,0.1
`

func TestScanReload(t *testing.T) {
	var headers []int
	var rows int
	err := Scan(strings.NewReader(reloaded), "r.csv", func(h *Header) error {
		headers = append(headers, len(h.Columns))
		return nil
	}, func(h *Header, r *Row) error {
		rows++
		if len(r.Values) != len(h.Columns) {
			t.Errorf("line %d: %d values for %d columns", r.Line, len(r.Values), len(h.Columns))
		}
		return nil
	})
	if err != nil || len(headers) != 2 || headers[1] != 9 || rows != 6 {
		t.Errorf("headers %v, rows %d: %v", headers, rows, err)
	}
}

func open(s string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
}

// Any input either is refused with a positioned error or plots to valid
// SVG.
func FuzzScan(f *testing.F) {
	f.Add(reloaded)
	f.Add("time,vehicle,status\n0,a,3\n")
	f.Add("time\n1e400\n")
	f.Add("time,status,id,reply_id,reloads,local_time,directive,in1.h [m],\"model.A[1,2] \"\"g\"\"\"\n0,3,0,1,0,0,1,0.99,2\n")
	f.Add("time,\"a,b\n0,1\n")
	f.Add("time,model.x [\n0,1\n")
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		_, err := Plot(&b, "f.csv", CSVSource("f.csv", open(s)), PlotOptions{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv:") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if err := xml.Unmarshal(b.Bytes(), new(struct {
			XMLName xml.Name `xml:"svg"`
		})); err != nil {
			t.Fatalf("invalid SVG: %v\n%s", err, b.String())
		}
	})
}

// Lines of any length are read: a recording of millions of ports has
// header and rows of tens of megabytes (a line scanner's 16 MB limit
// refused them).
func TestScanLongLines(t *testing.T) {
	const cols = 2_500_000 // a header of 20 MB
	var b strings.Builder
	b.WriteString("time,status,id,reply_id,reloads")
	for i := range cols {
		b.WriteString(",out1.c")
		b.WriteString(strconv.Itoa(i % 10))
	}
	b.WriteString("\n0.5")
	for range cols + 4 {
		b.WriteString(",1")
	}
	b.WriteString("\r\n1.0")
	for range cols + 4 {
		b.WriteString(",2")
	}
	var widths []int
	var last float64
	err := Scan(strings.NewReader(b.String()), "big.csv", func(h *Header) error {
		widths = append(widths, len(h.Columns))
		return nil
	}, func(h *Header, r *Row) error {
		widths = append(widths, len(r.Values))
		last = r.Values[len(r.Values)-1]
		return nil
	})
	if err != nil || len(widths) != 3 || widths[0] != cols+5 || widths[1] != cols+5 || widths[2] != cols+5 || last != 2 {
		t.Errorf("widths %v, last value %v: %v", widths, last, err)
	}
}

// Reading a row of a several-vehicle recording allocates nothing once its
// vehicles are known: a long run's rows are read at the disk's pace.
func TestRowAllocs(t *testing.T) {
	h, err := parseHeader("f.csv", 1, "time,vehicle,status,id,out1.groundspeed")
	if err != nil {
		t.Fatal(err)
	}
	lines := [][]byte{[]byte("0.005,ego,3,1,12.5"), []byte("0.005,lead,3,1,11.25")}
	var row Row
	for _, l := range lines { // learn the vehicles
		parseRow("f.csv", 2, l, h, &row)
	}
	i := 0
	if got := testing.AllocsPerRun(1000, func() {
		if err := parseRow("f.csv", 2, lines[i%2], h, &row); err != nil {
			t.Fatal(err)
		}
		i++
	}); got != 0 {
		t.Errorf("%v allocations per row", got)
	}
	if row.Vehicle != "lead" && row.Vehicle != "ego" || row.Values[4] != 12.5 && row.Values[4] != 11.25 {
		t.Errorf("row %+v", row)
	}
	parseRow("f.csv", 3, []byte("0.010,ego,3,2,13"), h, &row)
	if row.Vehicle != "ego" || row.Values[0] != 0.010 || row.Values[4] != 13 || !math.IsNaN(row.Values[1]) {
		t.Errorf("row %+v, want ego's at 0.010", row)
	}
}
