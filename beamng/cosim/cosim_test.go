package cosim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"beamconnect/beamng"
)

const rig = "Section,Subsection,Parameter Name,Parameter Value,Type,Description,Units,Notes\n" +
	"signalTo,Kinematics,vehicleGroundSpeed,,number,Vehicle ground speed - m/s,,\n" +
	"signalTo,Powertrain,mainEngine outputAV1,,number,,,\n" +
	"signalTo,Wheels,wheelSpeedRL,,number,\"RL - Wheel speed, m/s\",,\n" +
	"signalFrom,Driver,throttle,value,number,Throttle pedal - range [0..1],,\n" +
	"signalFrom,Driver,throttle,freeze,boolean,,,\n" +
	"vehicle,,Vehicle Model,pickup,string,,,\n" +
	"connection,,3rd Party Computation Time,0.00050000002374873,number,,,\n" +
	"connection,,Ping Time,9.9999997473788e-06,number,,,\n" +
	"connection,otherUDP,IP,127.0.0.1,string,,,\n" +
	"connection,otherUDP,port,64990,number,,,\n" +
	"connection,beamngUDP,IP,127.0.0.2,string,,,\n" +
	"connection,beamngUDP,port,64991,number,,,"

// What BeamNG's editor writes reads back whole, whatever the line ends.
func TestParseLineEnds(t *testing.T) {
	for name, text := range map[string]string{
		"LF, no final newline": rig,
		"LF":                   rig + "\n",
		"CRLF":                 strings.ReplaceAll(rig, "\n", "\r\n") + "\r\n",
		"CR":                   strings.ReplaceAll(rig, "\n", "\r"),
		"BOM and blank lines":  "\xef\xbb\xbf" + strings.Replace(rig, "\nsignalFrom", "\n\nsignalFrom", 1),
	} {
		t.Run(name, func(t *testing.T) {
			f, err := Parse("rig.csv", []byte(text))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			l := f.Layout()
			if l.Len(beamng.FromBeamNG) != 4 || l.Len(beamng.ToBeamNG) != 3 {
				t.Errorf("%s: %d out / %d in, want 4 / 3", name, l.Len(beamng.FromBeamNG), l.Len(beamng.ToBeamNG))
			}
			if f.To[2].Desc != "RL - Wheel speed, m/s" || f.To[1].Name != "mainEngine outputAV1" {
				t.Errorf("%s: rows %+v", name, f.To)
			}
			if f.Other.String() != "127.0.0.1:64990" || f.BeamNG.String() != "127.0.0.2:64991" {
				t.Errorf("%s: addresses %v %v", name, f.Other, f.BeamNG)
			}
			if s, _ := l.At(beamng.FromBeamNG, 3); s.Meaning != "wheelRL_wheelSpeed" || s.Line != 4 {
				t.Errorf("%s: wheel row %+v", name, s)
			}
			if s, _ := l.At(beamng.ToBeamNG, 2); s.Kind != "freeze" || s.Meaning != "" {
				t.Errorf("%s: freeze row %+v", name, s)
			}
		})
	}
}

// Bad CSVs: every error at once, placed at the line and column.
func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{"x.csv:1:1: the file is empty"}},
		{"no header", "signalTo,Kinematics,vehicleYaw,,number,,,", []string{`x.csv:1:1: BeamNG skips line 1 as the header`}},
		{"unclosed quote", Header0 + "\nsignalTo,\"Kinematics,vehicleYaw,,number,,,", []string{`x.csv:2:10: a quoted field is never closed`}},
		{"text after quote", Header0 + "\nsignalTo,\"Kinematics\"x,vehicleYaw,,number,,,", []string{`x.csv:2:22: 'x' after a closing quote`}},
		// A stray quote takes the rows after it into one field, until the
		// next quote: the finding is at the stray quote, naming the lines.
		{"stray quote closed later", Header0 + "\nsignalTo,Kinematics,vehicleYaw,,number,,,\nsignalTo,Driver,brake,,number,\"[0,1] brake,,\n" +
			"signalTo,Electrics,rpm,,number,,,\nsignalFrom,Driver,brake,value,number,,,\nconnection,beamngUDP,IP,127.0.0.1,string,\"BeamNG\",,",
			[]string{`x.csv:3:31: a quoted field opens here and is closed only at 6:42, so lines 4–6 were read into it instead of as rows, and 'B' follows the closing quote: expected a " to close the field on line 3`}},
		{"stray quote never closed", Header0 + "\nsignalTo,Driver,brake,,number,\"[0,1] brake,,\nsignalTo,Electrics,rpm,,number,,,\nsignalFrom,Driver,brake,value,number,,,",
			[]string{`x.csv:2:31: a quoted field opens here and is never closed, so lines 3–4 were read into it instead of as rows: expected a " to close the field on line 2`}},
		{"bad kind", Header0 + "\nsignalFrom,Driver,throttle,scaled,number,,,", []string{`x.csv:2:28: "scaled" is not a kind of signalFrom row`}},
		{"no name", Header0 + "\nsignalTo,Kinematics,,,number,,,", []string{`x.csv:2:21: a signalTo row needs a signal name`}},
		{"bad numbers", Header0 + "\nconnection,,3rd Party Computation Time,0,number,,,\nconnection,,Ping Time,soon,number,,,\nconnection,otherUDP,port,0,number,,,",
			[]string{`x.csv:2:40: 3rd Party Computation Time 0 is out of range`, `x.csv:3:23: Ping Time "soon" is not a number`, `x.csv:4:26: "0" is not a port`}},
		{"same addresses", Header0 + "\nconnection,otherUDP,port,64891,number,,,", []string{`beamngUDP and otherUDP are both 127.0.0.1:64891`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.csv", []byte(tt.text))
			var ds Diags
			if !errors.As(err, &ds) {
				t.Fatalf("%s: accepted (%v)", tt.name, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: missing %q in\n%v", tt.name, w, err)
				}
			}
		})
	}
}

