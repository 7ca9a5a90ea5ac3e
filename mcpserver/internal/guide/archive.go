package guide

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/clip"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/archive"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// The formats of a raw upload: one file, or an archive unpacked into a
// directory.
const (
	formatFile  = "file"
	formatTar   = string(archive.Tar)
	formatTarGz = string(archive.TarGz)
	formatZip   = string(archive.Zip)
)

// spoolSlack is what an archive may hold beyond its members' content
// (headers, padding, a zip's directory), per member and in all, when its
// spooled size is bounded by what the store can take.
const (
	spoolSlackPerMember = 1 << 10
	spoolSlack          = 1 << 20
)

// The instructions of a refused archive.
const (
	archiveOverFix = "The archive unpacks to more than this upload may take: the message names the limit (guide_cache_stats shows the depot's). Nothing was stored and nothing was evicted. Send the tree as several smaller archives, each with its own guide_begin_upload, or ask the user to raise the limit."
	archiveReadFix = "The archive could not be read whole; the message names the member. Check it (tar -tzf FILE, unzip -t FILE), then send it again, whole, to a new upload_url from guide_begin_upload. Nothing was stored."
	bodyFix        = "The PUT's body did not match what guide_begin_upload announced: begin a new upload (its size and sha256, if given, must be those of the exact bytes) and send them with one PUT. Nothing was stored."
)

// plan is what the first reading of an archive found: the sizes to
// charge, and the directories no file of the archive creates.
type plan struct {
	files     int
	bytes     int64                // the files' content, all together
	emptyDirs []store.Declaration  // directory entries with no file below them
	dirs      map[string]bool      // directories that hold a file of the archive
	seen      map[string]string    // member name of each path, to refuse one twice
	dirEntry  map[string]time.Time // directory entries, with their times
}

// unpack stores the archive in body (size bytes, or -1) into the directory
// up.file.path. The body is spooled to a file under Env.SpoolDir and read
// twice: first every member is checked (names, types, the file size limit,
// the member count, and its declared size against what the store can
// take, before its content is read) and the archive read to its end, so a
// damaged or oversized archive is refused before the store sees a byte;
// then its files are stored in one change, or none, and the directories
// it holds that no file creates are made.
func (u *Uploads) unpack(ctx context.Context, c *tool.Call, up *rawUpload, body io.Reader, size int64) (tool.Reply, error) {
	s := u.tools
	format := archive.Format(up.format)
	room, err := c.Store().Room(ctx)
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "stats", Path: up.file.path, Err: err}
	}
	f, n, err := s.spool(body, size, up, room)
	if f != nil {
		defer func() {
			f.Close()
			os.Remove(f.Name())
		}()
	}
	if err != nil {
		return tool.Reply{}, err
	}
	p, err := s.scan(f, n, format, up.file.path, room)
	if err != nil {
		return tool.Reply{}, err
	}
	if p.files == 0 && len(p.emptyDirs) == 0 {
		return tool.Reply{}, args.Problem("content", "the %s archive holds no file and no directory", up.format)
	}
	var res []store.PutResult
	if p.files > 0 {
		res, err = s.store(ctx, c, up, f, n, p)
		if err != nil {
			return tool.Reply{}, err
		}
	}
	cctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	var warnings []string
	if len(p.emptyDirs) > 0 {
		_, err := c.Store().Declare(cctx, store.DeclareRequest{Entries: p.emptyDirs, Writer: c.Who().String(), Source: toolBeginUpload})
		switch {
		case err != nil && len(res) == 0:
			return tool.Reply{}, &tool.StoreError{Op: "declare", Path: up.file.path, Err: err}
		case err != nil:
			s.opts.Logger.Warn("archive directories not made", "path", up.file.path, "err", err)
			warnings = append(warnings, fmt.Sprintf("The archive's files are stored, but its %d empty directories could not be made (%s); make them with another upload or an fs mkdir.", len(p.emptyDirs), tool.Classify(err).Message))
		}
	}
	r := s.batchReply(cctx, c, res, make([]string, len(res)))
	if len(p.emptyDirs) > 0 {
		r.Message += fmt.Sprintf(" Made %d empty directories.", len(p.emptyDirs))
		c.Status += fmt.Sprintf(", %d empty directories", len(p.emptyDirs))
	}
	r.Warnings = append(r.Warnings, warnings...)
	return r, nil
}

