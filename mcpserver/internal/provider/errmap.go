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
	}
	if typ, ok := StoreErrorType(err); ok {
		switch typ {
		case providerNotFound:
			return typ, "Not found: " + tool.Classify(err).Message
		case providerTooLarge:
			return typ, tool.Classify(err).Message
		}
		return typ, "Unexpected error: " + tool.Classify(err).Message
	}
	return providerFailed, "Unexpected error: " + tool.Classify(err).Message
}

// storeTypes is the contract's error type for every error value of package
// store. The contract has four types: what is not a missing file or a size
// limit is a FileProviderError. TestStoreErrorsMapped
// (mcpserver/internal/errmaps) fails when a store error is missing.
var storeTypes = []struct {
	err error
	typ string
}{
	{store.ErrNotExist, providerNotFound},
	{store.ErrLimit, providerTooLarge},
	{store.ErrNotPresent, providerFailed},
	{store.ErrIsDir, providerFailed},
	{store.ErrNotDir, providerFailed},
	{store.ErrConflict, providerFailed},
	{store.ErrNotEmpty, providerFailed},
	{store.ErrExist, providerFailed},
	{store.ErrRevision, providerFailed},
	{store.ErrHashMismatch, providerFailed},
	{store.ErrUpload, providerFailed},
	{store.ErrClosed, providerFailed},
	{store.ErrUnavailable, providerFailed},
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

// Errors of the provider profile, in the contract's words.

func providerNotFoundError(kind string, p providerPath) error {
	return &providerError{providerNotFound, fmt.Sprintf("%s not found: %s", kind, p.show(p.depot)), store.ErrNotExist}
}

func providerNotFile(p providerPath) error {
	return &providerError{providerFailed, "Path is not a file: " + p.show(p.depot), store.ErrIsDir}
}

func providerNotDir(p providerPath) error {
	return &providerError{providerFailed, "Path is not a directory: " + p.show(p.depot), store.ErrNotDir}
}

func providerNotPresent(p providerPath) error {
	return &providerError{providerFailed, "File content has not arrived yet: " + p.show(p.depot) + " was listed but its content was never pushed", store.ErrNotPresent}
}

func providerSizeError(size, limit int64, whose string) error {
	return &providerError{providerTooLarge, fmt.Sprintf("File size %d exceeds %slimit %d", size, whose, limit), args.ErrLimit}
}

// providerStoreError turns an error of the store about p into the
// contract's terms; kind is "File", "Directory" or "Path".
func providerStoreError(err error, kind string, p providerPath) error {
	switch {
	case errors.Is(err, store.ErrNotExist):
		return providerNotFoundError(kind, p)
	case errors.Is(err, store.ErrIsDir):
		return providerNotFile(p)
	case errors.Is(err, store.ErrNotDir):
		return providerNotDir(p)
	case errors.Is(err, store.ErrNotPresent):
		return providerNotPresent(p)
	}
	if _, ok := errors.AsType[*tool.StoreError](err); ok {
		return err
	}
	return &tool.StoreError{Op: "read", Path: p.depot, Err: err}
}