const Header0 = "Section,Subsection,Parameter Name,Parameter Value,Type,Description,Units,Notes"

// Rows BeamNG's controller mishandles are warned about, placed.
func TestParseWarnings(t *testing.T) {
	text := Header0 + "\n" +
		"signalTo,Kinematics,vehicleCOGWithoutWheelsY,,number,,,\n" +
		"signalTo,Kinematics,vehicleMidFrontBumperX,,number,,,\n" +
		"signalTo,Kinematics,vehicleYawRat,,number,,,\n" +
		"signalTo,IMU1,imuMass,,number,,,\n" +
		"signalTo,IMU2,imuMass,,number,,,\n" +
		"signalTo,Camera,depth,,number,,,\n" +
		"signalFrom,Kinematics,vehicleYaw,value,number,,,\n" +
		"signalFrom,Driver,brake,multiply,number,,,"
	f, err := Parse("w.csv", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	got := f.Warnings.Error()
	for _, w := range []string{
		"w.csv:2:21: warning: vehicleCOGWithoutWheelsY: BeamNG's controller cannot resolve",
		"w.csv:3:21: warning: vehicleMidFrontBumperX: BeamNG's controller reads this name 4 slots off",
		`w.csv:4:21: warning: BeamNG has no signal "vehicleYawRat" in Kinematics: its value is nil, and BeamNG 0.32 then fails every send (did you mean "vehicleYawRate"?)`,
		`w.csv:6:10: warning: a second IMU ("IMU2" after "IMU1")`,
		`w.csv:7:10: warning: BeamNG does not know the group "Camera"`,
		"w.csv:8:23: warning: BeamNG applies only Driver and Wheels controls",
		"w.csv:9:25: warning: a multiply row of brake without its value row",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
	// A quoted field over two lines is legal CSV (BeamNG reads it so), but
	// rarely meant: the line it takes in is not a row.
	f, err = Parse("q.csv", []byte(Header0+"\nsignalTo,Kinematics,vehicleYaw,,number,\"yaw\nin rad\",,\nsignalTo,Kinematics,vehicleRoll,,number,,,"))
	if err != nil {
		t.Fatal(err)
	}
	got = f.Warnings.Error()
	for _, w := range []string{
		"q.csv:2:40: warning: a quoted field opens here and is closed only at 3:7, so line 3 was read into it instead of as rows (BeamNG reads the file so too): if that is not meant, close the quote on line 2",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
}

// Encode writes what Parse reads back into the same layout, with csvlib's
// quoting, LF line ends and no final newline.
func TestEncodeRoundTrip(t *testing.T) {
	f, err := Parse("rig.csv", []byte(rig))
	if err != nil {
		t.Fatal(err)
	}
	out := f.Encode(TimeText(1, beamng.PhysicsDt))
	if strings.HasSuffix(string(out), "\n") || strings.Contains(string(out), "\r") {
		t.Error("not LF-only without a final newline")
	}
	if !strings.Contains(string(out), `,"RL - Wheel speed, m/s",`) || !strings.Contains(string(out), "signalFrom,Driver,throttle,freeze,boolean") {
		t.Errorf("quoting or types:\n%s", out)
	}
	g, err := Parse("again.csv", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !f.Layout().Equal(g.Layout()) || g.Other != f.Other || g.BeamNG != f.BeamNG || g.SendSkips(beamng.PhysicsDt) != 0 {
		t.Errorf("round trip changed the coupling:\n%s", out)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain": "plain", "": "", " lead": `" lead"`, "a,b": `"a,b"`, `say "hi"`: `"say ""hi"""`,
		"line\nbreak": "\"line\nbreak\"", `"q`: `"""q"`, "mainEngine outputAV1": "mainEngine outputAV1",
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// Spec §3.5: lpack's digit-by-digit decoding, and the times that undo it.
func TestLpack(t *testing.T) {
	for _, tt := range []struct {
		v     float64
		skips int
	}{{0.0005, 1}, {0.00050000002374873, 1}, {0.005, 10}, {0.0049999999999999, 9}, {0.001, 2}, {1e-5, 0}, {0.02, 40}} {
		t.Run(fmt.Sprint(tt.v), func(t *testing.T) {
			if got := SendSkips(tt.v, beamng.PhysicsDt); got != tt.skips {
				t.Errorf("SendSkips(%v) = %d, want %d (arrives as %v)", tt.v, got, tt.skips, Arrived(tt.v))
			}
		})
	}
	if Arrived(0.0005) <= 0.0005 || Arrived(1e-5) != 1e-5 || LpackNumber("-2.5") != -2.5 {
		t.Error("lpack decoding")
	}
	for k := 1; k <= 1000; k++ {
		text := TimeText(k, beamng.PhysicsDt)
		v, _ := parseFloat(text)
		if SendSkips(v, beamng.PhysicsDt)+1 != k || math.Abs(v-float64(k)*beamng.PhysicsDt) > 1e-12 {
			t.Fatalf("TimeText(%d) = %s: BeamNG sends every %d steps", k, text, SendSkips(v, beamng.PhysicsDt)+1)
		}
	}
}

// FuzzParse: never panics; every finding is placed in the file; whatever it
// accepts, Encode writes back into the same layout.
func FuzzParse(f *testing.F) {
	f.Add([]byte(rig))
	f.Add([]byte(strings.ReplaceAll(rig, "\n", "\r\n")))
	f.Add([]byte(Header0 + "\nsignalTo,\"Kine\"\"matics\",x,,number,,,"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.csv", data)
		lines := strings.Count(string(data), "\n") + strings.Count(string(data), "\r") + 1
		if err != nil {
			var ds Diags
			if !errors.As(err, &ds) || ds.Errors() == 0 {
				t.Fatalf("error is not diagnostics: %v", err)
			}
			for _, d := range ds {
				if d.Line < 1 || d.Line > lines || d.Col < 1 {
					t.Fatalf("finding outside the file (%d lines): %v", lines, d)
				}
			}
			return
		}
		again, err := Parse("again.csv", file.Encode(""))
		if err != nil {
			t.Fatalf("Encode wrote what Parse refuses: %v\n%q", err, file.Encode(""))
		}
		if !file.Layout().Equal(again.Layout()) || file.Other != again.Other || file.BeamNG != again.BeamNG {
			t.Fatalf("round trip changed the layout:\n%q\n%q", data, file.Encode(""))
		}
	})
}

// A message BeamNG reads holds at most 8192 bytes: 1023 rows of a section
// fit, the 1024th is refused where it stands.
func TestRowsPerDatagram(t *testing.T) {
	rows := func(section, kind string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "\n%s,Electrics,custom%d,%s,number,,,", section, i, kind)
		}
		return b.String()
	}
	for _, tt := range []struct {
		name, text, want string
	}{
		{"1023 of each fit", Header0 + rows("signalTo", "", MaxRows) + rows("signalFrom", "value", MaxRows), ""},
		{"1100 signalTo rows", Header0 + rows("signalTo", "", 1100),
			"x.csv:1025:1: signalTo row 1024 of 1100 does not fit: a message BeamNG sends holds at most 8192 bytes, 1024 doubles with the message id, so at most 1023 signalTo rows: expected 77 fewer rows"},
		{"1100 signalFrom rows", Header0 + rows("signalTo", "", 2) + rows("signalFrom", "value", 1100),
			"x.csv:1027:1: signalFrom row 1024 of 1100 does not fit: a reply BeamNG reads holds at most 8192 bytes, 1024 doubles with the message id, so at most 1023 signalFrom rows: expected 77 fewer rows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("x.csv", []byte(tt.text))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("%s: %v", tt.name, err)
			case tt.want == "" && (f.Layout().Len(beamng.FromBeamNG)*8 != beamng.MaxDatagram || f.Layout().Len(beamng.ToBeamNG)*8 != beamng.MaxDatagram):
				t.Errorf("%s: layout %d/%d doubles", tt.name, f.Layout().Len(beamng.FromBeamNG), f.Layout().Len(beamng.ToBeamNG))
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("%s: got %v\nwant %s", tt.name, err, tt.want)
			}
		})
	}
}

// Cut finds where BeamNG stops building its message: the first row of a
// group it does not know.
func TestCut(t *testing.T) {
	f, err := Parse("c.csv", []byte(Header0+"\nsignalTo,Kinematics,vehicleYaw,,number,,,\nsignalTo,Camera,depth,,number,,,\nsignalTo,Kinmatics,vehicleRoll,,number,,,"))
	if err != nil {
		t.Fatal(err)
	}
	if r, slot, ok := f.Cut(); !ok || r.Line != 3 || slot != 2 || r.Group != "Camera" {
		t.Errorf("Cut = %+v %d %v, want line 3, slot 2", r, slot, ok)
	}
	// Only the warning at the cut is marked: a reader replaces it with an
	// error when the config reads a row after it (line 4's is only lost).
	var marked []string
	for _, d := range f.Warnings {
		if d.Cut {
			marked = append(marked, d.String())
		}
	}
	if len(marked) != 1 || !strings.HasPrefix(marked[0], `c.csv:3:10: warning: BeamNG does not know the group "Camera"`) {
		t.Errorf("warnings marked as the cut: %q", marked)
	}
	g, _ := Parse("rig.csv", []byte(rig))
	if _, _, ok := g.Cut(); ok {
		t.Error("a CSV whose groups BeamNG knows is cut")
	}
}

// bigCSV is n signalFrom multiply rows without value rows (each one warned
// about twice) and a signalTo row: the worst case of the row checks.
func bigCSV(n int) []byte {
	var b bytes.Buffer
	b.WriteString(Header0 + "\nsignalTo,Kinematics,vehicleGroundSpeed,,number,,,")
	for i := range n {
		fmt.Fprintf(&b, "\nsignalFrom,Driver,throttle%d,multiply,number,,,", i)
	}
	b.WriteString("\nconnection,,3rd Party Computation Time,0.0049999999999999,number,,,")
	return b.Bytes()
}

// BenchmarkParseRows parses CSVs of 1000 to 100 000 rows: the time per row
// must stay flat (the checks are one pass each, not a pass per row).
func BenchmarkParseRows(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		data := bigCSV(n)
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				Parse("big.csv", data)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
		})
	}
}

