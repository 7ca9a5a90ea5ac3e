package guide

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// The formats of a raw upload: one file, or an archive unpacked into a
// directory.
const (
	formatFile  = "file"
	formatTar   = "tar"
	formatTarGz = "tar.gz"
	formatZip   = "zip"
)

// archiveEntry is one file of an archive being unpacked.
type archiveEntry struct {
	name  string // as the archive names it
	mode  fs.FileMode
	mtime time.Time
	size  int64
	open  func() (io.Reader, error)
}

// entries yields an archive's entries one by one; io.EOF after the last.
type entries func() (*archiveEntry, error)

// unpack streams the archive in body (size bytes, or -1) into the directory
// up.file.path: every entry is validated, then all are stored in one
// change, or none.
func (u *Uploads) unpack(ctx context.Context, c *tool.Call, up *rawUpload, body io.Reader, size int64) (tool.Reply, error) {
	s := u.tools
	dest := up.file.path
	counted := &countingReader{r: body, h: sha256.New()}
	var next entries
	var cleanup func()
	var err error
	switch up.format {
	case formatTar:
		next = tarEntries(counted)
	case formatTarGz:
		next, err = tarGzEntries(counted)
	case formatZip:
		next, cleanup, err = zipEntries(counted, s.opts.MaxFileBytes)
	}
	if cleanup != nil {
		defer cleanup()
	}
	if errors.Is(err, store.ErrLimit) || errors.Is(err, store.ErrUpload) {
		return tool.Reply{}, err
	}
	if err != nil {
		return tool.Reply{}, fmt.Errorf("%w: not a %s archive: %w", store.ErrUpload, up.format, err)
	}
	seen := map[string]string{}
	var reqs []store.PutRequest
	var failed error // why next stopped the store
	now := time.Now()
	res, err := c.Store().PutStreams(ctx, dest, size, func() (store.PutRequest, io.Reader, error) {
		for {
			e, err := next()
			if errors.Is(err, io.EOF) {
				if err := finishBody(counted, size, up.file.sha256); err != nil {
					failed = err
					return store.PutRequest{}, nil, err
				}
				return store.PutRequest{}, nil, io.EOF
			}
			if err != nil {
				failed = fmt.Errorf("%w: reading the %s archive: %w", store.ErrUpload, up.format, err)
				return store.PutRequest{}, nil, failed
			}
			if e == nil {
				continue // a directory: made by the files in it
			}
			p, err := entryPath(dest, e.name)
			if err == nil {
				if first, dup := seen[p]; dup {
					err = fmt.Errorf("%w: the archive holds %s twice (as %q and %q)", args.ErrInvalid, p, first, e.name)
				}
			}
			if err == nil {
				err = checkFileSize(p, e.size, s.opts.MaxFileBytes)
			}
			if err == nil && len(reqs) >= s.opts.MaxListEntries {
				err = args.LimitError("the archive holds more than %d files, the most one upload may unpack", s.opts.MaxListEntries)
			}
			if err != nil {
				failed = fmt.Errorf("archive entry %q: %w", e.name, err)
				return store.PutRequest{}, nil, failed
			}
			seen[p] = e.name
			r, err := e.open()
			if err != nil {
				failed = fmt.Errorf("%w: archive entry %q: %w", store.ErrUpload, e.name, err)
				return store.PutRequest{}, nil, failed
			}
			req := store.PutRequest{
				Path: p, Mode: e.mode, MTime: e.mtime, Encoding: "raw", Source: toolBeginUpload,
				Writer: c.Who().String(), Expires: up.file.expires(now, s.opts.UploadTTL), Pinned: up.file.pin,
			}
			if !up.file.mtime.IsZero() {
				req.MTime = up.file.mtime
			}
			reqs = append(reqs, req)
			return req, r, nil
		}
	})
	if failed != nil {
		return tool.Reply{}, failed
	}
	if err != nil {
		var be *store.BatchError
		if errors.As(err, &be) {
			return tool.Reply{}, &tool.StoreError{Op: "put", Path: be.Path, Err: fmt.Errorf("archive entry %d: %w", be.Index, be.Err)}
		}
		return tool.Reply{}, &tool.StoreError{Op: "put", Path: dest, Err: err}
	}
	if len(res) == 0 {
		return tool.Reply{}, args.Problem("content", "the %s archive holds no file", up.format)
	}
	cctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	return s.batchReply(cctx, c, res, make([]string, len(res))), nil
}

