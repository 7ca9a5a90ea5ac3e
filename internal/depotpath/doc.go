// Package depotpath owns the rules for depot paths: one normalization
// function used by every layer (store, vfs, mcpserver), and the helpers that
// split, join and compare clean paths.
//
// # Clean paths
//
// A clean depot path is absolute, slash-separated, has no empty, "." or ".."
// components, no trailing slash (except the root "/"), is valid UTF-8 in
// Unicode NFC, and contains no NUL or control characters and no U+FFFD (the
// replacement character JSON decoders substitute for invalid UTF-8, so a path
// that was not valid UTF-8 when an agent encoded it is refused, not mangled).
// No component reads as "." or ".." in Unicode compatibility form (NFKC:
// fullwidth or leader dots), and no bidirectional control character
// (U+200E, U+202A..U+202E, U+2066..U+2069, U+061C) appears: such names
// would display as, or be taken by a compatibility-folding program for,
// something they are not. Percent-encoding is not decoded: "%2e%2e" is a
// literal name.
// Each component is at most [MaxComponentBytes] bytes and the whole path at
// most [MaxPathBytes].
//
// [Clean] turns what an agent sends ("a\\b//./c", "/x/../y") into a clean
// path or fails with an error wrapping [ErrInvalid] or [ErrEscapes]. It never
// touches the host filesystem: depot paths are names in the store, not host
// paths.
//
// The package has no state and every function is safe for concurrent use.
package depotpath
