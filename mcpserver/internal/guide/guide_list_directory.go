package guide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolListDirectory = "guide_list_directory"

// maxListDepth bounds how deeply entries may nest.
const maxListDepth = 128

// maxRefusedPaths bounds the refused paths a reply lists.
const maxRefusedPaths = 100

// listing collects the declarations of one guide_list_directory call.
type listing struct {
	dir     string
	pattern string
	decls   []store.Declaration
	where   map[string]string // declared path -> the field that declared it
	refused []string
	files   int
	dirs    int
	total   int // entries seen, refused ones included
	max     int
}

// listData is the reply data of guide_list_directory.
type listData struct {
	Path         string   `json:"path"`
	MountPath    string   `json:"mount_path,omitempty"`
	Declared     int      `json:"declared"`
	Files        int      `json:"files"`
	Directories  int      `json:"directories"`
	Created      int      `json:"created"`
	Stale        int      `json:"stale"`
	Unchanged    int      `json:"unchanged"`
	Refused      int      `json:"refused"`
	RefusedPaths []string `json:"refused_paths"`
	Revision     uint64   `json:"revision"`
}

// listDirectory records a directory listing with store.Declare.
func (s *tools) listDirectory(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	probs := c.Args()
	l := &listing{where: map[string]string{}, refused: []string{}, max: s.opts.MaxListEntries}
	if o := c.Decode(raw); o != nil {
		l.dir, _ = o.DepotPath("path", true)
		l.pattern, _ = o.Pattern("pattern")
		entries, ok := o.Array("entries", true)
		o.Finish()
		if ok && l.dir != "" && probs.OK() {
			if l.dir != depotpath.Root {
				l.decls = append(l.decls, store.Declaration{Path: l.dir, Kind: store.KindDir, Size: -1})
				l.where[l.dir] = "path"
				l.dirs++
			}
			l.walk(entries, l.dir, "entries", 1, probs)
		}
	}
	c.Path = l.dir
	if err := probs.Err(); err != nil {
		return tool.Reply{}, err
	}
	if err := l.checkKinds(); err != nil {
		return tool.Reply{}, err
	}
	c.Attrs = append(c.Attrs, slog.Int("declared", len(l.decls)), slog.Int("refused", len(l.refused)))

	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	var res store.DeclareResult
	var err error
	if len(l.decls) > 0 {
		if res, err = c.Store().Declare(ctx, store.DeclareRequest{Entries: l.decls, Writer: c.Who().String(), Source: toolListDirectory}); err != nil {
			return tool.Reply{}, &tool.StoreError{Op: "declare", Path: l.dir, Err: err}
		}
	}
	// DeclareResult carries no revision; the store's current one is at
	// least the listing's, which is what the mount must have applied.
	rev, err := c.Store().Revision(ctx)
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "revision", Path: l.dir, Err: err}
	}
	warnings := s.opts.MountWarnings()
	if len(l.decls) > 0 {
		warnings = append(warnings, s.opts.WaitApplied(ctx, c, rev)...)
	}
	data := &listData{
		Path: l.dir, MountPath: s.opts.MountPath(l.dir),
		Declared: len(l.decls), Files: l.files, Directories: l.dirs,
		Created: res.Created, Stale: res.Stale, Unchanged: res.Unchanged,
		Refused: len(l.refused), RefusedPaths: l.refused[:min(len(l.refused), maxRefusedPaths)],
		Revision: rev,
	}
	msg := fmt.Sprintf("Recorded %d entries under %s: %d created, %d stale, %d unchanged.", data.Declared, l.dir, res.Created, res.Stale, res.Unchanged)
	if len(l.refused) > 0 {
		msg = fmt.Sprintf("Partly recorded: %d file(s) refused by pattern %s. ", len(l.refused), args.Quote(l.pattern)) + msg
		warnings = append(warnings, fmt.Sprintf("%d file(s) did not match pattern %s and were not recorded; see refused_paths.", len(l.refused), args.Quote(l.pattern)))
		if len(l.refused) > maxRefusedPaths {
			warnings = append(warnings, fmt.Sprintf("refused_paths lists the first %d of %d refused files.", maxRefusedPaths, len(l.refused)))
		}
	}
	if res.Stale > 0 {
		warnings = append(warnings, fmt.Sprintf("%d file(s) changed since their content was stored; their content was dropped until you send it again (guide_read_file).", res.Stale))
	}
	c.Status = "recorded"
	return tool.Reply{
		Data:     data,
		Message:  msg,
		Warnings: warnings,
		Stats: map[string]any{
			"entries":     l.total,
			"files":       l.files,
			"directories": l.dirs,
			"refused":     len(l.refused),
		},
	}, nil
}

