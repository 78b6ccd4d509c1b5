package testfmu

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// MEOptions choose a Model Exchange test FMU: one of c/memodel.h's models
// in an FMI 2.0 or 3.0 wrapper (c/me2.c, c/me3.c).
type MEOptions struct {
	FMI int // 2 or 3 (0: 2)
	// Model is "ball" (a bouncing ball: outputs h and v; parameters g, e,
	// h0, vmin, stopAfter; one event indicator, h), "decay" (x' = -k x + u
	// + mode × boost: output x, continuous input u, discrete input boost,
	// enumeration input mode (Eco 1, Sport 2), parameters k and tKick, a
	// time event), "vdp" (Van
	// der Pol: outputs x1 and x2, parameter mu), "chain" (five Van der
	// Pol oscillators, 10 states: output x1, parameter mu), "nan" (x' =
	// -x/10 until the time tNaN, NaN from then on: output y = fmin(x,
	// 0.8), which stays a number), "stiff" (x' = lambda (y - x), y' = -a
	// y: outputs x and y, parameters lambda and a, one event indicator, y
	// - 0.5) or "stair" (no states: output counter, 1 and one more at
	// every whole second, by time events).
	Model string
}

// METoken is the Model Exchange FMUs' guid / instantiationToken.
const METoken = "{5d0c7c0e-5b1e-4a51-9f0e-me0000000001}"

type meVar struct {
	name, causality, variability, initial, start, desc string
	vr                                                 int
	derivativeOf                                       int // the state's vr, or -1
}

// meModels are the variables of each model, as c/memodel.h numbers them;
// states are the variables some derivative names.
type meModel struct {
	vars       []meVar
	indicators []int    // FMI 3.0: the variables that are the event indicators
	enums      []string // the variables of the enumeration Mode (Eco 1, Sport 2)
}

var meModels = map[string]meModel{
	"ball": {vars: []meVar{
		{"h", "output", "continuous", "calculated", "", "height above the floor, m", 0, -1},
		{"v", "output", "continuous", "calculated", "", "vertical speed, m/s", 1, -1},
		{"der(h)", "local", "continuous", "calculated", "", "", 2, 0},
		{"der(v)", "local", "continuous", "calculated", "", "", 3, 1},
		{"g", "parameter", "fixed", "", "9.81", "gravity, m/s2", 4, -1},
		{"e", "parameter", "tunable", "", "0.7", "coefficient of restitution", 5, -1},
		{"h0", "parameter", "fixed", "", "1", "the height it is dropped from, m", 6, -1},
		{"vmin", "parameter", "fixed", "", "0.1", "slower than this after a bounce, it rests, m/s", 7, -1},
		{"stopAfter", "parameter", "fixed", "", "0", "ends the simulation at this bounce (0: never)", 8, -1},
		{"bounces", "local", "discrete", "calculated", "", "bounces so far", 9, -1},
	}, indicators: []int{0}},
	"decay": {vars: []meVar{
		{"x", "output", "continuous", "calculated", "", "the decaying state", 0, -1},
		{"der(x)", "local", "continuous", "calculated", "", "", 1, 0},
		{"k", "parameter", "tunable", "", "0.5", "decay rate, 1/s", 2, -1},
		{"u", "input", "continuous", "", "0", "forcing", 3, -1},
		{"tKick", "parameter", "fixed", "", "-1", "time at which x jumps by 1 (negative: never), s", 4, -1},
		{"boost", "input", "discrete", "", "0", "discrete forcing, set in event mode only", 5, -1},
		{"mode", "input", "discrete", "", "1", "multiplies boost", 6, -1},
	}, enums: []string{"mode"}},
	"vdp": {vars: []meVar{
		{"x1", "output", "continuous", "calculated", "", "position", 0, -1},
		{"x2", "output", "continuous", "calculated", "", "velocity", 1, -1},
		{"der(x1)", "local", "continuous", "calculated", "", "", 2, 0},
		{"der(x2)", "local", "continuous", "calculated", "", "", 3, 1},
		{"mu", "parameter", "fixed", "", "1", "damping", 4, -1},
	}},
	"chain": {vars: chainVars()},
	"nan": {vars: []meVar{
		{"x", "local", "continuous", "calculated", "", "the state, NaN from tNaN on", 0, -1},
		{"der(x)", "local", "continuous", "calculated", "", "", 1, 0},
		{"tNaN", "parameter", "fixed", "", "0.5", "time from which the derivative is NaN, s", 2, -1},
		{"y", "output", "continuous", "calculated", "", "fmin(x, 0.8): a number while x is NaN", 3, -1},
	}},
	"stiff": {vars: []meVar{
		{"x", "output", "continuous", "calculated", "", "the fast state", 0, -1},
		{"y", "output", "continuous", "calculated", "", "the slow state", 1, -1},
		{"der(x)", "local", "continuous", "calculated", "", "", 2, 0},
		{"der(y)", "local", "continuous", "calculated", "", "", 3, 1},
		{"lambda", "parameter", "fixed", "", "1000", "the fast state's rate, 1/s", 4, -1},
		{"a", "parameter", "fixed", "", "0.5", "the slow state's rate, 1/s", 5, -1},
		{"z", "local", "continuous", "calculated", "", "the event indicator y - 0.5", 6, -1},
	}, indicators: []int{6}},
	"stair": {vars: []meVar{
		{"counter", "output", "discrete", "calculated", "", "1, and one more at every whole second", 0, -1},
	}},
}

