package archive

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
)

// zipEntries reads a zip archive's directory at once and yields its
// members in the directory's order; each member's content is checked
// against its CRC-32 and declared size as it is read.
func zipEntries(rd *Reader, r io.ReaderAt, size int64) (func() (Entry, io.Reader, error), error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, rd.damaged("", fmt.Errorf("not a zip archive: %w", err))
	}
	i := 0
	var open io.ReadCloser // the member last opened
	return func() (Entry, io.Reader, error) {
		if open != nil {
			open.Close()
			open = nil
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
		open = c
		return e, &content{r: c, rd: rd, member: zf.Name}, nil
	}, nil
}
