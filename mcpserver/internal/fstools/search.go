package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/search"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// defaultSearchFileBytes is search's max_file_size when the call gives
// none: at most the server's read limit.
func (s *tools) defaultSearchFileBytes() int64 {
	return min(search.DefaultMaxFileSize, s.opts.MaxReadBytes)
}

// fsSearchReply is the reply of search.
type fsSearchReply struct {
	TotalMatches  int           `json:"total_matches"`
	FilesSearched int           `json:"files_searched"`
	FilesMatched  int           `json:"files_matched"`
	Matches       []fsFileMatch `json:"matches"`
	// Beyond the contract: whether max_results stopped the search, and
	// the files not searched, by reason.
	Truncated    bool           `json:"truncated"`
	FilesSkipped fsSkippedFiles `json:"files_skipped"`
}

type fsSkippedFiles struct {
	Binary   int `json:"binary"`
	TooLarge int `json:"too_large"`
	Absent   int `json:"absent"`
}

type fsFileMatch struct {
	File    string        `json:"file"`
	Matches []fsLineMatch `json:"matches"`
}

type fsLineMatch struct {
	LineNumber int             `json:"line_number"`
	Line       string          `json:"line"`
	Context    []fsContextLine `json:"context"`
}

type fsContextLine struct {
	LineNumber int    `json:"line_number"`
	Content    string `json:"content"`
}

// fsSearch is search: grep over the depot, on every CPU.
func (s *tools) fsSearch(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	q := search.Query{Recursive: true}
	var files args.Glob
	err := args.Parse(raw, c.OwnArgs(), func(o *args.Object) {
		q.Root = s.pathArg(o, "root_path")
		pattern, hasPattern := o.Str("pattern", true)
		regex := o.Bool("regex", false)
		caseSensitive := o.Bool("case_sensitive", false)
		files = o.Glob("file_pattern")
		q.Recursive = o.Bool("recursive", true)
		q.MaxResults = int(o.Count("max_results", search.DefaultMaxResults))
		q.MaxFileSize = o.Count("max_file_size", s.defaultSearchFileBytes())
		q.ContextLines = int(o.Count("context_lines", 0))
		if hasPattern {
			p, err := search.Compile(pattern, regex, caseSensitive)
			if err != nil {
				o.Problems().Addf("pattern", "%v", err)
			}
			q.Pattern = p
		}
	})
	c.Path = q.Root
	if err != nil {
		return tool.Reply{}, err
	}
	q.Files = files.Match
	res, err := search.Run(ctx, c.Store(), q)
	if err != nil {
		if errors.Is(err, store.ErrNotExist) || errors.Is(err, store.ErrNotDir) {
			return tool.Reply{}, fsStoreError(err, q.Root)
		}
		return tool.Reply{}, &tool.StoreError{Op: "search", Path: q.Root, Err: err}
	}
	c.Attrs = append(c.Attrs, slog.Int("files_searched", res.FilesSearched), slog.Int("results", res.TotalMatches))
	out := fsSearchReply{
		TotalMatches:  res.TotalMatches,
		FilesSearched: res.FilesSearched,
		FilesMatched:  res.FilesMatched,
		Matches:       make([]fsFileMatch, len(res.Files)),
		Truncated:     res.Truncated,
		FilesSkipped:  fsSkippedFiles{res.SkippedBinary, res.SkippedLarge, res.SkippedAbsent},
	}
	for i, f := range res.Files {
		fm := fsFileMatch{File: relPath(f.Path), Matches: make([]fsLineMatch, len(f.Matches))}
		for j, m := range f.Matches {
			lm := fsLineMatch{LineNumber: m.Line, Line: m.Text, Context: make([]fsContextLine, len(m.Context))}
			for k, l := range m.Context {
				lm.Context[k] = fsContextLine{LineNumber: l.Number, Content: l.Text}
			}
			fm.Matches[j] = lm
		}
		out.Matches[i] = fm
	}
	return tool.Reply{Data: out}, nil
}
