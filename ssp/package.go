package ssp

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"beamconnect/config"
	"beamconnect/fmu"
)

// DefaultSSD is the name of an .ssp archive's system structure: the one
// variant beamconnect reads (SSP lets tools that do not choose variants
// ignore the others).
const DefaultSSD = "SystemStructure.ssd"

// Limits on what an archive may hold: its entries unpacked, and any one
// XML file read.
const (
	MaxUnpacked = 4 << 30
	MaxXML      = 64 << 20
)

// Package is a system's files: an .ssp archive, unpacked to a folder of
// its own, or an .ssd with its files beside it.
type Package struct {
	Path string // the .ssp or .ssd as given
	// Dir is where its files are: the .ssd's folder, or the folder the
	// archive was unpacked to (removed by Close).
	Dir     string
	SSDFile string // the .ssd on disk
	Archive bool
	SSD     *SSD
}

// IsSystem reports whether path names a system (an .ssp or .ssd file)
// rather than a config.
func IsSystem(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".ssp", ".ssd":
		return true
	}
	return false
}

// Open reads the system at path: an .ssp archive (unpacked to a
// temporary folder, which Close removes) or an .ssd. It fails when the
// file cannot be read or is no archive SSP allows; the diagnostics say
// what is wrong with the .ssd (the Package is nil then).
func Open(p string) (*Package, config.Diagnostics, error) {
	pk := &Package{Path: p}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".ssp":
		// A folder of fmu.UnpackDir's: should this run be killed outright, the
		// next run that unpacks an FMU or a system removes it.
		dir, err := fmu.UnpackDir()
		if err != nil {
			return nil, nil, fmt.Errorf("the system %s: %w", p, err)
		}
		if err := unpack(p, dir); err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		pk.Dir, pk.Archive, pk.SSDFile = dir, true, filepath.Join(dir, DefaultSSD)
	case ".ssd":
		pk.Dir, pk.SSDFile = filepath.Dir(p), p
	default:
		return nil, nil, fmt.Errorf("%s: expected a system: an .ssp archive or an .ssd file", p)
	}
	data, err := pk.ReadFile(pk.SSDFile)
	if err != nil {
		pk.Close()
		return nil, nil, err
	}
	ssd, ds := ParseSSD(pk.Name(pk.SSDFile), data)
	if ssd == nil {
		pk.Close()
		return nil, ds, nil
	}
	pk.SSD = ssd
	return pk, ds, nil
}

// Close removes the unpacked archive.
func (pk *Package) Close() error {
	if pk.Archive && pk.Dir != "" {
		return os.RemoveAll(pk.Dir)
	}
	return nil
}

// Name is how messages name a file of the system: as it is on disk for
// an .ssd's, inside the archive for an .ssp's (rig.ssp!/resources/x.ssv).
func (pk *Package) Name(file string) string {
	if !pk.Archive {
		return file
	}
	rel, err := filepath.Rel(pk.Dir, file)
	if err != nil || !filepath.IsLocal(rel) {
		return file
	}
	return pk.Path + "!/" + filepath.ToSlash(rel)
}

// ReadFile reads one of the system's XML files, at most MaxXML of it.
func (pk *Package) ReadFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pk.Name(file), unwrap(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxXML+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pk.Name(file), err)
	}
	if len(data) > MaxXML {
		return nil, fmt.Errorf("%s: larger than %d MB: not read", pk.Name(file), MaxXML>>20)
	}
	return data, nil
}

func unwrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		if errors.Is(err, os.ErrNotExist) {
			return errors.New("no such file")
		}
		return pe.Err
	}
	return err
}

