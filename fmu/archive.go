package fmu

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"beamconnect/internal/suggest"
)

// FMU is an opened .fmu archive.
type FMU struct {
	Path string
	Desc *Description
	// Platforms lists the folders under binaries/ that hold a binary of
	// one of its interfaces (a modelIdentifier plus the platform's
	// extension), e.g. "linux64" or "x86_64-windows".
	Platforms []string
	// Binaries are every library under binaries/ (platform/name, e.g.
	// "x86_64-linux/x.so"), named for a model identifier or not: what
	// the archive holds, for inspect and for saying why none fits.
	Binaries []string
	files    []*zip.File
	closer   io.Closer
}

// Open reads an FMU's modelDescription.xml and lists its binaries. The
// error says plainly when the file is missing or not an FMU at all, and
// when the archive is one Unpack would refuse (checkEntries): whatever
// opens an FMU (validate, inspect, run) refuses the same archives.
func Open(file string) (*FMU, error) {
	st, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("FMU %s: %w%s", file, unwrapPath(err), nearby(file, err))
	}
	if st.IsDir() {
		return nil, fmt.Errorf("FMU %s is a directory: expected a .fmu file (a zip archive)", file)
	}
	zr, err := zip.OpenReader(file)
	if err != nil {
		return nil, fmt.Errorf("%s is not an FMU: expected a zip archive (%v)", file, err)
	}
	f := &FMU{Path: file, files: zr.File, closer: zr}
	if err := f.checkEntries(); err != nil {
		zr.Close()
		return nil, err
	}
	md := f.file("modelDescription.xml")
	if md == nil {
		zr.Close()
		return nil, fmt.Errorf("%s is not an FMU: the archive has no modelDescription.xml at its top", file)
	}
	maxSize, err := descriptionLimit()
	var data []byte
	if err == nil {
		data, err = readAll(md, maxSize)
	}
	if err == nil {
		f.Desc, err = ParseDescription(data)
	}
	if err != nil {
		zr.Close()
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	ext := map[string]string{".so": "", ".dll": "", ".dylib": ""}
	ids := f.Desc.Identifiers()
	for _, zf := range zr.File {
		dir, base := path.Split(zf.Name)
		parts := strings.Split(strings.Trim(dir, "/"), "/")
		if len(parts) != 2 || parts[0] != "binaries" {
			continue
		}
		e := path.Ext(base)
		if _, ok := ext[e]; !ok {
			continue
		}
		f.Binaries = append(f.Binaries, parts[1]+"/"+base)
		if slices.Contains(ids, strings.TrimSuffix(base, e)) && !slices.Contains(f.Platforms, parts[1]) {
			f.Platforms = append(f.Platforms, parts[1])
		}
	}
	slices.Sort(f.Platforms)
	slices.Sort(f.Binaries)
	return f, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New("no such file")
		}
		return pe.Err
	}
	return err
}

// Close releases the archive.
func (f *FMU) Close() error { return f.closer.Close() }

func (f *FMU) file(name string) *zip.File {
	for _, zf := range f.files {
		if strings.TrimPrefix(zf.Name, "./") == name {
			return zf
		}
	}
	return nil
}

// readAll reads the model description, refusing one larger than limit.
func readAll(zf *zip.File, limit int64) ([]byte, error) {
	if zf.UncompressedSize64 > uint64(limit) {
		return nil, tooLarge(zf.UncompressedSize64, limit)
	}
	r, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, limit))
}

// Platform names the binaries/ folder FMI uses for the machine beamconnect
// runs on, in the FMU's FMI version, and the binary's extension. ok is
// false where beamconnect cannot load FMUs.
func Platform(major int) (folder, ext string, ok bool) {
	return platformOf(major, runtime.GOOS, runtime.GOARCH)
}

func platformOf(major int, goos, goarch string) (folder, ext string, ok bool) {
	if goarch != "amd64" {
		return "", "", false
	}
	switch goos {
	case "linux":
		if major == 2 {
			return "linux64", ".so", true
		}
		return "x86_64-linux", ".so", true
	case "windows":
		if major == 2 {
			return "win64", ".dll", true
		}
		return "x86_64-windows", ".dll", true
	}
	return "", "", false
}

