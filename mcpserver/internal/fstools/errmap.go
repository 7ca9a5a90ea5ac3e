package fstools

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/policy"
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
	// fsConflict is beyond the contract: a write whose if_revision or
	// if_absent no longer holds (another writer came first). The contract
	// has no code for a lost race, and an agent must tell it apart from
	// a failure to retry unchanged.
	fsConflict = "conflict"
	// fsIntegrity is beyond the contract too: stored content that failed
	// its integrity check (store.ErrCorrupt). internal_error invites a
	// retry, and this one fails the same way until the operator restores
	// the content.
	fsIntegrity = "integrity_error"
)

// fsError is a failure an fs tool words itself. path is the depot path it
// concerns ("" for the call's path), err the sentinel that classifies it
// for the log, details further fields of the error's details (a limit, a
// retry hint).
type fsError struct {
	code    string
	msg     string
	path    string
	err     error
	details map[string]any
}

func (e *fsError) Error() string { return e.msg }
func (e *fsError) Unwrap() error { return e.err }

// fsFailure returns the code, message, relative path and further details
// of a failed call.
func fsFailure(err error) (code, msg, path string, details map[string]any) {
	var fe *fsError
	if errors.As(err, &fe) {
		if fe.path != "" {
			path = relPath(fe.path)
		}
		return fe.code, fe.msg, path, fe.details
	}
	if conflict, ok := errors.AsType[*tool.ConflictError](err); ok {
		return fsConflict, "The file changed since the revision you read, so nothing was stored: " + conflict.Error(), conflict.Path,
			map[string]any{"current": conflict.Current}
	}
	if rate, ok := errors.AsType[*tool.RateError](err); ok {
		// The contract has no code for a refusal to be retried later; the
		// caller is refused, as for a permission, with the wait.
		return fsPermission, fmt.Sprintf("Rate limited: retry after %d seconds (%s)", rate.Retry, rate.Error()), "", map[string]any{"retry_after": rate.Retry}
	}
	f := tool.Classify(err)
	switch {
	case errors.Is(err, depotpath.ErrEscapes):
		return fsPathInvalid, "Path is outside of the allowed root directory: " + f.Message, "", nil
	case errors.Is(err, depotpath.ErrInvalid):
		return fsPathInvalid, "Invalid path: " + f.Message, "", nil
	case errors.Is(err, fs.ErrPermission):
		return fsPermission, "Permission denied to access the specified path: " + err.Error(), "", nil
	case errors.Is(err, policy.ErrDenied):
		// The caller's grants or the server's policy refuse the call: the
		// message names the rule (f.Message); depotfs did not fail.
		return fsPermission, "Permission denied: " + f.Message, "", nil
	case args.IsError(err), errors.Is(err, args.ErrInvalid), errors.Is(err, args.ErrLimit):
		return fsInvalid, f.Message, "", nil
	}
	if se, ok := errors.AsType[*tool.StoreError](err); ok {
		if errors.As(fsStoreError(se.Err, se.Path), &fe) {
			return fe.code, fe.msg, relPath(fe.path), fe.details
		}
	}
	return fsInternal, f.Message, "", nil
}

// storeCodes is the contract's code for every error value of package
// store, with the message's format (%s: the path, relative). The contract
// has no code for a failure of depotfs itself: internal_error.
// TestStoreErrorsMapped (mcpserver/internal/errmaps) fails when a store
// error is missing.
var storeCodes = []struct {
	err  error
	code string
	msg  string
}{
	{store.ErrNotExist, fsNotFound, "The specified path does not exist: %s; list its directory to see what is there"},
	{store.ErrNotPresent, fsNotFound, "The file's content has not arrived yet (it was listed, never pushed): %s; the agent that listed it sends it with guide_read_file when guide_pending_requests asks for it: read it again later"},
	{store.ErrExist, fsExists, "The path already exists and overwrite is not enabled: %s"},
	{store.ErrIsDir, fsInvalid, "The path is a directory, and this call takes a file: %s; list shows a directory's entries"},
	{store.ErrNotDir, fsInvalid, "The path is not a directory, and this call takes one: %s; read or info describe a file"},
	{store.ErrConflict, fsInvalid, "A path is either a file or a directory, never both: %s or one of its parents is a file where a directory is needed, or the reverse"},
	{store.ErrNotEmpty, fsInvalid, "The directory is not empty; set recursive to delete it with everything in it: %s"},
	{store.ErrLimit, fsInvalid, "The file does not fit the depot's size limits, so nothing was stored: %s"},
	{store.ErrHashMismatch, fsInvalid, "The content does not match its hash, so nothing was stored: %s"},
	{store.ErrUpload, fsInvalid, "The content does not fit its upload, so nothing was stored: %s"},
	{store.ErrRevision, fsInternal, "The path changed while the call ran; call again: %s"},
	{store.ErrCorrupt, fsIntegrity, "The stored content of %s failed its integrity check (a sealed chunk was changed or damaged on disk); retrying will not help: the depotfs operator must restore it from a backup"},
	{store.ErrClosed, fsInternal, "depotfs is shutting down; call again once it is back: %s"},
	{store.ErrOutcomeUnknown, fsInternal, "Whether the change was applied is unknown: the depot's cluster did not confirm it in time, and it may still be applied when the cluster recovers; read the path before repeating it: %s"},
	{store.ErrUnavailable, fsInternal, "The depot's cluster has no quorum, so no write can commit now and this one changed nothing; call again in a little while: %s"},
}

// StoreErrorCode returns the contract's error code for err, one of the
// error values of package store, and false when it has no explicit
// mapping.
func StoreErrorCode(err error) (string, bool) {
	for _, m := range storeCodes {
		if errors.Is(err, m.err) {
			return m.code, true
		}
	}
	return fsInternal, false
}

// fsStoreError turns an error of the store about depot path p into the
// contract's terms.
func fsStoreError(err error, p string) error {
	if errors.Is(err, args.ErrLimit) || errors.Is(err, args.ErrInvalid) {
		return err // already worded for the agent
	}
	for _, m := range storeCodes {
		if errors.Is(err, m.err) {
			return &fsError{code: m.code, msg: fmt.Sprintf(m.msg, relPath(p)), path: p, err: err}
		}
	}
	if _, ok := errors.AsType[*tool.StoreError](err); ok {
		return err
	}
	return &tool.StoreError{Op: "fs", Path: p, Err: err}
}
