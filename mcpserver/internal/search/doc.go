// Package search finds lines of text in the files of a store.Store, like
// grep -rn: a literal or a regular expression, case-sensitive or not, with
// context lines. It owns the matching and the parallel scan; it does not
// know about MCP or its reply shapes, and it must not import vfs or
// mcpserver.
//
// # Basics
//
// [Compile] checks a pattern once; [Run] walks a directory of a store in
// name order, searches the files with one worker per CPU, and returns the
// matches in walk order: the result is the same whatever the scheduling,
// including when MaxResults stops the scan early.
//
// Matching is per line, as grep does it: a line is the bytes between two
// newlines, without the newline (and without a carriage return before it).
// A regular expression uses Go's syntax (RE2), in multi-line mode so that ^
// and $ match at line boundaries, and never matches across a newline.
// Case-insensitive matching folds Unicode case.
//
// Files that look binary (a NUL byte in their first 8000 bytes), files
// larger than MaxFileSize and files whose content has not arrived are
// skipped and counted.
//
// # Caveats
//
// Each worker holds one whole file in memory, so a search uses up to
// Workers × MaxFileSize bytes. The walk lists one directory at a time: it
// is not one snapshot of the store, and files changed during the search may
// be seen in either version (each file is read whole from one version).
package search
