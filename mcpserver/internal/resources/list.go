package resources

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// errCursor reports a resources/list cursor depotfs did not write.
var errCursor = errors.New("invalid resources/list cursor: pass the nextCursor of the previous page unchanged, or no cursor for the first page")

// encodeCursor returns the cursor of the page that follows the file at the
// clean path last. It is standard base64 (mcp-go decodes cursors as such
// before depotfs sees them) of the path.
func encodeCursor(last string) mcp.Cursor {
	return mcp.Cursor(base64.StdEncoding.EncodeToString([]byte(last)))
}

// decodeCursor returns the path a cursor continues after.
func decodeCursor(c string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return "", errCursor
	}
	p := string(b)
	if clean, err := depotpath.Clean(p); err != nil || clean != p || p == depotpath.Root {
		return "", errCursor
	}
	return p, nil
}

// listResources fills a resources/list result with one page of depot files.
// mcp-go has answered the request from its own (empty) table of static
// resources; this after-hook replaces the page. A store failure cannot
// become a protocol error here (hooks return nothing): it is logged and the
// page stays empty, which happens only while the store is closing.
func (s *Resources) listResources(ctx context.Context, _ any, req *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	if res == nil {
		return
	}
	var after string
	if c := string(req.Params.Cursor); c != "" {
		var err error
		if after, err = decodeCursor(c); err != nil {
			return // refused earlier by checkRequest
		}
	}
	files, more, err := s.walkFiles(ctx, after, s.env.ResourcePageSize)
	if err != nil {
		s.log.Error("mcp resources/list failed", "after", after, "err", err)
		return
	}
	page := make([]mcp.Resource, 0, len(files)+len(res.Resources))
	for _, e := range files {
		page = append(page, s.resource(ctx, e))
	}
	res.NextCursor = ""
	if more {
		res.NextCursor = encodeCursor(files[len(files)-1].Path)
	} else {
		// The last page also carries the resources registered with
		// mcp-go (the pending-requests list), which the depot's files
		// would otherwise replace.
		page = append(page, res.Resources...)
	}
	res.Resources = page
}

// resource describes one depot file for resources/list.
func (s *Resources) resource(ctx context.Context, e store.Entry) mcp.Resource {
	r := mcp.Resource{
		URI:      URI(e.Path),
		Name:     e.Path,
		Title:    depotpath.Base(e.Path),
		MIMEType: mediaType(e.Path, s.head(ctx, e)),
	}
	r.Annotations = &mcp.Annotations{LastModified: e.MTime.UTC().Format(time.RFC3339)}
	size := e.Size
	if size >= 0 {
		r.Size = &size
	}
	if !e.Present {
		r.Description = "Listed by an agent; its content has not arrived yet, so reading it fails until the agent pushes it."
	}
	return r
}

// head returns the first bytes of a present file for content sniffing, or
// nil when there are none to read (a placeholder, an empty file, a file
// gone meanwhile).
func (s *Resources) head(ctx context.Context, e store.Entry) []byte {
	if !e.Present || e.Size == 0 {
		return nil
	}
	c, err := s.rt.View(ctx).Open(ctx, e.Path)
	if err != nil {
		return nil
	}
	defer c.Close()
	b := make([]byte, min(c.Size(), sniffLen))
	n, _ := c.ReadAt(b, 0)
	if n == 0 {
		return nil
	}
	return b[:n]
}

// walkFiles returns up to n files in the depot's listing order, starting
// after the file at the clean path after ("" for the first), and whether
// more files follow. The order is depth-first, each directory's entries in
// byte order of their names (the store's ReadDir order), so it is stable
// and a cursor stays valid while files are added and removed: files added
// behind the cursor are not listed, files removed ahead of it are not.
func (s *Resources) walkFiles(ctx context.Context, after string, n int) (files []store.Entry, more bool, err error) {
	w := &walker{view: s.rt.View(ctx), n: n}
	if after == "" {
		_, err = w.dir(ctx, depotpath.Root, "")
		return w.out, w.more, err
	}
	for p := after; p != depotpath.Root; {
		parent, name := depotpath.Split(p)
		stop, err := w.dir(ctx, parent, name)
		if err != nil || stop {
			return w.out, w.more, err
		}
		p = parent
	}
	return w.out, w.more, nil
}

// walker collects one page of files.
type walker struct {
	view tool.View
	n    int
	out  []store.Entry
	more bool
}

// dir walks the entries of dir whose names sort after the name after,
// descending into directories. It reports stop when the page is full and
// another file was found. A directory removed meanwhile is skipped.
func (w *walker) dir(ctx context.Context, dir, after string) (stop bool, err error) {
	entries, err := w.view.ReadDir(ctx, dir)
	if errors.Is(err, store.ErrNotExist) || errors.Is(err, store.ErrNotDir) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("list %s: %w", dir, err)
	}
	i := sort.Search(len(entries), func(i int) bool { return depotpath.Base(entries[i].Path) > after })
	for _, e := range entries[i:] {
		if e.IsDir() {
			if stop, err := w.dir(ctx, e.Path, ""); stop || err != nil {
				return stop, err
			}
			continue
		}
		if len(w.out) == w.n {
			w.more = true
			return true, nil
		}
		w.out = append(w.out, e)
	}
	return false, nil
}
