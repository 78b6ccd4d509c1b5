package fmuexport

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"beamconnect/config"
	"beamconnect/fmuexport/shim"
	"beamconnect/ports"
)

// Options say what FMU Write makes.
type Options struct {
	FMI int // 2 or 3
	// Name is the model's name and its binary's base name (a C
	// identifier: Identifier makes one of a file name).
	Name string
	// Beamconnect maps an OS ("linux", "windows") to the beamconnect
	// executable built for it (x86-64) that the FMU carries and runs: the
	// FMU has binaries for those platforms only.
	Beamconnect map[string]string
}

// ConfigName is where the config lies in the FMU, under resources/; the
// Gen 2 CSVs it names lie beside it.
const ConfigName = "config.json"

// ExecutableName is beamconnect's executable in the FMU's binaries/
// folder for a platform, beside the shim: beamconnect, or beamconnect.exe
// for Windows.
func ExecutableName(goos string) string {
	if goos == "windows" {
		return "beamconnect.exe"
	}
	return "beamconnect"
}

// Platform is FMI's binaries/ folder for x86-64 goos in FMI major, and
// the shared library's extension.
func Platform(major int, goos string) (folder, ext string) {
	switch {
	case goos == "linux" && major == 2:
		return "linux64", ".so"
	case goos == "linux":
		return "x86_64-linux", ".so"
	case goos == "windows" && major == 2:
		return "win64", ".dll"
	case goos == "windows":
		return "x86_64-windows", ".dll"
	}
	return "", ""
}

// Identifier makes a model identifier (a C identifier, the binary's base
// name) of a name such as an FMU's file name: rig-2.fmu gives rig_2.
func Identifier(name string) string {
	name = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "beamconnect_rig"
	}
	return b.String()
}

// File is one file of the FMU.
type File struct {
	Name string // slash-separated, from the archive's top
	Data []byte
	Exec bool // an executable: the archive marks it so
}

