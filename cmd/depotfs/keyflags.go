package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"

	"github.com/depotfs/depotfs/internal/seal"
	"golang.org/x/sys/unix"
)

// keyConfig is the key-encryption key of a sealed depot: --key-file, or
// the key itself in DEPOTFS_KEY (docs/security.md, "Encryption at rest").
type keyConfig struct {
	file string
}

// envKey is the environment variable that may hold the key itself.
const envKey = envPrefix + "KEY"

func (c *keyConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.file, "key-file", "", "`file` holding the depot's key-encryption key, 64 hex digits, mode 0600 ('depotfs key new'): a new depot started with it seals its content, a sealed depot needs it; DEPOTFS_KEY may hold the key itself instead")
}

// load returns the key given, nil when none is.
func (c *keyConfig) load() (seal.Wrapper, error) {
	env := strings.TrimSpace(os.Getenv(envKey))
	switch {
	case c.file != "" && env != "":
		return nil, usageError{errors.New("both --key-file and DEPOTFS_KEY are set: choose one")}
	case c.file != "":
		return seal.LoadKeyFile(c.file)
	case env != "":
		k, err := seal.ParseKey([]byte(env))
		if err != nil {
			return nil, errors.New("DEPOTFS_KEY: want 64 hexadecimal digits")
		}
		return k, nil
	}
	return nil, nil
}

// memoryBacked reports whether dir, or the nearest directory above it
// that exists, is on a filesystem held in memory (tmpfs or ramfs), where
// plaintext copies for passthrough never reach a disk.
func memoryBacked(dir string) bool {
	for {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err == nil {
			return st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}
