package fstools

import (
	"errors"
	"io/fs"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// The error codes of the fs contract, and internal_error for a failure of
// depotfs itself (the contract has no code for it).
const (
	fsPathInvalid = "path_validation_error"
	fsPermission  = "permission_denied"
	fsNotFound    = "not_found"
	fsExists      = "already_exists"
	fsInvalid     = "invalid_parameters"
	fsInternal    = "internal_error"
)

// fsError is a failure an fs tool words itself. path is the depot path it
// concerns ("" for the call's path), err the sentinel that classifies it
// for the log.
type fsError struct {
	code string
	msg  string
	path string
	err  error
}

func (e *fsError) Error() string { return e.msg }
func (e *fsError) Unwrap() error { return e.err }

// fsFailure returns the code, message and relative path of a failed call.
func fsFailure(err error) (code, msg, path string) {
	var fe *fsError
	if errors.As(err, &fe) {
		if fe.path != "" {
			path = relPath(fe.path)
		}
		return fe.code, fe.msg, path
	}
	f := tool.Classify(err)
	switch {
	case errors.Is(err, depotpath.ErrEscapes):
		return fsPathInvalid, "Path is outside of the allowed root directory: " + f.Message, ""
	case errors.Is(err, depotpath.ErrInvalid):
		return fsPathInvalid, "Invalid path: " + f.Message, ""
	case errors.Is(err, fs.ErrPermission):
		return fsPermission, "Permission denied to access the specified path: " + err.Error(), ""
	case args.IsError(err), errors.Is(err, args.ErrInvalid), errors.Is(err, args.ErrLimit):
		return fsInvalid, f.Message, ""
	case errors.Is(err, store.ErrNotExist), errors.Is(err, store.ErrNotPresent):
		return fsNotFound, "The specified path does not exist", ""
	case errors.Is(err, store.ErrExist):
		return fsExists, "The path already exists", ""
	}
	return fsInternal, f.Message, ""
}

// fsStoreError turns an error of the store about depot path p into the
// contract's terms.
func fsStoreError(err error, p string) error {
	rel := relPath(p)
	switch {
	case errors.Is(err, args.ErrLimit), errors.Is(err, args.ErrInvalid):
		return err // already worded for the agent
	case errors.Is(err, store.ErrNotExist):
		return &fsError{fsNotFound, "The specified path does not exist: " + rel, p, err}
	case errors.Is(err, store.ErrNotPresent):
		return &fsError{fsNotFound, "The file's content has not arrived yet (it was listed, never pushed): " + rel, p, err}
	case errors.Is(err, store.ErrExist):
		return &fsError{fsExists, "The path already exists and overwrite is not enabled: " + rel, p, err}
	case errors.Is(err, store.ErrIsDir):
		return &fsError{fsInvalid, "The path is a directory: " + rel, p, err}
	case errors.Is(err, store.ErrNotDir):
		return &fsError{fsInvalid, "The path is not a directory: " + rel, p, err}
	case errors.Is(err, store.ErrConflict):
		return &fsError{fsInvalid, "A path is either a file or a directory, never both: " + rel + " or one of its parents is a file where a directory is needed, or the reverse", p, err}
	case errors.Is(err, store.ErrNotEmpty):
		return &fsError{fsInvalid, "The directory is not empty; set recursive to delete it with everything in it: " + rel, p, err}
	case errors.Is(err, store.ErrRevision):
		return &fsError{fsInternal, "The path changed while the call ran; call again: " + rel, p, err}
	}
	var se *tool.StoreError
	if errors.As(err, &se) {
		return err
	}
	return &tool.StoreError{Op: "fs", Path: p, Err: err}
}
