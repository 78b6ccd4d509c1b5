package cosim

import (
	"errors"
	"math"
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
		{"bad kind", Header0 + "\nsignalFrom,Driver,throttle,scaled,number,,,", []string{`x.csv:2:28: "scaled" is not a kind of signalFrom row`}},
		{"no name", Header0 + "\nsignalTo,Kinematics,,,number,,,", []string{`x.csv:2:21: a signalTo row needs a signal name`}},
		{"bad numbers", Header0 + "\nconnection,,3rd Party Computation Time,0,number,,,\nconnection,,Ping Time,soon,number,,,\nconnection,otherUDP,port,0,number,,,",
			[]string{`x.csv:2:40: 3rd Party Computation Time 0 is out of range`, `x.csv:3:23: Ping Time "soon" is not a number`, `x.csv:4:26: "0" is not a port`}},
		{"same addresses", Header0 + "\nconnection,otherUDP,port,64891,number,,,", []string{`beamngUDP and otherUDP are both 127.0.0.1:64891`}},
	} {
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
		if got := SendSkips(tt.v, beamng.PhysicsDt); got != tt.skips {
			t.Errorf("SendSkips(%v) = %d, want %d (arrives as %v)", tt.v, got, tt.skips, Arrived(tt.v))
		}
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
