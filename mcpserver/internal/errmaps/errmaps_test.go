// Package errmaps_test checks, in one place, that every reply contract maps
// every error value of package store explicitly: the guide envelope's
// error type, the provider contract's error_type, the fs contract's
// error.code and the mount's errno. It also checks that a rate-limited call
// maps explicitly in each MCP contract, with its retry hint. It is a test
// of the contracts side by side; it builds nothing into the binary.
package errmaps_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/internal/fstools"
	"github.com/depotfs/depotfs/mcpserver/internal/provider"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

// storeErrors are the error values of package store, by name.
// TestStoreErrorsListed keeps the list complete.
var storeErrors = map[string]error{
	"ErrNotExist":       store.ErrNotExist,
	"ErrExist":          store.ErrExist,
	"ErrConflict":       store.ErrConflict,
	"ErrRevision":       store.ErrRevision,
	"ErrHashMismatch":   store.ErrHashMismatch,
	"ErrNotPresent":     store.ErrNotPresent,
	"ErrIsDir":          store.ErrIsDir,
	"ErrNotDir":         store.ErrNotDir,
	"ErrUpload":         store.ErrUpload,
	"ErrClosed":         store.ErrClosed,
	"ErrNotEmpty":       store.ErrNotEmpty,
	"ErrLimit":          store.ErrLimit,
	"ErrUnavailable":    store.ErrUnavailable,
	"ErrOutcomeUnknown": store.ErrOutcomeUnknown,
	"ErrBatchLimit":     store.ErrBatchLimit,
	"ErrCorrupt":        store.ErrCorrupt,
}

// TestStoreErrorsListed fails when package store declares an error value
// (a package-level var Err...) that storeErrors lacks, so a new store
// error cannot escape TestStoreErrorsMapped.
func TestStoreErrorsListed(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "store")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "Err") {
						declared = append(declared, n.Name)
					}
				}
			}
		}
	}
	if len(declared) == 0 {
		t.Fatalf("no error values found in %s", dir)
	}
	for _, name := range declared {
		if _, ok := storeErrors[name]; !ok {
			t.Errorf("store.%s is not in storeErrors: add it, and map it in every reply contract", name)
		}
	}
	for name := range storeErrors {
		if !slices.Contains(declared, name) {
			t.Errorf("storeErrors lists store.%s, which package store no longer declares", name)
		}
	}
}

// TestStoreErrorsMapped: every store error, bare or wrapped as the tools
// and the mount see it, has an explicit entry in every contract's table.
func TestStoreErrorsMapped(t *testing.T) {
	contracts := map[string]func(error) (string, bool){
		"guide envelope type": func(err error) (string, bool) {
			typ, ok := tool.StoreErrorType(err)
			return string(typ), ok
		},
		"provider error_type": provider.StoreErrorType,
		"fs error.code":       fstools.StoreErrorCode,
		"FUSE errno": func(err error) (string, bool) {
			errno, ok := vfs.StoreErrno(err)
			return errno.Error(), ok
		},
	}
	for name, e := range storeErrors {
		wrapped := &tool.StoreError{Op: "put", Path: "/a", Err: fmt.Errorf("put /a: %w", e)}
		for contract, lookup := range contracts {
			code, ok := lookup(e)
			if !ok {
				t.Errorf("%s: store.%s has no explicit mapping", contract, name)
				continue
			}
			if got, _ := lookup(wrapped); got != code {
				t.Errorf("%s: store.%s maps to %s, wrapped to %s", contract, name, code, got)
			}
		}
	}
	// The guide type is what the log and the audit record of every call
	// report, whatever its contract: a store error answered as an ordinary
	// refusal must not be logged and audited as a system failure.
	for _, e := range []error{store.ErrNotEmpty, store.ErrLimit, store.ErrExist, store.ErrNotExist} {
		if f := tool.Classify(&tool.StoreError{Op: "remove", Path: "/d", Err: e}); f.Type == tool.ErrorSystem {
			t.Errorf("store error %v is classified as a system failure", e)
		}
	}
}

// TestErrorMapsDistinguish: the mappings keep apart what clients must tell
// apart: a missing entry, an existing one, a size limit.
func TestErrorMapsDistinguish(t *testing.T) {
	for _, tc := range []struct {
		err      error
		guide    tool.ErrorType
		provider string
		fs       string
	}{
		{store.ErrNotExist, tool.ErrorNotFound, "FileNotFoundError", "not_found"},
		{store.ErrExist, tool.ErrorConflict, "FileProviderError", "already_exists"},
		{store.ErrLimit, tool.ErrorLimit, "FileSizeLimitExceededError", "invalid_parameters"},
		{store.ErrNotEmpty, tool.ErrorConflict, "FileProviderError", "invalid_parameters"},
		{store.ErrCorrupt, tool.ErrorSystem, "FileProviderError", "integrity_error"},
	} {
		if got, _ := tool.StoreErrorType(tc.err); got != tc.guide {
			t.Errorf("guide type of %v = %s, want %s", tc.err, got, tc.guide)
		}
		if got, _ := provider.StoreErrorType(tc.err); got != tc.provider {
			t.Errorf("provider error_type of %v = %s, want %s", tc.err, got, tc.provider)
		}
		if got, _ := fstools.StoreErrorCode(tc.err); got != tc.fs {
			t.Errorf("fs error.code of %v = %s, want %s", tc.err, got, tc.fs)
		}
	}
	if errors.Is(store.ErrNotExist, store.ErrExist) {
		t.Fatal("store.ErrNotExist and store.ErrExist must differ")
	}
}

// TestCorruptNotRetried: content that failed its integrity check is a
// system failure whose message names the file and whose instruction, unlike
// every other system failure's, says not to call again, with no retry hint.
func TestCorruptNotRetried(t *testing.T) {
	err := &tool.StoreError{Op: "read", Path: "/r/a.txt", Err: fmt.Errorf("chunk 0a: %w", store.ErrCorrupt)}
	f := tool.Classify(err)
	if f.Type != tool.ErrorSystem || f.RetryAfter != 0 {
		t.Errorf("type %s, retry_after %d; want system without a retry hint", f.Type, f.RetryAfter)
	}
	for _, want := range []string{"/r/a.txt", "failed its integrity check", "retrying will not help", "backup"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	if strings.Contains(f.Message, "chunk 0a") {
		t.Errorf("message %q names the store's chunk", f.Message)
	}
	if !strings.HasPrefix(f.Instruction, "Do not call again") || !strings.Contains(f.Instruction, "backup") {
		t.Errorf("instruction %q", f.Instruction)
	}
}
