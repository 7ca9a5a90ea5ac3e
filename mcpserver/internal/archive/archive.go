// Package archive reads the archives a raw upload unpacks (tar, tar.gz,
// zip) as a sequence of entries: regular files and directories. Anything
// else (a link, a device, a pipe, a sparse file) is refused naming the
// member; pax global headers (which `git archive` writes) carry nothing to
// unpack and are skipped. A damaged archive is an error, never a shorter
// archive: a gzip checksum is checked by reading to the gzip stream's end,
// a tar must end with its end-of-archive marker, a zip member's CRC and
// size are checked as it is read (and read to be checked when skipped),
// and a zip whose directory names the same bytes for two members is
// refused before any member is read. So reading every entry of an archive
// checks all of it, before anything is stored.
//
// The package reads and never writes; member names reach error texts only
// clipped (internal/clip), since a client chooses them. A Reader belongs
// to one goroutine.
package archive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/depotfs/depotfs/internal/clip"
)

// Format names an archive format.
type Format string

// The formats a Reader reads.
const (
	Tar   Format = "tar"
	TarGz Format = "tar.gz"
	Zip   Format = "zip"
)

// ErrDamaged reports an archive that cannot be read whole: not of its
// format, cut short, or failing a checksum.
var ErrDamaged = errors.New("the archive is damaged")

// ErrUnsupported reports a member that is neither a regular file nor a
// directory.
var ErrUnsupported = errors.New("only regular files and directories can be unpacked")

// Error is a failure reading an archive, naming the member it concerns
// (clipped) when there is one. It wraps ErrDamaged or ErrUnsupported.
type Error struct {
	Format Format
	Member string // as the archive names it; "" when no member is concerned
	Err    error
}

func (e *Error) Error() string {
	if e.Member == "" {
		return fmt.Sprintf("the %s archive: %v", e.Format, e.Err)
	}
	return fmt.Sprintf("the %s archive, member %q: %v", e.Format, clip.String(e.Member), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Entry is one member of an archive.
type Entry struct {
	// Name is the member's name as the archive gives it.
	Name string
	// Dir reports a directory; it has no content.
	Dir bool
	// Mode holds the permission bits.
	Mode fs.FileMode
	// MTime is the modification time the archive records.
	MTime time.Time
	// Size is the content's size as the archive declares it; a member
	// whose content differs from it fails with ErrDamaged when read.
	Size int64
}

// Reader reads the entries of one archive, in order.
type Reader struct {
	format Format
	next   func() (Entry, io.Reader, error)
}

// NewReader returns a reader of the archive of format held in r, size
// bytes long. A zip archive's directory is read at once; tar and tar.gz
// are read as Next goes.
func NewReader(r io.ReaderAt, size int64, format Format) (*Reader, error) {
	rd := &Reader{format: format}
	var err error
	switch format {
	case Tar:
		rd.next = tarEntries(rd, io.NewSectionReader(r, 0, size), nil)
	case TarGz:
		rd.next, err = tarGzEntries(rd, io.NewSectionReader(r, 0, size))
	case Zip:
		rd.next, err = zipEntries(rd, r, size)
	default:
		return nil, fmt.Errorf("archive: unknown format %q", format)
	}
	if err != nil {
		return nil, err
	}
	return rd, nil
}

// Next returns the next entry and a reader of its content (nil for a
// directory), or io.EOF after the last entry once the archive's end is
// checked. Content not read before the next call is skipped (tar), or
// read and checked (tar.gz, zip: their checksums cover it). Every other
// error is an *Error; after one, the archive is not
// read further.
func (r *Reader) Next() (Entry, io.Reader, error) {
	e, c, err := r.next()
	if err != nil && !errors.Is(err, io.EOF) {
		r.next = func() (Entry, io.Reader, error) { return Entry{}, nil, err }
	}
	return e, c, err
}

// damaged is the error of a damaged archive, about member (or none).
func (r *Reader) damaged(member string, err error) error {
	return &Error{Format: r.format, Member: member, Err: fmt.Errorf("%w: %w", ErrDamaged, err)}
}

// unsupported refuses member, which is a kind.
func (r *Reader) unsupported(member, kind string) error {
	return &Error{Format: r.format, Member: member, Err: fmt.Errorf("%w; it is a %s", ErrUnsupported, kind)}
}

// content is a member's content: its read errors (other than its end)
// become *Error naming the member.
type content struct {
	r      io.Reader
	rd     *Reader
	member string
}

func (c *content) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = c.rd.damaged(c.member, err)
	}
	return n, err
}
