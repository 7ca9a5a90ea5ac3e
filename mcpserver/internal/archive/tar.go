package archive

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// tarEntries reads a tar stream from r; finish, when set, checks what
// follows the tar's end (the rest of a gzip stream).
func tarEntries(rd *Reader, r io.Reader, finish func() error) func() (Entry, io.Reader, error) {
	src := &endReader{r: r}
	tr := tar.NewReader(src)
	last := "" // the member read last, for errors found in the next header
	return func() (Entry, io.Reader, error) {
		for {
			h, err := tr.Next()
			switch {
			case errors.Is(err, io.EOF) && src.short:
				// tar.Reader reports the stream ending at a block
				// boundary as the end of the archive; without its
				// end-of-archive marker it was cut short.
				return Entry{}, nil, rd.damaged(last, errors.New("it ends without the end-of-archive marker (cut short?)"))
			case errors.Is(err, io.EOF):
				if finish != nil {
					if err := finish(); err != nil {
						return Entry{}, nil, rd.damaged("", err)
					}
				}
				return Entry{}, nil, io.EOF
			case err != nil:
				return Entry{}, nil, rd.damaged(last, err)
			}
			last = h.Name
			e := Entry{Name: h.Name, Mode: fs.FileMode(h.Mode) & fs.ModePerm, MTime: h.ModTime, Size: h.Size}
			switch h.Typeflag {
			case tar.TypeXGlobalHeader:
				continue // pax defaults for what follows: nothing to unpack
			case tar.TypeDir:
				e.Dir, e.Size = true, 0
				return e, nil, nil
			case tar.TypeReg: // tar.Reader reports the legacy TypeRegA as TypeReg
				return e, &content{r: tr, rd: rd, member: h.Name}, nil
			}
			return Entry{}, nil, rd.unsupported(h.Name, tarType(h.Typeflag))
		}
	}
}

// tarGzEntries reads a gzip-compressed tar stream; at the tar's end the
// gzip stream is read to its end, which checks its checksum.
func tarGzEntries(rd *Reader, r io.Reader) (func() (Entry, io.Reader, error), error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, rd.damaged("", fmt.Errorf("not gzip-compressed: %w", err))
	}
	finish := func() error {
		if _, err := io.Copy(io.Discard, zr); err != nil {
			return fmt.Errorf("after the tar's end: %w", err)
		}
		return nil
	}
	return tarEntries(rd, zr, finish), nil
}

// endReader notes a read that found r already at its end, which a tar
// stream ending with its end-of-archive marker never needs.
type endReader struct {
	r     io.Reader
	short bool
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if n == 0 && errors.Is(err, io.EOF) && len(p) > 0 {
		e.short = true
	}
	return n, err
}

// tarTypes name the tar entry types a refusal names.
var tarTypes = map[byte]string{tar.TypeSymlink: "symbolic link", tar.TypeLink: "hard link", tar.TypeChar: "character device",
	tar.TypeBlock: "block device", tar.TypeFifo: "named pipe", tar.TypeGNUSparse: "sparse file"}

// tarType names a tar entry type for a refusal.
func tarType(t byte) string {
	if name, ok := tarTypes[t]; ok {
		return name
	}
	return fmt.Sprintf("entry of type %q", t)
}
