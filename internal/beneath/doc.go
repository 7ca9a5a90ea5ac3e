// Package beneath opens and walks the files below an open directory
// without following a symbolic link anywhere on the way.
//
// A program that plans with lstat and then opens by path name can be
// redirected between the two: a file replaced by a link to /etc/shadow, or
// a directory on the path replaced by a link to /etc, is followed by open.
// Here every step is taken relative to a directory already open: each
// directory with openat(O_DIRECTORY|O_NOFOLLOW), the last component with
// O_NOFOLLOW, so a link met at any step makes the call fail with [ErrLink]
// instead of leaving the tree.
//
// os.Root (Go 1.24) is not used: it follows links that stay inside the
// root, so a file replaced by a link to another file of the tree would be
// read as that file, and a caller could not tell.
//
// The functions are safe for concurrent use; the directory passed in is
// only read from, never closed, and its file offset is not moved.
package beneath
