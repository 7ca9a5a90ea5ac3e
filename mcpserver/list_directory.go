package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

const toolListDirectory = "guide_list_directory"

// maxListDepth bounds how deeply entries may nest.
const maxListDepth = 128

// maxRefusedPaths bounds the refused paths a reply lists.
const maxRefusedPaths = 100

func (s *Server) listDirectoryTool() tool {
	return tool{
		spec:    s.toolSpec(toolListDirectory, "Describe a directory to the depot", writes),
		profile: ProfileGuide,
		paths:   []pathArg{{"path", grant.Write}, {"name", grant.Write}},
		shape:   envelopeShape{},
		run:     s.listDirectory,
	}
}

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
func (s *Server) listDirectory(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	probs := &c.args
	l := &listing{where: map[string]string{}, refused: []string{}, max: s.opts.MaxListEntries}
	if o := c.decode(raw); o != nil {
		l.dir, _ = o.depotPath("path", true)
		if o.has("pattern") {
			l.pattern, _ = o.pattern("pattern")
		}
		entries, ok := o.array("entries", true)
		o.finish()
		if ok && l.dir != "" && probs.ok() {
			if l.dir != depotpath.Root {
				l.decls = append(l.decls, store.Declaration{Path: l.dir, Kind: store.KindDir, Size: -1})
				l.where[l.dir] = "path"
				l.dirs++
			}
			l.walk(entries, l.dir, "entries", 1, probs)
		}
	}
	c.path = l.dir
	if err := probs.err(); err != nil {
		return reply{}, err
	}
	if err := l.checkKinds(); err != nil {
		return reply{}, err
	}
	c.attrs = append(c.attrs, slog.Int("declared", len(l.decls)), slog.Int("refused", len(l.refused)))

	ctx, cancel := s.commitContext(ctx)
	defer cancel()
	var res store.DeclareResult
	var rev uint64
	if len(l.decls) > 0 {
		var err error
		res, err = c.store.Declare(ctx, store.DeclareRequest{Entries: l.decls, Writer: c.who.String(), Source: toolListDirectory})
		if err != nil {
			return reply{}, &storeError{op: "declare", path: l.dir, err: err}
		}
	}
	// DeclareResult carries no revision; the store's current one is at
	// least the listing's, which is what the mount must have applied.
	rev, err := c.store.Revision(ctx)
	if err != nil {
		return reply{}, &storeError{op: "revision", path: l.dir, err: err}
	}
	warnings := s.mountWarnings()
	if len(l.decls) > 0 {
		warnings = append(warnings, s.applied(ctx, c, rev)...)
	}
	data := &listData{
		Path: l.dir, MountPath: s.mountPath(l.dir),
		Declared: len(l.decls), Files: l.files, Directories: l.dirs,
		Created: res.Created, Stale: res.Stale, Unchanged: res.Unchanged,
		Refused: len(l.refused), RefusedPaths: l.refused[:min(len(l.refused), maxRefusedPaths)],
		Revision: rev,
	}
	msg := fmt.Sprintf("Recorded %d entries under %s: %d created, %d stale, %d unchanged.", data.Declared, l.dir, res.Created, res.Stale, res.Unchanged)
	if len(l.refused) > 0 {
		msg = fmt.Sprintf("Partly recorded: %d file(s) refused by pattern %s. ", len(l.refused), quote(l.pattern)) + msg
		warnings = append(warnings, fmt.Sprintf("%d file(s) did not match pattern %s and were not recorded; see refused_paths.", len(l.refused), quote(l.pattern)))
		if len(l.refused) > maxRefusedPaths {
			warnings = append(warnings, fmt.Sprintf("refused_paths lists the first %d of %d refused files.", maxRefusedPaths, len(l.refused)))
		}
	}
	if res.Stale > 0 {
		warnings = append(warnings, fmt.Sprintf("%d file(s) changed since their content was stored; their content was dropped until you send it again (guide_read_file).", res.Stale))
	}
	c.status = "recorded"
	return reply{
		data:     data,
		message:  msg,
		warnings: warnings,
		stats: map[string]any{
			"entries":     l.total,
			"files":       l.files,
			"directories": l.dirs,
			"refused":     len(l.refused),
		},
	}, nil
}

