package tool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/store"
)

// ErrorType says what kind of failure a tool reply reports. Agents branch on
// it: a validation error is fixed by changing the arguments, a conflict by
// choosing another path, a system error by retrying later. ErrorType is a
// string and safe to share.
type ErrorType string

// The error types of the envelope.
const (
	// ErrorValidation: an argument is missing, has the wrong JSON type or
	// format, or the content does not match its declared hash.
	ErrorValidation ErrorType = "validation"
	// ErrorSecurity: a path tries to leave the depot (or the listed
	// directory), or the caller's grants or the server's policy do not
	// allow the call; the message names the rule.
	ErrorSecurity ErrorType = "security"
	// ErrorNotFound: the call refers to an entry that does not exist.
	ErrorNotFound ErrorType = "not_found"
	// ErrorConflict: the call would make a path both a file and a
	// directory, or lost a race with another writer.
	ErrorConflict ErrorType = "conflict"
	// ErrorLimit: the call exceeds a configured size or count limit.
	ErrorLimit ErrorType = "limit"
	// ErrorRateLimited: the caller sent too many calls or bytes; retry
	// after Failure.RetryAfter seconds.
	ErrorRateLimited ErrorType = "rate_limited"
	// ErrorSystem: depotfs failed internally; the details are in the
	// operator's log, never in the reply.
	ErrorSystem ErrorType = "system"
)

// StoreError wraps an error returned by the store. Its text may carry
// details that must not reach an agent, so Classify replies with a fixed
// message chosen by the sentinel it wraps.
type StoreError struct {
	Op   string // "put", "put chunk", "declare", "revision"
	Path string // the depot path concerned
	Err  error
}

func (e *StoreError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *StoreError) Unwrap() error { return e.Err }

// failure is a Failure without a retry hint.
func failure(t ErrorType, msg, instruction string) Failure {
	return Failure{Type: t, Message: msg, Instruction: instruction}
}

// Classify turns the error of a failed call into the envelope's error
// object. It is the one place where Go errors become error types; handlers
// return ordinary wrapped errors.
func Classify(err error) Failure {
	if rate, ok := errors.AsType[*RateError](err); ok {
		return Failure{Type: ErrorRateLimited, Message: rate.Error(), RetryAfter: rate.Retry,
			Instruction: fmt.Sprintf("Wait %d second(s) (retry_after), then repeat the call unchanged; it is safe to repeat. Send calls at a steadier pace, or fewer bytes per second, to stay within the limit. Nothing was stored.", rate.Retry)}
	}
	if full, ok := errors.AsType[*DiskFullError](err); ok {
		return failure(ErrorDiskFull, full.Error(),
			"The server's disk is nearly full: this write was refused before anything was stored, and reads still work. Ask the operator to free space (or raise it), then send the call again unchanged.")
	}
	if ref, ok := errors.AsType[*Refusal](err); ok {
		return failure(ref.Type, ref.Message, ref.Instruction)
	}
	if _, ok := errors.AsType[*auditError](err); ok {
		return failure(ErrorSystem, "depotfs cannot write its audit log, so it refuses calls",
			"Tell the user that the depotfs server cannot write its audit log and refuses calls until its operator fixes it; then call again (the call is safe to repeat).")
	}
	if conflict, ok := errors.AsType[*ConflictError](err); ok {
		f := failure(ErrorConflict, conflict.Error(),
			"Another writer changed this path since you read it (error.current has its revision and sha256 now): read it again, apply your change to what you read, and call again with if_revision set to the revision you read. Nothing was stored.")
		cur := conflict.Current
		f.Current = &cur
		return f
	}
	if denied, ok := errors.AsType[*policy.Denied](err); ok {
		return failure(ErrorSecurity, denied.Rule,
			"Your credentials do not allow this call: the message names the rule and lists your grants. Use a tool and path your grants cover, or ask the depotfs operator for a grant; repeating the call will not help. Nothing was stored.")
	}
	msg := err.Error()
	if se, ok := errors.AsType[*StoreError](err); ok {
		msg = storeMessage(se)
	} else if errors.Is(err, store.ErrCorrupt) {
		msg = store.CorruptMessage("")
	}
	switch {
	case errors.Is(err, depotpath.ErrEscapes):
		return failure(ErrorSecurity, msg,
			"Send a path inside the depot: a path is taken relative to the depot root '/', and '..' may not climb above it (or, in a listing, above the listed directory). Nothing was stored; fix the path and call again.")
	case errors.Is(err, args.ErrLimit):
		return failure(ErrorLimit, msg,
			"Make the call smaller: send a large file with guide_read_file in chunks (upload_id, chunk_index, chunk_count), or split a large listing into one call per directory. Nothing was stored.")
	case errors.Is(err, args.ErrInvalid), errors.Is(err, depotpath.ErrInvalid):
		return failure(ErrorValidation, msg,
			"Fix the arguments named in the message and call again; the tool description lists every argument with its type and format. Nothing was stored.")
	}
	if m, ok := storeFailureOf(err); ok {
		f := failure(m.typ, cmp.Or(m.msg, msg), m.instruction)
		if m.err == store.ErrUnavailable || m.err == store.ErrOutcomeUnknown {
			f.RetryAfter = unavailableRetry
		}
		return f
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return failure(ErrorSystem, "the call did not finish in time",
			"Call again later; the call is safe to repeat. If it keeps timing out, send smaller calls.")
	}
	return failure(ErrorSystem, "depotfs failed internally; the operator's log has the details",
		"Call again later; the call is safe to repeat. If it keeps failing, tell the user that the depotfs server reports an internal error.")
}