// Resolve turns a URI a file of the system writes (a component's source,
// a parameter binding's) into a file on disk, relative to base's folder.
// Only relative references that stay inside the system's folder are
// taken: SSP requires no more of an importer, and a reference leaving the
// folder of an archive from elsewhere is refused as a zip slip would be.
// The fragment, if any, is returned apart.
func (pk *Package) Resolve(uri, base string) (file, fragment string, err error) {
	u, perr := url.Parse(uri)
	switch {
	case uri == "":
		return "", "", errors.New("an empty source: expected a file relative to the .ssd, such as resources/controller.fmu")
	case perr != nil:
		return "", "", fmt.Errorf("%q is not a URI: %v", uri, perr)
	case u.Scheme != "" || u.Host != "" || u.Opaque != "":
		return "", "", fmt.Errorf("%q: expected a reference relative to the .ssd (resources/controller.fmu); beamconnect reads no %s URIs", uri, schemeOf(u))
	case strings.HasPrefix(u.Path, "/"):
		return "", "", fmt.Errorf("%q is an absolute path: expected one relative to the .ssd", uri)
	}
	rel := path.Clean(path.Join(path.Dir(relTo(pk, base)), u.Path))
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", "", fmt.Errorf("%q leads outside the system's folder: expected a file beside the .ssd or below it", uri)
	}
	return filepath.Join(pk.Dir, filepath.FromSlash(rel)), u.Fragment, nil
}

// relTo is base's place within the system's folder, slash-separated.
func relTo(pk *Package, base string) string {
	rel, err := filepath.Rel(pk.Dir, base)
	if err != nil {
		return path.Base(filepath.ToSlash(base))
	}
	return filepath.ToSlash(rel)
}

func schemeOf(u *url.URL) string {
	if u.Scheme == "" {
		return "absolute"
	}
	return u.Scheme + ":"
}

// unpack extracts the archive at p into dir, refusing what SSP forbids
// and what could not be unpacked safely: encrypted entries, methods other
// than stored and deflated, an entry whose name leads outside the folder,
// more than MaxUnpacked unpacked, no SystemStructure.ssd at its top.
func unpack(p, dir string) error {
	zr, err := zip.OpenReader(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: no such file", p)
		}
		return fmt.Errorf("%s is not an SSP archive: expected a zip archive (%v)", p, err)
	}
	defer zr.Close()
	var total uint64
	found := false
	for _, f := range zr.File {
		name := strings.TrimPrefix(f.Name, "./")
		switch {
		case !filepath.IsLocal(filepath.FromSlash(name)) || strings.Contains(name, `\`):
			return fmt.Errorf("%s: entry %q lies outside the archive's folder", p, f.Name)
		case f.Flags&1 != 0:
			return fmt.Errorf("%s: entry %q is encrypted, which SSP forbids", p, f.Name)
		case f.Method != zip.Store && f.Method != zip.Deflate:
			return fmt.Errorf("%s: entry %q is compressed by method %d: SSP allows only stored (0) and deflated (8)", p, f.Name, f.Method)
		}
		if total += f.UncompressedSize64; total > MaxUnpacked {
			return fmt.Errorf("%s unpacks to more than %d bytes", p, uint64(MaxUnpacked))
		}
		found = found || name == DefaultSSD
	}
	if !found {
		return fmt.Errorf("%s: the archive has no %s at its top, which SSP requires", p, DefaultSSD)
	}
	for _, f := range zr.File {
		name := strings.TrimPrefix(f.Name, "./")
		to := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := extract(f, to); err != nil {
			return fmt.Errorf("%s: unpacking %s: %w", p, f.Name, err)
		}
	}
	return nil
}

func extract(f *zip.File, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, io.LimitReader(r, int64(f.UncompressedSize64))); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Write writes a system's files (names as in the archive:
// SystemStructure.ssd, resources/…) to out: an .ssp archive, or for an
// .ssd that file and the others beside it.
func Write(out string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	if !strings.EqualFold(filepath.Ext(out), ".ssp") {
		dir := filepath.Dir(out)
		for _, n := range names {
			to := filepath.Join(dir, filepath.FromSlash(n))
			if n == DefaultSSD {
				to = out
			}
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(to, files[n], 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	for _, n := range names {
		w, err := zw.Create(n)
		if err == nil {
			_, err = w.Write(files[n])
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
