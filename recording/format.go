package recording

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Source streams a recording's header rows and rows, in order, as Scan
// does for a CSV file; it reads the file again at every call.
type Source func(onHeader func(*Header) error, onRow func(*Header, *Row) error) error

// Format is a recording format: how to tell its files, write them and
// read them. CSV is built in; a program registers the others (package
// mdf's ASAM MDF 4) when it starts.
type Format struct {
	Name string   // as --record-format says it: "csv", "mdf"
	Exts []string // file name extensions, lower case, the usual one first
	// Is reports whether a file starting with head (its first 64 bytes or
	// fewer) is a recording of this format.
	Is func(head []byte) bool
	// Seekable formats write in place: the destination must be a regular
	// file.
	Seekable bool
	Create   func(f *os.File, o Options) (Writer, error)
	Open     func(path string) (Source, error)
	// Events, for a format that keeps them, reads a recording's events.
	Events func(path string) ([]Event, error)
}

// Options are what a format may keep of the run besides its rows.
type Options struct {
	Start   time.Time // when time 0 of the rows was
	Version string    // beamconnect's
	// Config is the text of the config run (ConfigName its file's name),
	// Files the other files it names (a Gen 2 CSV).
	Config     []byte
	ConfigName string
	Files      []NamedFile
}

// NamedFile is a file's name and contents.
type NamedFile struct {
	Name string
	Data []byte
}

// registry is the formats known: CSV, and those the program registers.
var registry = struct {
	mu      sync.Mutex
	formats []*Format
}{formats: []*Format{csvFormat}}

// Register adds a format (once: a format of a name known already is not
// added again). A program registers its formats when it starts, before it
// opens or creates a recording; no format registers itself.
func Register(f *Format) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for _, g := range registry.formats {
		if g.Name == f.Name {
			return
		}
	}
	registry.formats = append(registry.formats, f)
}

// known are the formats registered so far.
func known() []*Format {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return registry.formats
}

// Formats lists the registered formats' names.
func Formats() []string {
	var names []string
	for _, f := range known() {
		names = append(names, f.Name)
	}
	return names
}

// FormatFor is the format of a file named path: the one called name when
// name is not "", else the one its extension says; CSV for extensions no
// format claims.
func FormatFor(path, name string) (*Format, error) {
	if name != "" {
		for _, f := range known() {
			if f.Name == name {
				return f, nil
			}
		}
		return nil, fmt.Errorf("recording format %q: expected one of %s", name, strings.Join(Formats(), ", "))
	}
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range known() {
		if slices.Contains(f.Exts, ext) {
			return f, nil
		}
	}
	return csvFormat, nil
}

// Detect is the format of a file starting with head, nil for none.
func Detect(head []byte) *Format {
	for _, f := range known() {
		if f.Is(head) {
			return f
		}
	}
	return nil
}

// ErrNotRecording is the error of a file that is no recording of any
// format.
var ErrNotRecording = errors.New("not a recording")

// Open reads the recording at path, in the format its first bytes show
// (or, for a file too short to tell, its extension says).
func Open(path string) (Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	f.Close()
	format := Detect(head[:n])
	if format == nil {
		format, _ = FormatFor(path, "") // its reader says what is wrong
	}
	return format.Open(path)
}

// Events reads the events of the recording at path: none for a format
// that keeps none (CSV).
func Events(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	f.Close()
	if format := Detect(head[:n]); format != nil && format.Events != nil {
		return format.Events(path)
	}
	return nil, nil
}

// The header rows a CSV recording starts with: a file that starts so is
// a recording, which --record may replace.
const (
	csvHeader      = "time,status,id,reply_id,reloads"
	csvFleetHeader = "time,vehicle,status,id,reply_id,reloads"
)

var csvFormat = &Format{
	Name: "csv",
	Exts: []string{".csv", ".txt"},
	Is:   isCSV,
	Create: func(f *os.File, _ Options) (Writer, error) {
		c := NewCSV(f)
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			path := f.Name()
			if err := removeContinuations(path); err != nil {
				return nil, err
			}
			c.Next = func(n int) (io.Writer, error) { return createContinuation(path, n) }
		}
		return c, nil
	},
	Open: func(path string) (Source, error) {
		return CSVSource(path, func() (io.ReadCloser, error) { return os.Open(path) }), nil
	},
}

// Continuation is the name of the file a CSV recording's nth layout goes
// to (n ≥ 2): run-2.csv beside run.csv.
func Continuation(path string, n int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), n, ext)
}

// removeContinuations removes the continuations of an earlier recording
// at path, which the new one replaces: run-2.csv, run-3.csv… while they
// are recordings.
func removeContinuations(path string) error {
	for n := 2; ; n++ {
		name := Continuation(path, n)
		if !isCSVRecording(name) {
			return nil
		}
		if err := os.Remove(name); err != nil {
			return fmt.Errorf("%s, the continuation of the earlier recording %s: %w", name, filepath.Base(path), err)
		}
	}
}

// createContinuation makes the file of a recording's nth layout; an
// existing file that is not a recording is never replaced.
func createContinuation(path string, n int) (*os.File, error) {
	name := Continuation(path, n)
	if _, err := os.Stat(name); err == nil && !isCSVRecording(name) {
		return nil, fmt.Errorf("%s exists and is not a recording", name)
	}
	return os.Create(name)
}

// isCSVRecording reports whether the file at path is a CSV recording.
func isCSVRecording(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return isCSV(head[:n])
}

func isCSV(head []byte) bool {
	return bytes.HasPrefix(head, []byte(csvHeader)) || bytes.HasPrefix(head, []byte(csvFleetHeader))
}

// CSVSource reads the CSV recording open opens, named file in errors, and
// the files its later layouts went to (Continuation), as one recording:
// each starts with its header row.
func CSVSource(file string, open func() (io.ReadCloser, error)) Source {
	return func(onHeader func(*Header) error, onRow func(*Header, *Row) error) error {
		rc, err := open()
		if err != nil {
			return err
		}
		err = Scan(rc, file, onHeader, onRow)
		rc.Close()
		for n := 2; err == nil; n++ {
			name := Continuation(file, n)
			if !isCSVRecording(name) {
				break
			}
			f, ferr := os.Open(name)
			if ferr != nil {
				return ferr
			}
			err = Scan(f, name, onHeader, onRow)
			f.Close()
		}
		return err
	}
}
