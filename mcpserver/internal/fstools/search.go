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
	a := struct {
		RootPath      fsPath    `json:"root_path"`
		Pattern       *string   `json:"pattern"` // nil: refused
		Regex         bool      `json:"regex"`
		FilePattern   args.Glob `json:"file_pattern"`
		Recursive     bool      `json:"recursive"`
		CaseSensitive bool      `json:"case_sensitive"`
		MaxResults    int       `json:"max_results"`
		MaxFileSize   int64     `json:"max_file_size"`
		ContextLines  int       `json:"context_lines"`
	}{RootPath: s.path()}
	var q search.Query
	err := args.Fill(raw, c.OwnArgs(), &a, func(o *args.Object) {
		if a.Pattern == nil {
			return
		}
		p, err := search.Compile(*a.Pattern, a.Regex, a.CaseSensitive)
		if err != nil {
			o.Problems().Addf("pattern", "%v", err)
		}
		q.Pattern = p
	})
	q.Root, q.Recursive, q.MaxResults, q.MaxFileSize, q.ContextLines = a.RootPath.p, a.Recursive, a.MaxResults, a.MaxFileSize, a.ContextLines
	c.Path = q.Root
	if err != nil {
		return tool.Reply{}, err
	}
	q.Files = a.FilePattern.Match
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
