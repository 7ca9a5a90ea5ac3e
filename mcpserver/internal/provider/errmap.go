package provider

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// The error types of the provider contract.
const (
	providerNotFound   = "FileNotFoundError"
	providerPermission = "PermissionError"
	providerTooLarge   = "FileSizeLimitExceededError"
	providerFailed     = "FileProviderError"
)

// providerError is a failure a provider tool words itself, in the
// contract's terms ("File not found: /x"). err is the sentinel that
// classifies it for the log.
type providerError struct {
	typ string
	msg string
	err error
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() error { return e.err }

// providerFailure returns the error type and message of a failed call.
func providerFailure(err error) (typ, msg string) {
	var pe *providerError
	var rate *tool.RateError
	var de *depotpath.Error
	switch {
	case errors.As(err, &pe):
		return pe.typ, pe.msg
	case errors.As(err, &rate):
		// The contract has no type for a refusal to be retried later; the
		// caller is refused, as for a permission, with the wait.
		return providerPermission, fmt.Sprintf("Rate limited: retry after %d seconds (%s)", rate.Retry, rate.Error())
	case errors.Is(err, depotpath.ErrEscapes) && errors.As(err, &de):
		return providerPermission, fmt.Sprintf("Permission denied: %q leaves the depot", de.Path)
	case errors.Is(err, fs.ErrPermission):
		return providerPermission, "Permission denied: " + tool.Classify(err).Message
	case args.IsError(err):
		return providerFailed, "Invalid arguments: " + strings.TrimPrefix(tool.Classify(err).Message, "invalid arguments: ")
	case errors.Is(err, args.ErrLimit):
		return providerTooLarge, tool.Classify(err).Message
	case errors.Is(err, store.ErrCorrupt):
		// Not "Unexpected error": the message says that a retry will not
		// help, which the contract has no other field for.
		return providerFailed, "Integrity error: " + tool.Classify(err).Message
	}
	switch typ, _ := StoreErrorType(err); typ {
	case providerNotFound:
		return typ, "Not found: " + tool.Classify(err).Message
	case providerTooLarge:
		return typ, tool.Classify(err).Message
	default: // providerFailed, also for an error no table maps
		return typ, "Unexpected error: " + tool.Classify(err).Message
	}
}

// storeTypes is the contract's error type for every error value of package
// store, and for those a tool words about a path, the message: %[1]s is
// the kind of entry wanted ("File", "Directory", "Path"), %[2]s the path as
// the caller named it. The contract has four types: what is not a missing
// file or a size limit is a FileProviderError. TestStoreErrorsMapped
// (mcpserver/internal/errmaps) fails when a store error is missing.
var storeTypes = []struct {
	err error
	typ string
	msg string
}{
	{store.ErrNotExist, providerNotFound, "%s not found: %s; list_directory or find_files show what exists"},
	{store.ErrLimit, providerTooLarge, ""},
	{store.ErrNotPresent, providerFailed, "File content has not arrived yet: %[2]s was listed but its content was never pushed; the agent that listed it sends it with guide_read_file when guide_pending_requests asks for it: read it again later"},
	{store.ErrIsDir, providerFailed, "Path is not a file: %[2]s; list_directory lists a directory"},
	{store.ErrNotDir, providerFailed, "Path is not a directory: %[2]s; read_file or get_file_stats read a file"},
	{store.ErrConflict, providerFailed, ""},
	{store.ErrNotEmpty, providerFailed, ""},
	{store.ErrExist, providerFailed, ""},
	{store.ErrRevision, providerFailed, ""},
	{store.ErrHashMismatch, providerFailed, ""},
	{store.ErrUpload, providerFailed, ""},
	{store.ErrCorrupt, providerFailed, ""},
	{store.ErrClosed, providerFailed, ""},
	{store.ErrOutcomeUnknown, providerFailed, ""},
	{store.ErrUnavailable, providerFailed, ""},
}

// StoreErrorType returns the contract's error_type for err, one of the
// error values of package store, and false when it has no explicit
// mapping.
func StoreErrorType(err error) (string, bool) {
	for _, m := range storeTypes {
		if errors.Is(err, m.err) {
			return m.typ, true
		}
	}
	return providerFailed, false
}

// providerSizeError refuses a file of size bytes over limit, the caller's
// max_size (whose "") or the server's (whose "the server's ").
func providerSizeError(size, limit int64, whose string) error {
	return &providerError{providerTooLarge, fmt.Sprintf("File size %d exceeds %slimit %d", size, whose, limit), args.ErrLimit}
}

// providerStoreError turns an error of the store about p into the
// contract's terms; kind is "File", "Directory" or "Path".
func providerStoreError(err error, kind string, p providerPath) error {
	for _, m := range storeTypes {
		if m.msg != "" && errors.Is(err, m.err) {
			return &providerError{m.typ, fmt.Sprintf(m.msg, kind, p.show(p.depot)), m.err}
		}
	}
	if _, ok := errors.AsType[*tool.StoreError](err); ok {
		return err
	}
	return &tool.StoreError{Op: "read", Path: p.depot, Err: err}
}
