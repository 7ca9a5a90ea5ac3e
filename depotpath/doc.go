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
