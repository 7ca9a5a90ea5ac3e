package guide

import (
	"encoding/hex"
	"fmt"
	"hash"
	"io"
)

// countingReader counts and, with h set, hashes what is read through it,
// and keeps the first error of the reader below (a body cut short, a
// stalled client).
type countingReader struct {
	r   io.Reader
	n   int64
	h   hash.Hash // nil: not hashed
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.h != nil {
		c.h.Write(p[:n])
	}
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// finishBody checks the whole body of a PUT (what, such as "tar archive")
// against the size and hash its upload announced.
func finishBody(c *countingReader, size int64, sum, what string) error {
	if size >= 0 && c.n != size {
		return bodyRefused(fmt.Sprintf("the PUT of the %s brought %d bytes; %d were announced", what, c.n, size))
	}
	if got := hex.EncodeToString(c.h.Sum(nil)); sum != "" && got != sum {
		return bodyRefused(fmt.Sprintf("the PUT of the %s brought bytes whose sha256 is %s; %s was announced", what, got, sum))
	}
	return nil
}
