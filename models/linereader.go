package models

import "bufio"

// maxAnswerLine is the longest answer line read, newline included: far
// more than any config's ports need, and a bound on what a runaway
// program can make beamconnect hold.
const maxAnswerLine = 1 << 20

// lineReader reads the program's lines, skipping a line longer than max
// whole (it reports the length instead) so that reading goes on with the
// next line. bufio.Scanner stops for good at such a line.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line []byte
}

// next returns the next line; for a line over max, its first max bytes
// and its length; the read error once no bytes are left.
func (lr *lineReader) next() (line []byte, long int, err error) {
	lr.line = lr.line[:0]
	n := 0
	for {
		frag, err := lr.r.ReadSlice('\n')
		n += len(frag)
		if n <= lr.max {
			lr.line = append(lr.line, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && n == 0 {
			return nil, 0, err
		}
		// A whole line, or the last one without a newline.
		if n > lr.max {
			return lr.line, n, nil
		}
		return lr.line, 0, nil
	}
}
