package fstools

import (
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// fsCopyReply is the reply of copy and move.
type fsCopyReply struct {
	Success     bool   `json:"success"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	// BytesCopied (copy only) is the size of the files now readable at the
	// destination; the depot shares their content with the source, so
	// none of it was actually duplicated.
	BytesCopied *int64 `json:"bytes_copied,omitempty"`
	// Beyond the contract: entries written, and where programs on the
	// host read the destination.
	Entries   int      `json:"entries"`
	MountPath string   `json:"mount_path,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// fsTransferArgs are the arguments of copy and move.
type fsTransferArgs struct {
	from, to  string
	overwrite bool
	recursive bool // copy only
}

func (s *tools) decodeTransfer(c *tool.Call, raw json.RawMessage, isCopy bool) (fsTransferArgs, error) {
	a := fsTransferArgs{recursive: true}
	err := args.Parse(raw, c.OwnArgs(), func(o *args.Object) {
		a.from = s.pathArg(o, "source")
		a.to = s.pathArg(o, "destination")
		a.overwrite = o.Bool("overwrite", false)
		if isCopy {
			a.recursive = o.Bool("recursive", true)
		}
		if a.from == depotpath.Root || a.to == depotpath.Root {
			o.Problems().Addf("source", "the depot root cannot be copied, moved or replaced")
		} else if a.from != "" && a.to != "" && depotpath.Within(a.to, a.from) {
			o.Problems().Addf("destination", "%s lies inside the source %s (or is the source)", relPath(a.to), relPath(a.from))
		}
	})
	return a, err
}

// transferError words a refused copy or move: the store names the path
// concerned in its *fs.PathError.
func (s *tools) transferError(err error, a fsTransferArgs) error {
	p := a.to
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == a.from {
		p = a.from
	}
	switch {
	case errors.Is(err, store.ErrExist) && p == a.to:
		return &fsError{code: fsExists, msg: "The destination already exists and overwrite is not enabled (a directory is never replaced): " + relPath(a.to), path: a.to, err: err}
	case errors.Is(err, store.ErrConflict) && p == a.to:
		return &fsError{code: fsExists, msg: "The destination is a directory, or lies below a file: " + relPath(a.to), path: a.to, err: err}
	case errors.Is(err, fs.ErrInvalid):
		return &fsError{code: fsInvalid, msg: "The destination lies inside the source, or is the source: " + relPath(a.to), path: a.to, err: args.ErrInvalid}
	}
	return fsStoreError(err, p)
}
