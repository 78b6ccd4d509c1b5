package coupling

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"beamconnect/recording"
)

// recordHeader starts every header row of a CSV recording.
const recordHeader = "time,status,id,reply_id,reloads"

// OpenRecording creates the file for --record, for format (a registered
// recording format's name; "" for the one path's extension says). It
// refuses the config file being run, always, and any existing file that is
// not an earlier recording (a CSV whose first row starts
// "time,status,id,reply_id", an MDF file beamconnect wrote) unless force is
// set: a typo must not destroy a config, a log or a measurement.
func OpenRecording(path, configPath, format string, force bool) (*os.File, *recording.Format, error) {
	fm, err := recording.FormatFor(path, format)
	if err != nil {
		return nil, nil, fmt.Errorf("--record-format: %w", err)
	}
	if fi, err := os.Stat(path); err == nil {
		if cfi, err := os.Stat(configPath); err == nil && os.SameFile(fi, cfi) {
			return nil, nil, fmt.Errorf("%s is the config file being run: expected another file, such as %s",
				path, filepath.Join(filepath.Dir(path), "run"+fm.Exts[0]))
		}
		if !force && fi.Mode().IsRegular() && fi.Size() > 0 {
			f, err := os.Open(path)
			if err != nil {
				return nil, nil, err
			}
			head := make([]byte, 64)
			n, _ := io.ReadFull(f, head)
			f.Close()
			if recording.Detect(head[:n]) == nil {
				return nil, nil, fmt.Errorf("%s: the file exists and is %w (neither a CSV whose first row starts %q nor an MDF file beamconnect wrote): expected a new file, an earlier recording, or --force to overwrite it",
					path, recording.ErrNotRecording, recordHeader)
			}
		}
		if !fi.Mode().IsRegular() {
			if fm.Seekable {
				return nil, nil, fmt.Errorf("%s: not a regular file: the %s format writes in place (it links what it wrote before); record CSV to a pipe or a device", path, fm.Name)
			}
			if !force {
				return nil, nil, fmt.Errorf("%s: not a regular file: give --force to write to it anyway", path)
			}
			// A pipe or a device: opening it must not wait for a reader
			// (a FIFO with none would hold the run before it starts).
			f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w (a pipe needs its reader started first)", path, err)
			}
			return f, fm, nil
		}
	}
	f, err := os.Create(path)
	return f, fm, err
}
