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
	Source      fsPath `json:"source"`
	Destination fsPath `json:"destination"`
	Overwrite   bool   `json:"overwrite"`
	from, to    string // the paths of Source and Destination
}

// fsCopyArgs are the arguments of copy.
type fsCopyArgs struct {
	fsTransferArgs
	Recursive bool `json:"recursive"`
}

// decodeTransfer reads the arguments of copy (isCopy) or move.
func (s *tools) decodeTransfer(c *tool.Call, raw json.RawMessage, isCopy bool) (fsCopyArgs, error) {
	a := fsCopyArgs{fsTransferArgs: fsTransferArgs{Source: s.path(), Destination: s.path()}, Recursive: true}
	var dst any = &a.fsTransferArgs
	if isCopy {
		dst = &a
	}
	err := args.Fill(raw, c.OwnArgs(), dst, func(o *args.Object) {
		a.from, a.to = a.Source.p, a.Destination.p
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
func (s *tools) transferError(err error, a fsCopyArgs) error {
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