// unavailableRetry is the retry hint, in seconds, of a write the store's
// cluster could not commit: about what a cluster needs to elect a leader.
const unavailableRetry = 10

// Instructions shared by several store errors.
const (
	fileOrDir     = "A depot path is either a file or a directory, never both: choose a path that does not put a file where a directory is (or below a file). Nothing was stored."
	changed       = "Another writer changed this path meanwhile: read the current state and call again. Nothing was stored."
	notThere      = "The entry does not exist (or its content has not arrived): push it first, then call again."
	storeLimitFix = "The file does not fit the depot's size limits (guide_cache_stats shows them): a file larger than the per-file limit is never accepted, and when everything else stored is pinned nothing can be evicted to make room. Nothing was stored and nothing was evicted. Send a smaller file, or ask the user to raise the limit or unpin files; if the message says uploads in progress hold too much, finish those uploads and send this chunk again."
)

// storeFailures is the envelope's failure for every error value of package
// store, in the order Classify tries them: each one's type, instruction,
// and a fixed message when the store's own text is not for the agent.
// TestStoreErrorsMapped (mcpserver/internal/errmaps) fails when a store
// error is missing here or from another reply contract.
var storeFailures = []storeFailure{
	{store.ErrBatchLimit, ErrorLimit, "",
		"Send the files in several smaller calls: the message says how many records this change needed and how many one commit of the depot holds. Nothing was stored."},
	{store.ErrLimit, ErrorLimit, "", storeLimitFix},
	{store.ErrHashMismatch, ErrorValidation, "",
		"Recompute the SHA-256 of the exact bytes you send (after base64 decoding) and call again with the matching sha256 and content; for a chunked upload, send every chunk again. Nothing was stored."},
	{store.ErrUpload, ErrorValidation, "",
		"Send every chunk of one upload with the same upload_id, chunk_count, path and whole-file sha256, and resend a chunk only with identical bytes; to start over, use a new upload_id. This chunk was not stored."},
	{store.ErrConflict, ErrorConflict, "", fileOrDir},
	{store.ErrIsDir, ErrorConflict, "", fileOrDir},
	{store.ErrNotDir, ErrorConflict, "", fileOrDir},
	{store.ErrNotEmpty, ErrorConflict, "",
		"The directory still has entries: remove them first, or ask for a recursive removal. Nothing was removed."},
	{store.ErrExist, ErrorConflict, "", changed},
	{store.ErrRevision, ErrorConflict, "", changed},
	{store.ErrNotExist, ErrorNotFound, "", notThere},
	{store.ErrNotPresent, ErrorNotFound, "", notThere},
	{store.ErrCorrupt, ErrorSystem, "",
		"Do not call again: the stored content of this file is damaged and every read of it fails the same way. Tell the user that the depotfs operator must restore the file from a backup (the server's log names the damaged chunk); other files are not affected."},
	{store.ErrClosed, ErrorSystem, "depotfs is shutting down",
		"Call again once depotfs is back; the call is safe to repeat."},
	{store.ErrOutcomeUnknown, ErrorSystem, "",
		"Whether this change was applied is unknown: the depot's cluster did not confirm it in time, and it may still be applied when the cluster recovers. After retry_after seconds, read the path (guide_stat or guide_read_file) to see whether the change is there before repeating it; to repeat an overwrite safely, send it with if_revision set to the revision you read."},
	{store.ErrUnavailable, ErrorSystem, "the depot's cluster has no quorum: no write can commit now",
		"Call again after retry_after seconds: the servers behind the depot are recovering. This call was not committed, so it is safe to repeat."},
}

// StoreErrorType returns the envelope's error type for err, one of the
// error values of package store, and false when it has no explicit
// mapping (a failure then counts as a system error).
func StoreErrorType(err error) (ErrorType, bool) {
	m, ok := storeFailureOf(err)
	return cmp.Or(m.typ, ErrorSystem), ok
}

type storeFailure struct {
	err         error
	typ         ErrorType
	msg         string
	instruction string
}

// storeFailureOf returns the entry of storeFailures that err is, if any.
func storeFailureOf(err error) (storeFailure, bool) {
	i := slices.IndexFunc(storeFailures, func(m storeFailure) bool { return errors.Is(err, m.err) })
	if i < 0 {
		return storeFailure{}, false
	}
	return storeFailures[i], true
}

// storeMessage is the agent-facing text for an error from the store. An
// error that wraps one of the store's sentinels describes depot paths only
// (the store's errors read "op path: reason"), so its text is useful and
// safe; anything else may carry host detail and gets a generic text.
func storeMessage(se *StoreError) string {
	if errors.Is(se.Err, store.ErrCorrupt) {
		return store.CorruptMessage(se.Path)
	}
	if _, ok := storeFailureOf(se.Err); ok || errors.Is(se.Err, depotpath.ErrEscapes) || errors.Is(se.Err, depotpath.ErrInvalid) {
		return se.Err.Error()
	}
	return "depotfs failed internally; the operator's log has the details"
}
