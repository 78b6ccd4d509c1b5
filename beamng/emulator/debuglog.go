package emulator

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"beamconnect/beamng"
)

// The file names BeamNG's controller writes with debugFile=true.
const (
	SendLogName    = "simulinkSendLog.csv"
	ReceiveLogName = "simulinkReceiveLog.csv"
	StepsLogName   = "simulinkPhysicsStepsLog.csv"
)

// debugLogs writes BeamNG's three debug CSVs: a header row, then one row per
// message sent, per message received and per physics step, each starting
// with the time in seconds (BeamNG uses os.clockhp()). Seed 001's timing
// analysis reads exactly this layout: column 1 the time, column 2 the id.
// Rows are streamed through buffers and written without allocating.
type debugLogs struct {
	files [3]*os.File
	w     [3]*bufio.Writer
	line  []byte
}

const (
	logSend = iota
	logRecv
	logSteps
)

func openDebugLogs(dir string, layout *beamng.Layout) (*debugLogs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("emulator: debug logs: %w", err)
	}
	l := &debugLogs{line: make([]byte, 0, 4096)}
	for i, name := range []string{SendLogName, ReceiveLogName, StepsLogName} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			l.close()
			return nil, fmt.Errorf("emulator: debug logs: %w", err)
		}
		l.files[i], l.w[i] = f, bufio.NewWriterSize(f, 64<<10)
	}
	l.w[logSend].WriteString(header(layout, beamng.FromBeamNG))
	l.w[logRecv].WriteString(header(layout, beamng.ToBeamNG))
	l.w[logSteps].WriteString("time\n")
	return l, nil
}

// header names the columns: Gen 1's bank references, or a Gen 2 CSV's
// signal names (Group/name, with the row kind of a signalFrom row).
func header(l *beamng.Layout, d beamng.Direction) string {
	h := "time"
	for i, s := range l.Signals(d) {
		switch {
		case i == 0:
			h += ",id"
		case s.Group != "":
			col := s.Group + "/" + s.Name
			if s.Kind != "" && s.Kind != "value" {
				col += ":" + s.Kind
			}
			h += "," + strings.ReplaceAll(col, ",", ";")
		default:
			h += "," + s.Ref
		}
	}
	return h + "\n"
}

func (l *debugLogs) physicsStep(t float64) {
	l.line = strconv.AppendFloat(l.line[:0], t, 'f', 7, 64)
	l.line = append(l.line, '\n')
	l.w[logSteps].Write(l.line)
}

func (l *debugLogs) sent(t float64, msg []float64) {
	b := strconv.AppendFloat(l.line[:0], t, 'f', 7, 64)
	for _, v := range msg {
		b = append(b, ',')
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	l.line = append(b, '\n')
	l.w[logSend].Write(l.line)
}

// received logs a datagram as BeamNG decoded it: whole doubles only.
func (l *debugLogs) received(t float64, raw []byte) {
	b := strconv.AppendFloat(l.line[:0], t, 'f', 7, 64)
	for i := 0; i+8 <= len(raw); i += 8 {
		b = append(b, ',')
		b = strconv.AppendFloat(b, math.Float64frombits(binary.LittleEndian.Uint64(raw[i:])), 'g', -1, 64)
	}
	l.line = append(b, '\n')
	l.w[logRecv].Write(l.line)
}

func (l *debugLogs) close() error {
	var errs []error
	for i := range l.files {
		if l.w[i] != nil {
			errs = append(errs, l.w[i].Flush())
		}
		if l.files[i] != nil {
			errs = append(errs, l.files[i].Close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("emulator: debug logs: %w", err)
	}
	return nil
}