// The interfaces beamconnect runs an FMU with.
const (
	CoSim = "CoSimulation"
	ME    = "ModelExchange"
)

// Interface is the interface beamconnect runs the FMU with when want
// (modelParams.interface) names none: co-simulation when the FMU has it
// (it brings its own solver), else model exchange (beamconnect integrates
// it). The error says why the FMU cannot run as asked.
func (d *Description) Interface(want string) (string, error) {
	has := func(i string) bool { return slices.Contains(d.Interfaces, i) }
	switch want {
	case "":
		switch {
		case d.CoSim != nil:
			return CoSim, nil
		case d.ME != nil:
			return ME, nil
		}
	case CoSim, ME:
		if has(want) {
			return want, nil
		}
		return "", fmt.Errorf("the FMU has no %s interface: it has %s", want, interfaces(d))
	default:
		return "", fmt.Errorf("interface %q: expected %q or %q", want, CoSim, ME)
	}
	if has("ScheduledExecution") {
		return "", fmt.Errorf("the FMU has the ScheduledExecution interface only: beamconnect runs FMUs for co-simulation and model exchange; scheduled execution needs a scheduler activating its model partitions by clock, which BeamNG's fixed-rate coupling does not have: export the FMU for co-simulation or model exchange")
	}
	return "", fmt.Errorf("the FMU has %s: beamconnect runs FMUs for co-simulation and model exchange", interfaces(d))
}

func interfaces(d *Description) string {
	if len(d.Interfaces) == 0 {
		return "no interface at all"
	}
	return strings.Join(d.Interfaces, " and ")
}

// Identifier is the binary's base name for an interface.
func (d *Description) Identifier(iface string) string {
	if iface == ME && d.ME != nil {
		return d.ME.ModelIdentifier
	}
	if d.CoSim != nil {
		return d.CoSim.ModelIdentifier
	}
	return ""
}

// Supported says whether beamconnect can run the FMU on this machine with
// its default interface (co-simulation when it has it, else model
// exchange), FMI 2.0 or 3.0, with a binary for this platform. The error
// names what the FMU has instead.
func (f *FMU) Supported() error { return f.SupportedAs("") }