func chainVars() []meVar {
	var vs []meVar
	for i := range 10 {
		c := "local"
		if i == 0 {
			c = "output"
		}
		vs = append(vs, meVar{fmt.Sprintf("x%d", i+1), c, "continuous", "calculated", "", "", i, -1})
	}
	for i := range 10 {
		vs = append(vs, meVar{fmt.Sprintf("der(x%d)", i+1), "local", "continuous", "calculated", "", "", 10 + i, i})
	}
	return append(vs, meVar{"mu", "parameter", "fixed", "", "1", "damping of the first oscillator", 20, -1})
}

// MEDescription is the Model Exchange FMU's modelDescription.xml.
func MEDescription(o MEOptions) (string, error) {
	model, ok := meModels[o.Model]
	if !ok {
		return "", fmt.Errorf("testfmu: no model %q", o.Model)
	}
	var b strings.Builder
	nz := len(model.indicators)
	if major(o.FMI) == 2 {
		fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="%s" guid="%s" generationTool="beamconnect testfmu" numberOfEventIndicators="%d">
  <ModelExchange modelIdentifier="%s" completedIntegratorStepNotNeeded="true"/>%s
  <ModelVariables>
`, o.Model, METoken, nz, o.Model, enumType(model.enums, `
  <TypeDefinitions><SimpleType name="Mode"><Enumeration><Item name="Eco" value="1"/><Item name="Sport" value="2"/></Enumeration></SimpleType></TypeDefinitions>`))
		index := map[int]int{} // vr → 1-based index
		for i, v := range model.vars {
			index[v.vr] = i + 1
		}
		for _, v := range model.vars {
			attrs := ""
			if v.initial != "" && v.causality != "parameter" && v.causality != "input" {
				attrs = ` initial="` + v.initial + `"`
			}
			real := ""
			if v.start != "" {
				real += ` start="` + v.start + `"`
			}
			if v.derivativeOf >= 0 {
				real += fmt.Sprintf(` derivative="%d"`, index[v.derivativeOf])
			}
			typ := "Real"
			if slices.Contains(model.enums, v.name) {
				typ, real = "Enumeration", real+` declaredType="Mode"`
			}
			fmt.Fprintf(&b, "    <ScalarVariable name=%q valueReference=\"%d\" causality=%q variability=%q%s description=%q><%s%s/></ScalarVariable>\n",
				v.name, v.vr, v.causality, v.variability, attrs, v.desc, typ, real)
		}
		b.WriteString("  </ModelVariables>\n  <ModelStructure>\n    <Outputs>\n")
		for i, v := range model.vars {
			if v.causality == "output" {
				fmt.Fprintf(&b, "      <Unknown index=\"%d\"/>\n", i+1)
			}
		}
		b.WriteString("    </Outputs>\n")
		var ders strings.Builder // the schema wants none rather than an empty one
		for i, v := range model.vars {
			if v.derivativeOf >= 0 {
				fmt.Fprintf(&ders, "      <Unknown index=\"%d\"/>\n", i+1)
			}
		}
		if ders.Len() > 0 {
			b.WriteString("    <Derivatives>\n" + ders.String() + "    </Derivatives>\n")
		}
		b.WriteString("    <InitialUnknowns>\n")
		for i, v := range model.vars {
			if model.initialUnknown(v) {
				fmt.Fprintf(&b, "      <Unknown index=\"%d\"/>\n", i+1)
			}
		}
		b.WriteString("    </InitialUnknowns>\n")
		b.WriteString("  </ModelStructure>\n</fmiModelDescription>\n")
		return b.String(), nil
	}
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="%s" instantiationToken="%s" generationTool="beamconnect testfmu">
  <ModelExchange modelIdentifier="%s"/>%s
  <ModelVariables>
`, o.Model, METoken, o.Model, enumType(model.enums, `
  <TypeDefinitions><EnumerationType name="Mode"><Item name="Eco" value="1"/><Item name="Sport" value="2"/></EnumerationType></TypeDefinitions>`))
	for _, v := range model.vars {
		attrs := ""
		if v.initial != "" && v.causality != "parameter" && v.causality != "input" {
			attrs = ` initial="` + v.initial + `"`
		}
		if v.start != "" {
			attrs += ` start="` + v.start + `"`
		}
		if v.derivativeOf >= 0 {
			attrs += fmt.Sprintf(` derivative="%d"`, v.derivativeOf)
		}
		typ := "Float64"
		if slices.Contains(model.enums, v.name) {
			typ, attrs = "Enumeration", attrs+` declaredType="Mode"`
		}
		fmt.Fprintf(&b, "    <%s name=%q valueReference=\"%d\" causality=%q variability=%q description=%q%s/>\n",
			typ, v.name, v.vr, v.causality, v.variability, v.desc, attrs)
	}
	// The independent variable, time (c/memodel.h's VR_INDEPENDENT).
	b.WriteString("    <Float64 name=\"time\" valueReference=\"100\" causality=\"independent\" variability=\"continuous\"/>\n")
	b.WriteString("  </ModelVariables>\n  <ModelStructure>\n")
	for _, v := range model.vars {
		if v.causality == "output" {
			fmt.Fprintf(&b, "    <Output valueReference=\"%d\"/>\n", v.vr)
		}
	}
	for _, v := range model.vars {
		if v.derivativeOf >= 0 {
			fmt.Fprintf(&b, "    <ContinuousStateDerivative valueReference=\"%d\"/>\n", v.vr)
		}
	}
	for _, v := range model.vars {
		if model.initialUnknown(v) {
			fmt.Fprintf(&b, "    <InitialUnknown valueReference=\"%d\"/>\n", v.vr)
		}
	}
	for _, vr := range model.indicators {
		fmt.Fprintf(&b, "    <EventIndicator valueReference=\"%d\"/>\n", vr)
	}
	b.WriteString("  </ModelStructure>\n</fmiModelDescription>\n")
	return b.String(), nil
}