// spool copies body into a new file under Env.SpoolDir, checking its size
// and hash against what the upload announced, and returns it with its
// size. While room (what the store can take; -1: no limit) bounds the
// archive's content, it bounds the spooled size too (with slack for
// headers), as does the disk reserve. The caller removes the file, also
// on error.
func (s *tools) spool(body io.Reader, size int64, up *rawUpload, room int64) (*os.File, int64, error) {
	limit := int64(-1)
	if room >= 0 {
		limit = room + int64(s.opts.MaxListEntries)*spoolSlackPerMember + spoolSlack
	}
	if s.opts.DiskFree != nil && s.opts.DiskReserve > 0 {
		if free, err := s.opts.DiskFree(); err == nil {
			if left := max(free-s.opts.DiskReserve, 0); limit < 0 || left < limit {
				limit = left
			}
		}
	}
	if size >= 0 && limit >= 0 && size > limit {
		return nil, 0, archiveOver(fmt.Sprintf("the %s archive has %d bytes, more than the %d this depot can take now (its size limit, less uploads in progress, or its disk reserve)", up.format, size, limit))
	}
	f, err := os.CreateTemp(s.opts.SpoolDir, "depotfs-upload-*."+up.format)
	if err != nil {
		return nil, 0, fmt.Errorf("spooling the archive: %w", err)
	}
	counted := &countingReader{r: body, h: sha256.New()}
	src := io.Reader(counted)
	if limit >= 0 {
		src = io.LimitReader(counted, limit+1)
	}
	n, err := io.Copy(f, src)
	switch {
	case err != nil && counted.err != nil:
		return f, 0, bodyRefused(fmt.Sprintf("reading the %s archive's body: %v (%d bytes arrived)", up.format, counted.err, counted.n))
	case err != nil:
		return f, 0, fmt.Errorf("spooling the archive: %w", err)
	case limit >= 0 && n > limit:
		return f, 0, archiveOver(fmt.Sprintf("the %s archive has more than %d bytes, what this depot can take now (its size limit, less uploads in progress, or its disk reserve)", up.format, limit))
	}
	if err := finishBody(counted, size, up.file.sha256, up.format+" archive"); err != nil {
		return f, 0, err
	}
	return f, n, nil
}

// scan reads the spooled archive f (n bytes) once without storing
// anything: every member's path below dest, type, size and count are
// checked, the declared sizes summed against room (-1: no limit) as each
// header is read, and the archive is read to its end, which checks it is
// whole.
func (s *tools) scan(f *os.File, n int64, format archive.Format, dest string, room int64) (*plan, error) {
	rd, err := archive.NewReader(f, n, format)
	if err != nil {
		return nil, archiveError(err)
	}
	p := &plan{dirs: map[string]bool{}, seen: map[string]string{}, dirEntry: map[string]time.Time{}}
	members := 0
	for {
		e, _, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, archiveError(err)
		}
		members++
		if members > s.opts.MaxListEntries {
			return nil, archiveOver(fmt.Sprintf("the %s archive holds more than %d members, the most one upload may unpack", format, s.opts.MaxListEntries))
		}
		path, err := memberPath(dest, e, p.seen)
		if err != nil {
			return nil, err
		}
		if e.Dir {
			if path != dest { // "./", which tar -C dir . writes first, is dest itself
				p.dirEntry[path] = e.MTime
			}
			continue
		}
		if err := checkFileSize(path, e.Size, s.opts.MaxFileBytes); err != nil {
			return nil, archiveOver(fmt.Sprintf("the %s archive, member %q: %v", format, clip.String(e.Name), err))
		}
		p.files++
		p.bytes += e.Size
		if room >= 0 && p.bytes > room {
			return nil, archiveOver(fmt.Sprintf("the %s archive unpacks to more than %d bytes (at member %q, file number %d), what this depot can take now: its size limit less uploads in progress",
				format, room, clip.String(e.Name), p.files))
		}
		for d, _ := depotpath.Split(path); d != dest && !p.dirs[d]; d, _ = depotpath.Split(d) {
			p.dirs[d] = true
		}
	}
	for path, mtime := range p.dirEntry {
		if !p.dirs[path] {
			p.emptyDirs = append(p.emptyDirs, store.Declaration{Path: path, Kind: store.KindDir, Size: -1, MTime: mtime})
		}
	}
	slices.SortFunc(p.emptyDirs, func(a, b store.Declaration) int { return strings.Compare(a.Path, b.Path) })
	return p, nil
}

