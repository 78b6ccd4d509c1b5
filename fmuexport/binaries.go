package fmuexport

import (
	"debug/buildinfo"
	"debug/elf"
	"debug/pe"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// MainPackage is beamconnect's command, as a binary's build info names
// it.
const MainPackage = "beamconnect/cmd/beamconnect"

// OSes are the systems an exported FMU can run on (x86-64 each).
var OSes = []string{"linux", "windows"}

// Executables finds the beamconnect executables an FMU carries: for each
// OS the one given, else self (the running beamconnect) for its own OS,
// else one beside self (beamconnect beside beamconnect.exe, or the other
// way round), as a release or `go build` for both OSes into one folder
// leaves them. Each is checked to be beamconnect built for that OS; one
// of another version than self is noted (its FMU refuses to start, saying
// so, if the two speak another protocol). missing lists the OSes none was
// found for.
func Executables(self, selfOS string, given map[string]string) (found map[string]string, notes, missing []string, err error) {
	found = map[string]string{}
	selfInfo, _ := buildinfo.ReadFile(self)
	for _, goos := range OSes {
		path, explicit := given[goos]
		switch {
		case explicit:
		case goos == selfOS:
			path = self
		default:
			path = filepath.Join(filepath.Dir(self), ExecutableName(goos))
			if _, err := os.Stat(path); err != nil {
				missing = append(missing, goos)
				continue
			}
		}
		note, err := checkExecutable(path, goos, selfInfo)
		if err != nil {
			if !explicit && goos != selfOS {
				notes = append(notes, fmt.Sprintf("%s is not used: %v", path, err))
				missing = append(missing, goos)
				continue
			}
			return nil, nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		found[goos] = path
	}
	for goos := range given {
		if !slices.Contains(OSes, goos) {
			return nil, nil, nil, fmt.Errorf("no FMU binaries for %s: expected %v", goos, OSes)
		}
	}
	return found, notes, missing, nil
}

// checkExecutable checks that path is beamconnect built for x86-64 goos;
// note says it is of another version than self.
func checkExecutable(path, goos string, self *buildinfo.BuildInfo) (note string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("beamconnect for %s: %w", goos, err)
	}
	defer f.Close()
	switch goos {
	case "linux":
		e, err := elf.NewFile(f)
		if err != nil || e.Machine != elf.EM_X86_64 || e.Type != elf.ET_EXEC && e.Type != elf.ET_DYN {
			return "", fmt.Errorf("beamconnect for linux: %s is not an x86-64 Linux executable", path)
		}
	case "windows":
		p, err := pe.NewFile(f)
		if err != nil || p.Machine != pe.IMAGE_FILE_MACHINE_AMD64 {
			return "", fmt.Errorf("beamconnect for windows: %s is not an x86-64 Windows executable", path)
		}
	}
	info, err := buildinfo.Read(f)
	if err != nil || info.Path != MainPackage {
		return "", fmt.Errorf("beamconnect for %s: %s is not beamconnect (a Go build of %s)", goos, path, MainPackage)
	}
	if self != nil && version(info) != version(self) {
		return fmt.Sprintf("beamconnect for %s (%s) is %s, this one %s: if their FMU protocols differ, the FMU refuses to start there, saying so",
			goos, path, version(info), version(self)), nil
	}
	return "", nil
}

// version is a build's module version and revision.
func version(b *buildinfo.BuildInfo) string {
	v := b.Main.Version
	for _, s := range b.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += " (modified)"
		}
	}
	return v
}