// initialUnknown reports whether v is an unknown of initialization, as
// ModelStructure lists them: an output, a continuous state or a state
// derivative whose initial is calculated (every one of these models').
func (m meModel) initialUnknown(v meVar) bool {
	if v.initial != "calculated" {
		return false
	}
	if v.causality == "output" || v.derivativeOf >= 0 {
		return true
	}
	for _, d := range m.vars {
		if d.derivativeOf == v.vr {
			return true // a state
		}
	}
	return false
}

// enumType is the type definitions when the model has enumerations.
func enumType(enums []string, defs string) string {
	if len(enums) == 0 {
		return ""
	}
	return defs
}

func major(m int) int {
	if m == 0 {
		return 2
	}
	return m
}

// BuildME compiles the Model Exchange FMU o describes for this machine and
// writes it to out (its binary taken from the Prebuilt folder's
// MODELMAJOR.fmu, e.g. ball2.fmu, where that is set and no C compiler is).
func BuildME(out string, o MEOptions) error {
	return BuildMEFor(out, o, "", runtime.GOOS)
}

// BuildMEFor compiles the Model Exchange FMU o describes for x86-64 goos
// with the C compiler cc ("": this machine's) and writes it to out.
func BuildMEFor(out string, o MEOptions, cc, goos string) error {
	desc, err := MEDescription(o)
	if err != nil {
		return err
	}
	m := major(o.FMI)
	src := "me" + strconv.Itoa(m) + ".c"
	lib, err := libraryFor(cc, goos, m, o.Model, src, "-DMODEL_"+strings.ToUpper(o.Model), `-DMODEL_TOKEN="`+METoken+`"`)
	if err != nil {
		return err
	}
	plat, ext := platformOf(m, goos)
	return Zip(out, map[string][]byte{
		"modelDescription.xml":                   []byte(desc),
		"binaries/" + plat + "/" + o.Model + ext: lib,
		"sources/memodel.h":                      mustRead("c/memodel.h"),
		"sources/" + src:                         mustRead("c/" + src),
		"sources/" + fmiHeader(m):                mustRead("c/" + fmiHeader(m)),
		"sources/" + restHeader(m):               mustRead("c/" + restHeader(m)),
	})
}