// store stores the files of the spooled archive f (n bytes), which scan
// found to be p, in one change.
func (s *tools) store(ctx context.Context, c *tool.Call, up *rawUpload, f *os.File, n int64, p *plan) ([]store.PutResult, error) {
	rd, err := archive.NewReader(f, n, archive.Format(up.format))
	if err != nil {
		return nil, archiveError(err)
	}
	dest := up.file.path
	now := time.Now()
	var failed error // why next or a member's content stopped the store
	res, err := c.Store().PutStreams(ctx, dest, p.bytes, func() (store.PutRequest, io.Reader, error) {
		for {
			e, r, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return store.PutRequest{}, nil, io.EOF
			}
			if err != nil {
				failed = archiveError(err)
				return store.PutRequest{}, nil, failed
			}
			if e.Dir {
				continue
			}
			path, err := entryPath(dest, e.Name)
			if err != nil {
				failed = &memberErr{name: e.Name, err: err}
				return store.PutRequest{}, nil, failed
			}
			req := store.PutRequest{
				Path: path, Mode: e.Mode, MTime: e.MTime, Encoding: "raw", Source: toolBeginUpload,
				Writer: c.Who().String(), Expires: up.file.expires(now, s.opts.UploadTTL), Pinned: up.file.pin,
			}
			if !up.file.mtime.IsZero() {
				req.MTime = up.file.mtime
			}
			return req, &failingReader{r: r, failed: &failed}, nil
		}
	})
	if failed != nil {
		return nil, failed
	}
	if err != nil {
		var be *store.BatchError
		if errors.As(err, &be) {
			return nil, &tool.StoreError{Op: "put", Path: be.Path, Err: fmt.Errorf("archive entry %d: %w", be.Index, be.Err)}
		}
		return nil, &tool.StoreError{Op: "put", Path: dest, Err: err}
	}
	return res, nil
}

// failingReader keeps the first error of a member's content other than its
// end, so the reply names the archive and the member rather than how the
// store reported the failed read.
type failingReader struct {
	r      io.Reader
	failed *error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && *f.failed == nil {
		*f.failed = archiveError(err)
	}
	return n, err
}

// memberPath is where the member e goes below dest (see entryPath; a
// directory may name dest itself), refusing a path the archive names
// twice, unless as a directory both times.
func memberPath(dest string, e archive.Entry, seen map[string]string) (string, error) {
	p, err := entryPath(dest, e.Name)
	if e.Dir && err != nil && errors.Is(err, depotpath.ErrEscapes) && isDot(e.Name) {
		return dest, nil
	}
	if err == nil {
		first, dup := seen[p]
		if dup && !(e.Dir && strings.HasPrefix(first, dirMark)) {
			err = fmt.Errorf("%w: the archive holds %s twice (as %q and %q)", args.ErrInvalid, clip.String(p), clip.String(strings.TrimPrefix(first, dirMark)), clip.String(e.Name))
		}
	}
	if err != nil {
		return "", &memberErr{name: e.Name, err: err}
	}
	if e.Dir {
		seen[p] = dirMark + e.Name
	} else {
		seen[p] = e.Name
	}
	return p, nil
}

// dirMark starts the seen name of a directory entry, which may come twice.
const dirMark = "\x00"

// isDot reports whether a member name names the archive's root: "." or
// "./", as tar -C dir . writes.
func isDot(name string) bool {
	n := strings.Trim(strings.ReplaceAll(name, "\\", "/"), "/")
	return n == "." || n == ""
}

// memberErr is an error about one archive member. Its text is clipped
// whole: a client chooses the name, and err may quote it too.
type memberErr struct {
	name string
	err  error
}

func (e *memberErr) Error() string {
	return clip.N(fmt.Sprintf("archive entry %q: %v", clip.String(e.name), e.err), 4*clip.Max)
}

func (e *memberErr) Unwrap() error { return e.err }

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

// archiveError is the refusal of an archive the archive package could not
// read: a member of a type depotfs does not unpack, or a damaged archive.
func archiveError(err error) error {
	if errors.Is(err, archive.ErrUnsupported) {
		return fmt.Errorf("%w: %w", args.ErrInvalid, err)
	}
	return &tool.Refusal{Type: tool.ErrorValidation, Message: err.Error(), Instruction: archiveReadFix}
}

// archiveOver refuses an archive over a limit.
func archiveOver(msg string) error {
	return &tool.Refusal{Type: tool.ErrorLimit, Message: msg, Instruction: archiveOverFix}
}

// bodyRefused refuses a PUT whose body is not what was announced.
func bodyRefused(msg string) error {
	return &tool.Refusal{Type: tool.ErrorValidation, Message: msg, Instruction: bodyFix}
}
