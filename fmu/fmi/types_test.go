package fmi_test

import (
	"math"
	"testing"

	"beamconnect/fmu"
	"beamconnect/fmu/fmi"
	"beamconnect/fmu/testfmu"
)

// Every FMI 3.0 integer type, Float32, an enumeration and a Boolean reach
// the FMU and come back exact (each integer plus one in its own type, at
// the edges of its range); arrays fixed and sized by a structural
// parameter set before the FMU starts, String and Binary parameters.
func TestStepperEveryType(t *testing.T) {
	path := testfmu.TypesForTest(t, 0)
	f, err := fmu.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := f.Unpack(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	v := func(name string, n int) fmi.Var {
		x, ok := f.Desc.Variable(name)
		if !ok {
			t.Fatalf("no variable %s", name)
		}
		return fmi.Var{VR: x.VR, Kind: x.Kind, Name: x.Name, N: n, Structural: x.Causality == "structuralParameter"}
	}
	names := []string{"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "mode", "flag"}
	var ins, outs []fmi.Var
	for _, n := range names {
		ins, outs = append(ins, v(n, 0)), append(outs, v("o_"+n, 0))
	}
	ins = append(ins, v("u", 3), v("w", 3))
	outs = append(outs, v("y", 0), v("texts", 0), v("m", 2))
	s, err := fmi.NewStepper(fmi.Setup{
		Library: u.Library, Major: 3, Token: f.Desc.Token, Resources: u.Resources, Name: "types",
		Inputs: ins, Outputs: outs, Period: 0.005, VariableStep: true,
		Params: []fmi.Var{v("n", 0), v("gain", 0)}, ParamValues: []float64{3, 2},
		Texts: []fmi.Text{{VR: 16, Name: "label", Values: []string{"left"}}, {VR: 17, Name: "blob", Binary: true, Values: []string{"\x0a\xff"}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f32 := float32(0.1)
	in := []float64{-128, 254, -32768, 65534, math.MinInt32, math.MaxUint32 - 1, -(1 << 52), 1 << 52, float64(f32), 2, 1,
		0.5, 0.25, 2, 1, 2, 3}
	out := make([]float64, len(outs)+1)
	if _, err := s.Step(1, in, out); err != nil {
		t.Fatal(err)
	}
	want := []float64{-127, 255, -32767, 65535, math.MinInt32 + 1, math.MaxUint32, -(1 << 52) + 1, 1<<52 + 1,
		float64(f32 * 2), 2, 0,
		2*(0.5+2*0.25+3*2) + 10*(1+2+3), 4 + 100*2, 3, idTime(201, 0.005)} // the time of message 201 at 5 ms, computed from its id
	for i, w := range want {
		if out[i] != w {
			t.Errorf("output %d: %v, want %v (bit for bit)", i, out[i], w)
		}
	}
	// A value the FMU refuses: the error names the function once.
	if err := s.SetParams([]fmi.Var{v("gain", 0)}, []float64{50}); err == nil || err.Error() != "fmi3SetFloat64 returned fmi3Error" {
		t.Errorf("gain 50: %v", err)
	}
	// The integers held within their types: beyond the range, its edge.
	in[0], in[1] = 300, -5
	s.Step(1.005, in, out)
	if out[0] != -128 || out[1] != 1 { // 127 + 1 wraps in Int8; 0 + 1
		t.Errorf("beyond the range: %v %v", out[0], out[1])
	}
}