// The ranges BeamNG documents for the controls it applies: the pedals 0
// to 1, the steering −1 to 1, on value rows only (a multiply row scales
// the pedal, it is not the pedal); no range for wheel torques.
func TestControlRanges(t *testing.T) {
	f, err := Parse("rig.csv", []byte(`Section,Subsection,Parameter Name,Parameter Value,Type,Description,Units,Notes
signalTo,Kinematics,vehicleGroundSpeed,,number,,,
signalFrom,Driver,throttle,value,number,,,
signalFrom,Driver,throttle,multiply,number,,,
signalFrom,Driver,parkingBrake,value,number,,,
signalFrom,Driver,steeringWheelPosition,value,number,,,
signalFrom,Wheels,propulsionTorqueRL,value,number,,,
connection,,3rd Party Computation Time,0.0049999999999999,number,,,
connection,,Ping Time,1e-05,number,,,
connection,otherUDP,IP,127.0.0.1,string,,,
connection,otherUDP,port,64890,number,,,
connection,beamngUDP,IP,127.0.0.1,string,,,
connection,beamngUDP,port,64891,number,,,`))
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := f.Layout().Limits()
	inf := math.Inf(1)
	for i, w := range []struct {
		name   string // the slot's row
		lo, hi float64
	}{
		{"id", -inf, inf},
		{"throttle", 0, 1},
		{"throttle multiply", -inf, inf},
		{"parkingBrake", 0, 1},
		{"steeringWheelPosition", -1, 1},
		{"propulsionTorqueRL", -inf, inf},
	} {
		t.Run(w.name, func(t *testing.T) {
			if lo[i] != w.lo || hi[i] != w.hi {
				t.Errorf("slot %d: [%v, %v], want [%v %v]", i, lo[i], hi[i], w.lo, w.hi)
			}
		})
	}
	gl, gh := beamng.Fixed.Limits()
	if gl[1] != 0 || gh[1] != 1 || gl[3] != -1 || gh[3] != 1 || !math.IsInf(gh[9], 1) || !math.IsInf(gh[13], 1) {
		t.Errorf("Gen 1: throttle [%v,%v] steering [%v,%v] torque ≤ %v drive mode ≤ %v", gl[1], gh[1], gl[3], gh[3], gh[9], gh[13])
	}
}
