package fmu

import (
	"archive/zip"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// maxBinary bounds the binary Check reads into memory.
const maxBinary = 1 << 30

// Check checks an FMU file against the rules of the FMI standard that
// masters check when they load it: its modelDescription.xml
// (CheckDescription), and each of its binaries (CheckBinary). The error
// says why the file could not be checked at all (missing, not a zip
// archive); what is wrong with an FMU is a Problem.
func Check(file string) ([]Problem, error) {
	zr, err := zip.OpenReader(file)
	if err != nil {
		if _, serr := Open(file); serr != nil {
			return nil, serr // says plainly what the file is not
		}
		return nil, err
	}
	defer zr.Close()
	var out []Problem
	archive := func(format string, args ...any) {
		out = append(out, Problem{File: "the archive", Text: fmt.Sprintf(format, args...)})
	}
	var md *zip.File
	for _, zf := range zr.File {
		if strings.Contains(zf.Name, `\`) {
			archive("the entry %q holds a backslash: a zip archive separates folders with /", zf.Name)
		}
		if strings.TrimPrefix(zf.Name, "./") == descFile {
			md = zf
		}
	}
	if err := (&FMU{Path: file, files: zr.File}).checkEntries(); err != nil {
		archive("%s", strings.TrimPrefix(err.Error(), file+": "))
	}
	if md == nil {
		archive("no %s at its top: it is no FMU", descFile)
		return out, nil
	}
	limit, err := descriptionLimit()
	if err != nil {
		return nil, err
	}
	data, err := readAll(md, limit)
	if err != nil {
		return append(out, Problem{File: descFile, Text: "cannot be read: " + err.Error()}), nil
	}
	problems, m := checkDescription(data)
	out = append(out, problems...)
	if m == nil {
		return out, nil
	}
	ids := map[string][]string{} // model identifier → its interfaces
	for _, i := range m.interfaces {
		ids[i.identifier] = append(ids[i.identifier], i.name)
	}
	for _, zf := range zr.File {
		dir, base := path.Split(zf.Name)
		parts := strings.Split(strings.Trim(dir, "/"), "/")
		ext := path.Ext(base)
		ifaces, ok := ids[strings.TrimSuffix(base, ext)]
		if len(parts) != 2 || parts[0] != "binaries" || !ok || !slices.Contains([]string{".so", ".dll", ".dylib"}, ext) {
			continue
		}
		bin, err := readBinary(zf)
		if err != nil {
			out = append(out, Problem{File: zf.Name, Text: "cannot be read: " + err.Error()})
			continue
		}
		out = append(out, CheckBinary(zf.Name, parts[1], m.major, ifaces, bin)...)
	}
	return out, nil
}

func readBinary(zf *zip.File) ([]byte, error) {
	if zf.UncompressedSize64 > maxBinary {
		return nil, fmt.Errorf("%d bytes, more than the %d Check reads", zf.UncompressedSize64, maxBinary)
	}
	r, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(io.LimitReader(r, maxBinary))
}
