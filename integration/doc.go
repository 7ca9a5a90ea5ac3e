// Package integration holds depotfs's end-to-end tests: they build the real
// depotfs binary, start it with a temporary database and mount, talk to it
// with mcp-go's client over streamable HTTP and stdio, and read the mount
// with real programs (cat, sha256sum, cmp, find, stat).
//
// The tests need root and /dev/fuse, as CI provides; without them they fail
// rather than skip, so a broken environment is never mistaken for a pass.
package integration