var builtLibraries struct {
	sync.Mutex
	m map[string][]byte
}

// libraryFor is the library name for FMI major and x86-64 goos, compiled
// once per process from src with cc ("": this machine's compiler), or,
// for this machine with no C compiler, read from the Prebuilt folder's
// NAMEMAJOR.fmu.
func libraryFor(cc, goos string, major int, name, src string, defines ...string) ([]byte, error) {
	if plat, _ := platformOf(major, goos); plat == "" || cc == "" && runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("testfmu: building FMUs needs x86-64 Linux or Windows, this is %s/%s", goos, runtime.GOARCH)
	}
	prebuiltFile := ""
	if cc == "" {
		var err error
		if cc, err = Compiler(); err != nil {
			dir := os.Getenv(Prebuilt)
			if dir == "" || goos != runtime.GOOS {
				return nil, fmt.Errorf("testfmu: no C compiler: %w", err)
			}
			prebuiltFile = filepath.Join(dir, name+strconv.Itoa(major)+".fmu")
		}
	}
	key := fmt.Sprintf("%s %s %d %s %s", cc, goos, major, name, prebuiltFile)
	builtLibraries.Lock()
	defer builtLibraries.Unlock()
	if lib, ok := builtLibraries.m[key]; ok {
		return lib, nil
	}
	var lib []byte
	var err error
	if prebuiltFile != "" {
		lib, err = prebuiltBinary(prebuiltFile, major, name)
	} else {
		lib, err = compileC(cc, goos, major, name, src, defines...)
	}
	if err != nil {
		return nil, err
	}
	if builtLibraries.m == nil {
		builtLibraries.m = map[string][]byte{}
	}
	builtLibraries.m[key] = lib
	return lib, nil
}

// Available reports whether this machine can build test FMUs (a C
// compiler, or the Prebuilt folder), or says why not.
func Available(major int) error {
	if Platform(major) == "" {
		return fmt.Errorf("building test FMUs needs x86-64 Linux or Windows; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if _, err := Compiler(); err != nil && os.Getenv(Prebuilt) == "" {
		return fmt.Errorf("building test FMUs needs a C compiler (cc, or $CC) or %s: none found", Prebuilt)
	}
	return nil
}

// MEForTest builds the Model Exchange FMU into the test's temporary
// directory as name, or skips the test where that cannot be done.
func MEForTest(t testing.TB, name string, o MEOptions) string {
	t.Helper()
	if err := Available(major(o.FMI)); err != nil {
		t.Skip(err)
	}
	out := filepath.Join(t.TempDir(), name)
	if err := BuildME(out, o); err != nil {
		t.Fatal(err)
	}
	return out
}

// MEModels are the names of the Model Exchange models, sorted.
func MEModels() []string { return slices.Sorted(maps.Keys(meModels)) }