// walk decodes the entries of the directory parent, reporting problems
// under field ("entries", "entries[2].entries").
func (l *listing) walk(entries []json.RawMessage, parent, field string, depth int, probs *problems) {
	if depth > maxListDepth {
		probs.addf(field, "entries nest deeper than %d levels; send deep subtrees in a separate call", maxListDepth)
		return
	}
	for i, raw := range entries {
		if len(probs.list) >= maxProblems {
			return // enough to report; the listing is refused anyway
		}
		l.total++
		if l.total > l.max {
			probs.add(field, limitError("more than %d entries in one listing; send one call per directory", l.max))
			return
		}
		name := field + "[" + strconv.Itoa(i) + "]"
		o := decodeObject(raw, name, name+".", probs)
		if o == nil {
			continue
		}
		l.entry(o, parent, name, depth, probs)
		o.finish()
	}
}

// entry decodes one entry of parent and, for a directory, its children.
func (l *listing) entry(o *object, parent, name string, depth int, probs *problems) {
	before := len(probs.list)
	p, pathOK := l.entryPath(o, parent)
	d := store.Declaration{Path: p, Size: -1}
	if kind, ok := o.str("type", true); ok {
		switch kind {
		case "file":
			d.Kind = store.KindFile
		case "directory":
			d.Kind = store.KindDir
		default:
			probs.addf(o.name("type"), `must be "file" or "directory", got %s`, quote(kind))
		}
	}
	if o.has("size") {
		if size, ok := o.integer("size", false, 0, maxExactInteger); ok {
			d.Size = size
		}
		if d.Kind == store.KindDir {
			probs.addf(o.name("size"), "a directory has no size; give size only for files")
		}
	}
	if o.has("sha256") {
		d.SHA256, _ = o.sha256Hex("sha256", false)
		if d.Kind == store.KindDir {
			probs.addf(o.name("sha256"), "a directory has no content hash; give sha256 only for files")
		}
	}
	d.MTime, _ = o.mtime("mtime")
	d.Mode, _ = o.mode("mode")
	children, hasChildren := []json.RawMessage(nil), o.has("entries")
	if hasChildren {
		children, hasChildren = o.array("entries", false)
		if d.Kind == store.KindFile {
			probs.addf(o.name("entries"), "a file has no entries; use type \"directory\"")
			hasChildren = false
		}
	}
	if !pathOK || d.Kind == 0 || len(probs.list) > before {
		return
	}
	if first, dup := l.where[p]; dup {
		probs.addf(o.name("name"), "%s is listed twice (also by %s)", p, first)
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
func (l *listing) entryPath(o *object, parent string) (string, bool) {
	name, ok := o.str("name", true)
	if !ok {
		return "", false
	}
	field := o.name("name")
	if name == "" {
		o.probs.addf(field, "empty name")
		return "", false
	}
	if strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		o.probs.addf(field, "%s is absolute; give a name relative to %s", quote(name), parent)
		return "", false
	}
	if len(name) > 4*depotpath.MaxPathBytes {
		o.probs.add(field, fmt.Errorf("%w: name of %d bytes exceeds the limit of %d", depotpath.ErrInvalid, len(name), depotpath.MaxPathBytes))
		return "", false
	}
	p, err := depotpath.Clean(parent + "/" + name)
	if err != nil {
		o.probs.add(field, err)
		return "", false
	}
	if p == parent || !depotpath.Within(p, parent) {
		o.probs.add(field, fmt.Errorf("%w: %s resolves to %s, not below %s", errOutside, quote(name), p, parent))
		return "", false
	}
	o.probs.addPath(field, p)
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