// walk decodes the entries of the directory parent, reporting problems
// under field ("entries", "entries[2].entries").
func (l *listing) walk(entries []json.RawMessage, parent, field string, depth int, probs *args.Problems) {
	if depth > maxListDepth {
		probs.Addf(field, "entries nest deeper than %d levels; send deep subtrees in a separate call", maxListDepth)
		return
	}
	for i, raw := range entries {
		if probs.Full() {
			return // enough to report; the listing is refused anyway
		}
		l.total++
		if l.total > l.max {
			probs.Add(field, args.LimitError("more than %d entries in one listing; send one call per directory", l.max))
			return
		}
		name := field + "[" + strconv.Itoa(i) + "]"
		o := args.Decode(raw, name, name+".", probs)
		if o == nil {
			continue
		}
		l.entry(o, parent, name, depth, probs)
		o.Finish()
	}
}

// entry decodes one entry of parent and, for a directory, its children.
func (l *listing) entry(o *args.Object, parent, name string, depth int, probs *args.Problems) {
	before := probs.Len()
	p, pathOK := l.entryPath(o, parent)
	d := store.Declaration{Path: p}
	if kind, ok := o.Str("type", true); ok {
		switch kind {
		case "file":
			d.Kind = store.KindFile
		case "directory":
			d.Kind = store.KindDir
		default:
			probs.Addf(o.Name("type"), `must be "file" or "directory", got %s`, args.Quote(kind))
		}
	}
	d.Size = o.Count("size", -1)
	if o.Has("size") && d.Kind == store.KindDir {
		probs.Addf(o.Name("size"), "a directory has no size; give size only for files")
	}
	d.SHA256, _ = o.SHA256("sha256", false)
	if o.Has("sha256") && d.Kind == store.KindDir {
		probs.Addf(o.Name("sha256"), "a directory has no content hash; give sha256 only for files")
	}
	d.MTime, _ = o.MTime("mtime")
	d.Mode, _ = o.Mode("mode")
	children, hasChildren := o.Array("entries", false)
	if o.Has("entries") && d.Kind == store.KindFile {
		probs.Addf(o.Name("entries"), "a file has no entries; use type \"directory\"")
		hasChildren = false
	}
	if !pathOK || d.Kind == 0 || probs.Len() > before {
		return
	}
	if first, dup := l.where[p]; dup {
		probs.Addf(o.Name("name"), "%s is listed twice (also by %s)", p, first)
		return
	}
	l.where[p] = name
	if d.Kind == store.KindFile && l.pattern != "" {
		if ok, _ := path.Match(l.pattern, depotpath.Base(p)); !ok {
			l.refused = append(l.refused, p)
			return
		}
	}
	l.decls = append(l.decls, d)
	if d.Kind == store.KindFile {
		l.files++
		return
	}
	l.dirs++
	if hasChildren {
		l.walk(children, p, name+".entries", depth+1, probs)
	}
}

// entryPath resolves an entry's name against its parent directory. The name
// may be a relative path, but it must stay below the parent.
func (l *listing) entryPath(o *args.Object, parent string) (string, bool) {
	name, ok := o.Str("name", true)
	if !ok {
		return "", false
	}
	field := o.Name("name")
	if name == "" {
		o.Problems().Addf(field, "empty name")
		return "", false
	}
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		o.Problems().Addf(field, "%s is absolute; give a name relative to %s", args.Quote(name), parent)
		return "", false
	}
	if len(name) > 4*depotpath.MaxPathBytes {
		o.Problems().Add(field, fmt.Errorf("%w: name of %d bytes exceeds the limit of %d", depotpath.ErrInvalid, len(name), depotpath.MaxPathBytes))
		return "", false
	}
	p, err := depotpath.Clean(parent + "/" + name)
	if err != nil {
		o.Problems().Add(field, err)
		return "", false
	}
	if p == parent || !depotpath.Within(p, parent) {
		o.Problems().Add(field, fmt.Errorf("%w: %s resolves to %s, not below %s", args.ErrOutside, args.Quote(name), p, parent))
		return "", false
	}
	o.Problems().AddPath(field, p)
	return p, true
}

// checkKinds refuses a listing that makes one path both a file and a
// directory: a file listed as the parent of another entry.
func (l *listing) checkKinds() error {
	files := map[string]bool{}
	for _, d := range l.decls {
		if d.Kind == store.KindFile {
			files[d.Path] = true
		}
	}
	for _, d := range l.decls {
		for _, parent := range depotpath.Parents(d.Path) {
			if files[parent] {
				return fmt.Errorf("%w: %s is listed as a file and as the parent of %s", store.ErrConflict, parent, d.Path)
			}
		}
	}
	return nil
}