// SupportedAs is Supported for the interface want names ("" the default).
func (f *FMU) SupportedAs(want string) error {
	iface, err := f.Desc.Interface(want)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if f.Desc.Clocks {
		return fmt.Errorf("%s declares clocks: beamconnect does not drive FMI 3.0 clocks (they need event mode and a master that ticks them), so it cannot run this FMU faithfully: export it without clocks", f.Path)
	}
	folder, _, ok := Platform(f.Desc.Major)
	if !ok {
		return fmt.Errorf("beamconnect runs FMUs on x86-64 Linux and Windows; this machine is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	id := f.Desc.Identifier(iface)
	if f.hasBinary(folder, id) {
		return nil
	}
	has := "no binary for any platform (a source-only FMU: build it for " + folder + " first)"
	if len(f.Platforms) == 0 && len(f.Binaries) > 0 {
		has = "binaries/" + strings.Join(f.Binaries, ", binaries/") + ", named for no model identifier of its modelDescription.xml (" +
			strings.Join(f.Desc.Identifiers(), ", ") + "): FMI loads binaries/PLATFORM/IDENTIFIER" + ext(f.Desc.Major) + "; export the FMU again, or rename the binary"
	}
	if len(f.Platforms) > 0 {
		has = "binaries for " + strings.Join(f.Platforms, ", ") + " only"
		if way := otherWay(f.Platforms, folder); way != "" {
			has += ": " + way
		}
	}
	return fmt.Errorf("%s has no binary for this machine (binaries/%s/%s, FMI %s): it has %s", f.Path, folder, id+ext(f.Desc.Major), f.Desc.FMIVersion, has)
}

// hasBinary reports whether the archive holds binaries/folder/id.so (or
// .dll).
func (f *FMU) hasBinary(folder, id string) bool {
	return f.file("binaries/"+folder+"/"+id+ext(f.Desc.Major)) != nil
}

// otherWay says how to run an FMU built for the other of Linux and Windows
// than this machine, "" when it has neither.
func otherWay(platforms []string, here string) string {
	windows := slices.ContainsFunc(platforms, func(p string) bool { return p == "win64" || p == "x86_64-windows" })
	linux := slices.ContainsFunc(platforms, func(p string) bool { return p == "linux64" || p == "x86_64-linux" })
	switch {
	case windows && strings.Contains(here, "linux"):
		return "run beamconnect.exe on the Windows machine, the BeamNG PC (docs/beamng.md, two machines: the same config, its addresses swapped), " +
			"or export the FMU for Linux as well (Simulink: a linux64 binary; FMPy, OpenModelica and Dymola build one on Linux)"
	case linux && strings.Contains(here, "windows"):
		return "run beamconnect on the Linux machine (docs/beamng.md, two machines), or export the FMU for Windows (win64) as well"
	}
	return ""
}

func ext(major int) string {
	_, e, _ := Platform(major)
	return e
}

// Unpacked is an FMU extracted to a directory, ready to load.
type Unpacked struct {
	Dir       string // the archive's root
	Library   string // the binary for this machine
	Resources string // the resources folder (it may not exist)
}

// maxUnpacked bounds what an FMU may extract: a zip bomb is not a model.
const maxUnpacked = 4 << 30

// checkEntries refuses an archive that could not be unpacked safely: an
// entry whose name leads outside the folder it is unpacked to (a "zip
// slip": ../../.bashrc, an absolute path), or entries that unpack to more
// than maxUnpacked (a zip bomb). Open runs it, so every archive Unpack
// sees has passed it.
func (f *FMU) checkEntries() error {
	var total uint64
	for _, zf := range f.files {
		if !filepath.IsLocal(filepath.FromSlash(strings.TrimPrefix(zf.Name, "./"))) {
			return fmt.Errorf("%s: entry %q lies outside the archive's folder", f.Path, zf.Name)
		}
		total += zf.UncompressedSize64
		if total > maxUnpacked {
			return fmt.Errorf("%s unpacks to more than %d bytes", f.Path, uint64(maxUnpacked))
		}
	}
	return nil
}

// Unpack extracts the archive into dir (which must exist) and names the
// binary for this machine of the interface iface ("" the default). The
// entries were checked when it was opened.
func (f *FMU) Unpack(dir, iface string) (*Unpacked, error) {
	if err := f.SupportedAs(iface); err != nil {
		return nil, err
	}
	iface, _ = f.Desc.Interface(iface)
	for _, zf := range f.files {
		to := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(zf.Name, "./")))
		if strings.HasSuffix(zf.Name, "/") {
			if err := os.MkdirAll(to, 0o755); err != nil {
				return nil, err
			}
			continue
		}
		if err := extract(zf, to); err != nil {
			return nil, fmt.Errorf("%s: unpacking %s: %w", f.Path, zf.Name, err)
		}
	}
	folder, e, _ := Platform(f.Desc.Major)
	return &Unpacked{
		Dir:       dir,
		Library:   filepath.Join(dir, "binaries", folder, f.Desc.Identifier(iface)+e),
		Resources: filepath.Join(dir, "resources"),
	}, nil
}

func extract(zf *zip.File, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	r, err := zf.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, io.LimitReader(r, int64(zf.UncompressedSize64))); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// nearby names the FMUs in the folder of a file that is not there: the
// closest name ("did you mean"), or those there are.
func nearby(file string, err error) string {
	if !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	dir := filepath.Dir(file)
	entries, rerr := os.ReadDir(dir)
	if rerr != nil {
		return ""
	}
	var fmus []string
	for _, e := range entries {
		if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".fmu") {
			fmus = append(fmus, e.Name())
		}
	}
	switch {
	case len(fmus) == 0:
		return ""
	case len(fmus) == 1:
		return fmt.Sprintf(" (%s has one FMU: %s)", dir, fmus[0])
	}
	if s := suggest.Closest(filepath.Base(file), fmus); s != "" {
		return fmt.Sprintf(" (did you mean %s?)", filepath.Join(dir, s))
	}
	if len(fmus) > 8 {
		fmus = append(fmus[:8], "…")
	}
	return fmt.Sprintf(" (%s has %s)", dir, strings.Join(fmus, ", "))
}