// Files are the FMU's files: modelDescription.xml, the config and its
// CSVs under resources/, and for each platform the shim and beamconnect's
// executable under binaries/. cfg is the config as loaded, plan what it
// compiles to.
func Files(cfg *config.Config, plan *ports.Plan, o Options) ([]File, *Interface, error) {
	if o.FMI != 2 && o.FMI != 3 {
		return nil, nil, fmt.Errorf("FMI %d: expected 2 or 3", o.FMI)
	}
	if len(o.Beamconnect) == 0 {
		return nil, nil, errors.New("no beamconnect executable for any platform: the FMU would not run anywhere")
	}
	in := New(plan)
	if err := in.Fits(); err != nil {
		return nil, nil, err
	}
	res, err := resources(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := sameFromResources(res, in); err != nil {
		return nil, nil, err
	}
	desc := fmt.Sprintf("BeamNG.tech coupled by beamconnect as %s configures it (%s, %d vehicle", filepath.Base(cfg.File), plan.Protocol.Controller(), len(plan.Vehicles))
	if len(plan.Vehicles) > 1 {
		desc += "s"
	}
	desc += "): BeamNG's signals are its outputs, the controls its inputs; a step is a whole number of BeamNG's " + number(plan.Period*1000) + " ms periods"
	files := []File{{Name: "modelDescription.xml", Data: in.Description(o.FMI, o.Name, o.Name, desc)}}
	files = append(files, res...)
	for _, goos := range slices.Sorted(mapKeys(o.Beamconnect)) {
		folder, ext := Platform(o.FMI, goos)
		if folder == "" {
			return nil, nil, fmt.Errorf("no FMU binaries for %s: expected linux or windows", goos)
		}
		lib, err := shim.Binary(goos)
		if err != nil {
			return nil, nil, err
		}
		exe, err := os.ReadFile(o.Beamconnect[goos])
		if err != nil {
			return nil, nil, fmt.Errorf("beamconnect for %s: %w", goos, err)
		}
		files = append(files,
			File{Name: "binaries/" + folder + "/" + o.Name + ext, Data: lib},
			File{Name: "binaries/" + folder + "/" + ExecutableName(goos), Data: exe, Exec: true})
	}
	return files, in, nil
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// resources are the config and its Gen 2 CSVs, as the FMU keeps them
// under resources/: the config as config.json, a CSV it names at its path
// relative to the config when that stays within the config's folder,
// otherwise under interfaces/ with the config's text pointing there.
// Loaded from there, they make the same plan.
func resources(cfg *config.Config) ([]File, error) {
	text := cfg.Text
	var files []File
	taken := map[string]bool{}
	refs, err := interfaceRefs(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.File, err)
	}
	for _, r := range refs {
		src := r.value
		if !filepath.IsAbs(src) {
			src = filepath.Join(filepath.Dir(cfg.File), src)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("%s: the CSV of %s: %w", cfg.File, r.ptr, err)
		}
		name := path.Clean(filepath.ToSlash(r.value))
		if filepath.IsAbs(r.value) || strings.HasPrefix(r.value, `\`) || name == ".." || strings.HasPrefix(name, "../") || name == ConfigName || taken[name] {
			base := filepath.Base(src)
			name = "interfaces/" + base
			for i := 2; taken[name]; i++ {
				name = fmt.Sprintf("interfaces/%d-%s", i, base)
			}
			if text, err = replaceString(text, r.ptr, name); err != nil {
				return nil, fmt.Errorf("%s: %w", cfg.File, err)
			}
		}
		taken[name] = true
		files = append(files, File{Name: "resources/" + name, Data: data})
	}
	return append([]File{{Name: "resources/" + ConfigName, Data: text}}, files...), nil
}

// interfaceRef is a CSV a config names: where (a JSON Pointer), and the
// path as written.
type interfaceRef struct{ ptr, value string }

// interfaceRefs finds the CSVs a config names: beamng.interface and each
// beamng.vehicles.NAME.interface.
func interfaceRefs(text []byte) ([]interfaceRef, error) {
	var doc struct {
		BeamNG struct {
			Interface *string `json:"interface"`
			Vehicles  map[string]struct {
				Interface *string `json:"interface"`
			} `json:"vehicles"`
		} `json:"beamng"`
	}
	if err := json.Unmarshal(bytes.TrimPrefix(text, []byte("\xef\xbb\xbf")), &doc); err != nil {
		return nil, err
	}
	var refs []interfaceRef
	if doc.BeamNG.Interface != nil && len(doc.BeamNG.Vehicles) == 0 {
		refs = append(refs, interfaceRef{"/beamng/interface", *doc.BeamNG.Interface})
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range doc.BeamNG.Vehicles {
			if !yield(k) {
				return
			}
		}
	}) {
		if v := doc.BeamNG.Vehicles[name]; v.Interface != nil {
			esc := strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
			refs = append(refs, interfaceRef{"/beamng/vehicles/" + esc + "/interface", *v.Interface})
		}
	}
	return refs, nil
}

// replaceString replaces the string at JSON Pointer ptr of a JSON text
// with s, leaving every other byte as it was.
func replaceString(text []byte, ptr, s string) ([]byte, error) {
	want := strings.Split(ptr, "/")[1:]
	for i, w := range want {
		want[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(w)
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	type frame struct {
		object bool
		key    string
		keyNow bool // the next token of an object is a key
	}
	var stack []frame
	at := func() bool {
		if len(stack) != len(want) {
			return false
		}
		for i, f := range stack {
			if !f.object || f.key != want[i] {
				return false
			}
		}
		return true
	}
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: not in the config", ptr)
		}
		if err != nil {
			return nil, err
		}
		if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].keyNow {
			if k, ok := tok.(string); ok {
				stack[len(stack)-1].key, stack[len(stack)-1].keyNow = k, false
				continue
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{object: true, keyNow: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if at() {
				// The token began after the separator before it.
				start := bytes.IndexByte(text[before:], '"') + int(before)
				end := int(dec.InputOffset())
				q, _ := json.Marshal(s)
				return slices.Concat(text[:start], q, text[end:]), nil
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].object && tok != json.Delim('{') {
			stack[len(stack)-1].keyNow = true
		}
	}
}

// sameFromResources checks that the config as the FMU keeps it, loaded
// from there, makes the same FMU: what its child process will run.
func sameFromResources(res []File, in *Interface) error {
	dir, err := os.MkdirTemp("", "beamconnect-export-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, f := range res {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	_, again, err := Load(filepath.Join(dir, "resources"))
	if err != nil {
		return fmt.Errorf("the config as the FMU keeps it: %w", err)
	}
	if again.Token != in.Token {
		return errors.New("internal error: the config as the FMU keeps it makes another FMU")
	}
	return nil
}

// Load reads the config an FMU keeps in its resources folder and lays
// out its variables: what the FMU's child process runs.
func Load(resources string) (*ports.Plan, *Interface, error) {
	cfg, err := config.Load(filepath.Join(resources, ConfigName))
	if err != nil {
		return nil, nil, err
	}
	plan, err := config.Compile(cfg)
	if err != nil {
		return nil, nil, err
	}
	return plan, New(plan), nil
}

// Write makes the FMU's archive at out: written whole to a temporary file
// beside it, then renamed over it, so a failed export leaves no half an
// FMU.
func Write(out string, files []File) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.Name, Method: zip.Deflate}
		h.Modified = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // the same FMU from the same inputs
		mode := os.FileMode(0o644)
		if f.Exec {
			mode = 0o755
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(f.Data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
