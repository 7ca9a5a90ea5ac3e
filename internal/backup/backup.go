// Package backup is the container of a depot backup: one tar stream
// holding a header (what was backed up, as of which revision), the
// database file, the audit log's files, and, last, the SHA-256 of every
// member. A container that lacks its last member, or whose members do not
// match it, is refused whole: a backup cut off halfway (a killed client,
// a full disk) can never be restored by mistake.
//
// The package knows nothing of stores or of the audit log's format: it
// writes and reads members. It is safe to use one Writer or one Read from
// one goroutine at a time.
package backup

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"
)

// Format is the container format this package writes and reads.
const Format = 1

// Member names with a fixed meaning.
const (
	HeaderName = "depotfs-backup.json" // first member: the Header
	DBName     = "depot.db"            // the bbolt database file (a bolt depot's backup)
	ExportName = "export.tar"          // the depot's export at the revision (a NATS depot's backup)
	AuditDir   = "audit/"              // prefix of the audit log's files
	SumsName   = "SHA256SUMS"          // last member: "<sha256>  <name>" per member
)

// ErrCorrupt reports a container that is incomplete, altered or not a
// backup at all.
var ErrCorrupt = errors.New("not a complete depotfs backup")

// Header says what a container holds. It is a plain value.
type Header struct {
	Format   int       `json:"format"`
	Store    string    `json:"store"`    // "bolt" (holds DBName) or "nats" (holds ExportName)
	Revision uint64    `json:"revision"` // the store revision the database is as of
	Created  time.Time `json:"created"`
	// Audit is the base name of the audit log the audit/ members are
	// the files of ("audit.log"); "" when the backup holds no audit log.
	Audit string `json:"audit,omitempty"`
}

// Writer writes a container. Close must be called to write the last
// member; without it the container is refused by Read.
type Writer struct {
	tw   *tar.Writer
	sums []string // "<sha256>  <name>", in member order
	now  time.Time
}

// NewWriter starts a container on w with h as its first member.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Format = Format
	if h.Created.IsZero() {
		h.Created = time.Now().UTC()
	}
	bw := &Writer{tw: tar.NewWriter(w), now: h.Created}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := bw.Add(HeaderName, int64(len(b)), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return nil, err
	}
	return bw, nil
}

// Add writes a member of exactly size bytes, which write produces; write
// producing another number of bytes fails the container.
func (w *Writer) Add(name string, size int64, write func(io.Writer) error) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := w.tw.WriteHeader(&tar.Header{Name: name, Size: size, Mode: 0o600, ModTime: w.now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("backup: %s: %w", name, err)
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(w.tw, h)}
	bw := bufio.NewWriterSize(cw, 1<<20)
	if err := write(bw); err != nil {
		return fmt.Errorf("backup: %s: %w", name, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("backup: %s: %w", name, err)
	}
	if cw.n != size {
		return fmt.Errorf("backup: %s: %d bytes written, %d announced", name, cw.n, size)
	}
	w.sums = append(w.sums, hex.EncodeToString(h.Sum(nil))+"  "+name)
	return nil
}

// Close writes the last member, the sums of every member, and ends the
// stream. It does not close the underlying writer.
func (w *Writer) Close() error {
	b := []byte(strings.Join(w.sums, "\n") + "\n")
	if err := w.tw.WriteHeader(&tar.Header{Name: SumsName, Size: int64(len(b)), Mode: 0o600, ModTime: w.now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if _, err := w.tw.Write(b); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return w.tw.Close()
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// checkName refuses a member name that is not a plain relative path.
func checkName(name string) error {
	if name == "" || path.Clean(name) != name || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("%w: member name %q", ErrCorrupt, name)
	}
	return nil
}

// Read reads the container from r: it decodes the header and passes every
// other member but the last to fn (name, size and its bytes, which fn may
// read partly or not at all), hashing each, then checks the last member
// against them all. It fails with ErrCorrupt when the stream ends early,
// a member's bytes or the set of members do not match the sums, or the
// header is missing or of another format. fn's work must therefore be
// undone by the caller when Read fails.
func Read(r io.Reader, fn func(h Header, name string, size int64, r io.Reader) error) (Header, error) {
	tr := tar.NewReader(r)
	var h Header
	var got []string
	for i := 0; ; i++ {
		th, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return h, fmt.Errorf("%w: it ends before its %s (cut off while it was written?)", ErrCorrupt, SumsName)
		}
		if err != nil {
			return h, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if err := checkName(th.Name); err != nil || th.Typeflag != tar.TypeReg {
			return h, fmt.Errorf("%w: member %q is not a plain file", ErrCorrupt, th.Name)
		}
		if th.Name == SumsName {
			return h, checkSums(tr, th.Size, got)
		}
		hash := sha256.New()
		body := io.TeeReader(corruptOnError{tr}, hash)
		switch {
		case i == 0 && th.Name != HeaderName:
			return h, fmt.Errorf("%w: the first member is %q, not %s", ErrCorrupt, th.Name, HeaderName)
		case i == 0:
			if th.Size > 1<<20 {
				return h, fmt.Errorf("%w: header of %d bytes", ErrCorrupt, th.Size)
			}
			b, err := io.ReadAll(body)
			if err != nil {
				return h, fmt.Errorf("%w: %v", ErrCorrupt, err)
			}
			if err := json.Unmarshal(b, &h); err != nil || h.Format != Format {
				return h, fmt.Errorf("%w: header %q (format %d; this depotfs reads format %d)", ErrCorrupt, b, h.Format, Format)
			}
		default:
			if err := fn(h, th.Name, th.Size, body); err != nil {
				return h, err
			}
			if _, err := io.Copy(io.Discard, body); err != nil {
				return h, fmt.Errorf("%w: %s: %v", ErrCorrupt, th.Name, err)
			}
		}
		got = append(got, hex.EncodeToString(hash.Sum(nil))+"  "+th.Name)
	}
}

// checkSums compares the last member, of size bytes on r, with the sums
// of the members read.
func checkSums(r io.Reader, size int64, got []string) error {
	if size > 1<<20 {
		return fmt.Errorf("%w: %s of %d bytes", ErrCorrupt, SumsName, size)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, SumsName, err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if !slices.Equal(want, got) {
		return fmt.Errorf("%w: its members do not match its %s (altered, or members missing)", ErrCorrupt, SumsName)
	}
	return nil
}

// corruptOnError marks an error reading a member's bytes (a stream that
// ends inside a member) as ErrCorrupt, whoever reads them.
type corruptOnError struct{ r io.Reader }

func (c corruptOnError) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return n, err
}