// entryPath is where the archive entry name goes below dest. Absolute
// names and names with a ".." component are refused, not resolved.
func entryPath(dest, name string) (string, error) {
	n := strings.ReplaceAll(name, "\\", "/")
	if strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("%w: an absolute name", depotpath.ErrEscapes)
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: a \"..\" component", depotpath.ErrEscapes)
		}
	}
	p, err := depotpath.Clean(dest + "/" + n)
	if err != nil {
		return "", err
	}
	if p == dest || !depotpath.Within(p, dest) {
		return "", fmt.Errorf("%w: not below %s", depotpath.ErrEscapes, dest)
	}
	return p, nil
}

// countingReader counts and hashes what is read through it.
type countingReader struct {
	r io.Reader
	n int64
	h hash.Hash
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.h.Write(p[:n])
	return n, err
}

// finishBody reads what follows the archive's end (padding) and checks the
// whole body's size and hash against what the upload announced.
func finishBody(c *countingReader, size int64, sum string) error {
	if _, err := io.Copy(io.Discard, c); err != nil {
		return fmt.Errorf("%w: reading the archive: %w", store.ErrUpload, err)
	}
	if size >= 0 && c.n != size {
		return fmt.Errorf("%w: %d bytes arrived, %d were announced", store.ErrUpload, c.n, size)
	}
	if got := hex.EncodeToString(c.h.Sum(nil)); sum != "" && got != sum {
		return fmt.Errorf("%w: declared %s, the archive has %s", store.ErrHashMismatch, sum, got)
	}
	return nil
}

// tarEntries reads a tar stream. Only regular files and directories are
// accepted; a link, a device or anything else is refused with its name.
func tarEntries(r io.Reader) entries {
	tr := tar.NewReader(r)
	return func() (*archiveEntry, error) {
		h, err := tr.Next()
		if err != nil {
			return nil, err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			return nil, nil
		case tar.TypeReg: // tar.Reader reports the legacy TypeRegA as TypeReg
			return &archiveEntry{name: h.Name, mode: fs.FileMode(h.Mode) & fs.ModePerm, mtime: h.ModTime, size: h.Size,
				open: func() (io.Reader, error) { return tr, nil }}, nil
		}
		return nil, refusedType(h.Name, tarType(h.Typeflag))
	}
}

// tarGzEntries reads a gzip-compressed tar stream.
func tarGzEntries(r io.Reader) (entries, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	return tarEntries(zr), nil
}

// refusedType refuses an archive entry that is not a regular file or a
// directory.
func refusedType(name, kind string) error {
	return fmt.Errorf("archive entry %q: %w: it is a %s; only regular files and directories can be unpacked", name, args.ErrInvalid, kind)
}

// tarType names a tar entry type for a refusal.
func tarType(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "named pipe"
	}
	return fmt.Sprintf("entry of type %q", t)
}

// zipEntries reads a zip archive. Its directory is at its end, so the body
// is first spooled to a temporary file (at most max bytes, 0: no limit),
// never held in memory; cleanup removes the file.
func zipEntries(r io.Reader, max int64) (entries, func(), error) {
	f, err := os.CreateTemp("", "depotfs-upload-*.zip")
	if err != nil {
		return nil, nil, fmt.Errorf("spooling: %w", err)
	}
	cleanup := func() {
		f.Close()
		os.Remove(f.Name())
	}
	src := r
	if max > 0 {
		src = io.LimitReader(r, max+1)
	}
	n, err := io.Copy(f, src)
	if err != nil {
		return nil, cleanup, fmt.Errorf("%w: %w", store.ErrUpload, err)
	}
	if max > 0 && n > max {
		return nil, cleanup, fmt.Errorf("%w: the archive is over the file size limit of %d bytes", store.ErrLimit, max)
	}
	zr, err := zip.NewReader(f, n)
	if err != nil {
		return nil, cleanup, err
	}
	i := 0
	return func() (*archiveEntry, error) {
		if i == len(zr.File) {
			return nil, io.EOF
		}
		zf := zr.File[i]
		i++
		m := zf.Mode()
		switch {
		case m.IsDir():
			return nil, nil
		case m&fs.ModeSymlink != 0:
			return nil, refusedType(zf.Name, "symbolic link")
		case !m.IsRegular():
			return nil, refusedType(zf.Name, "special file ("+m.Type().String()+")")
		}
		return &archiveEntry{name: zf.Name, mode: m & fs.ModePerm, mtime: zf.Modified, size: int64(zf.UncompressedSize64),
			open: func() (io.Reader, error) { return zf.Open() }}, nil
	}, cleanup, nil
}
