package archive

import (
	"archive/zip"
	"cmp"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"slices"
)

// zipEntries reads a zip archive's directory at once, checks that no two
// members share bytes (zipLayout), and yields its members in the
// directory's order. Each member's content is checked against its CRC-32
// and declared size as it is read, and read to its end (so checked) when
// the next member is asked for without it: reading every entry checks the
// whole archive, as it does a tar.gz's.
func zipEntries(rd *Reader, r io.ReaderAt, size int64) (func() (Entry, io.Reader, error), error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, rd.damaged("", fmt.Errorf("not a zip archive: %w", err))
	}
	if err := zipLayout(rd, zr.File, size); err != nil {
		return nil, err
	}
	i := 0
	var open *zipMember // the member last opened
	return func() (Entry, io.Reader, error) {
		if open != nil {
			err := open.finish()
			open = nil
			if err != nil {
				return Entry{}, nil, err
			}
		}
		if i == len(zr.File) {
			return Entry{}, nil, io.EOF
		}
		zf := zr.File[i]
		i++
		m := zf.Mode()
		e := Entry{Name: zf.Name, Mode: m & fs.ModePerm, MTime: zf.Modified, Size: int64(zf.UncompressedSize64)}
		switch {
		case m.IsDir():
			e.Dir, e.Size = true, 0
			return e, nil, nil
		case m&fs.ModeSymlink != 0:
			return Entry{}, nil, rd.unsupported(zf.Name, "symbolic link")
		case !m.IsRegular():
			return Entry{}, nil, rd.unsupported(zf.Name, "special file ("+m.Type().String()+")")
		}
		if e.Size < 0 {
			return Entry{}, nil, rd.damaged(zf.Name, fmt.Errorf("a size of %d bytes", zf.UncompressedSize64))
		}
		c, err := zf.Open()
		if err != nil {
			return Entry{}, nil, rd.damaged(zf.Name, err)
		}
		open = &zipMember{c: c, zf: zf, rd: rd, sum: crc32.NewIEEE()}
		return e, open, nil
	}, nil
}

// zipLayout refuses a zip whose directory points two members at the same
// bytes, or beyond the archive's end. Each member's data,
// [DataOffset, DataOffset+CompressedSize64), must lie inside the archive
// and apart from every other member's, and no two members may start at
// the same place (two empty members sharing one local header). Without
// this a directory that repeats one deflated member a thousand times
// makes a few KiB inflate to a thousand times that member: the zip format
// has no rule against it, but no zip writer makes one.
func zipLayout(rd *Reader, files []*zip.File, size int64) error {
	type span struct {
		start, end int64
		name       string
	}
	spans := make([]span, 0, len(files))
	for _, zf := range files {
		start, err := zf.DataOffset()
		if err != nil {
			return rd.damaged(zf.Name, fmt.Errorf("its local header: %w", err))
		}
		n := int64(zf.CompressedSize64)
		if start < 0 || n < 0 || start > size || n > size-start {
			return rd.damaged(zf.Name, fmt.Errorf("its %d compressed bytes at offset %d run past the archive's end (%d bytes)", zf.CompressedSize64, start, size))
		}
		spans = append(spans, span{start, start + n, zf.Name})
	}
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	for i := 1; i < len(spans); i++ {
		if prev, s := spans[i-1], spans[i]; s.start < prev.end || s.start == prev.start {
			return rd.damaged(s.name, fmt.Errorf("its data overlaps that of member %q (the archive's directory names the same bytes twice)", prev.name))
		}
	}
	return nil
}

// zipMember is the content of one zip member. archive/zip checks the
// declared size and, unless the directory records a CRC-32 of 0, the
// CRC-32; zipMember checks the CRC-32 always, and finish reads what the
// caller left unread, so that a member is checked whether or not it was
// read.
type zipMember struct {
	c   io.ReadCloser
	zf  *zip.File
	rd  *Reader
	sum hash.Hash32
	err error // the first error other than the end, as returned
	end bool  // the end was reached and checked
}

func (z *zipMember) Read(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if z.end {
		return 0, io.EOF
	}
	n, err := z.c.Read(p)
	z.sum.Write(p[:n])
	switch {
	case errors.Is(err, io.EOF) && z.sum.Sum32() != z.zf.CRC32:
		err = fmt.Errorf("%w (CRC-32 %08x, the directory says %08x)", zip.ErrChecksum, z.sum.Sum32(), z.zf.CRC32)
	case errors.Is(err, io.EOF):
		z.end = true
		return n, io.EOF
	case err == nil:
		return n, nil
	}
	z.err = z.rd.damaged(z.zf.Name, err)
	return n, z.err
}

// finish reads the member to its end, which checks it, and closes it.
func (z *zipMember) finish() error {
	_, err := io.Copy(io.Discard, z)
	z.c.Close()
	return err
}
