// Package lines reads text line by line from a program that may write a
// line of any length (an exec model's answers, an FMU host's stderr): a
// line longer than the reader's limit comes as its first bytes and its
// length, and reading goes on with the next line. bufio.Scanner instead
// stops for good at such a line, and everything after it is lost.
package lines

import "bufio"

// Reader reads lines from a bufio.Reader.
type Reader struct {
	r    *bufio.Reader
	max  int
	line []byte
}

// NewReader reads lines of at most max bytes (newline included) from r.
func NewReader(r *bufio.Reader, max int) *Reader { return &Reader{r: r, max: max} }

// Next returns the next line, newline included; for a line over the
// limit, its first bytes (at most the limit) and its length, else long is
// 0; the read error once no bytes are left. The line is valid until the
// next call.
func (lr *Reader) Next() (line []byte, long int, err error) {
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
