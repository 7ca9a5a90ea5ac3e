package audit

import (
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/depotfs/depotfs/internal/atomicfile"
)

// A seal vouches, under the key, for a rotated file that was verified (or
// written whole) by depotfs: its first and last records, the chain links at
// both ends, and the file's size, inode and change time. Open trusts a
// rotated file whose seal matches what stat says instead of reading it
// again, so a start reads only the current file and files it never
// verified. Any write to a sealed file changes its ctime, which nobody can
// set back, so the file is read again (and refused if it was altered).
type seal struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	Prev  string `json:"prev"` // prev of the first record
	Hash  string `json:"hash"` // hash of the last record
	Keyed bool   `json:"keyed"`
	Size  int64  `json:"size"`
	Ino   uint64 `json:"ino"`
	Ctime int64  `json:"ctime_ns"`
	MAC   string `json:"mac"`

	file string // the log file it seals
}

// sealPath is where the seal of a rotated log file is kept.
func sealPath(logFile string) string { return logFile + ".seal" }

func (s seal) mac(key []byte) string {
	return hmacHex(key, fmt.Appendf(nil, "depotfs audit seal v1\n%d %d %s %s %t %d %d %d", s.First, s.Last, s.Prev, s.Hash, s.Keyed, s.Size, s.Ino, s.Ctime))
}

// fileID is what a seal records of a file's identity.
func fileID(path string) (size int64, ino uint64, ctime int64, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, 0, 0, fmt.Errorf("audit log: stat %s: %w", path, err)
	}
	return st.Size, st.Ino, st.Ctim.Nano(), nil
}

// writeSeal seals the rotated file lf.
func writeSeal(lf logFile, key []byte, s seal) error {
	var err error
	if s.Size, s.Ino, s.Ctime, err = fileID(lf.Path); err != nil {
		return err
	}
	s.MAC = s.mac(key)
	return writeJSON(sealPath(lf.Path), "audit seal", s)
}

// writeJSON replaces path with v as a line of JSON, mode 0600.
func writeJSON(path, what string, v any) error {
	b, err := json.Marshal(v)
	if err == nil {
		err = atomicfile.Write(path, append(b, '\n'), 0o600)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// readSeal returns the seal of the rotated file lf and whether it is valid
// and still describes the file.
func readSeal(lf logFile, key []byte) (seal, bool) {
	var s seal
	b, err := os.ReadFile(sealPath(lf.Path))
	if err != nil || json.Unmarshal(b, &s) != nil || !hmac.Equal([]byte(s.MAC), []byte(s.mac(key))) || s.First != lf.First {
		return seal{}, false
	}
	size, ino, ctime, err := fileID(lf.Path)
	if err != nil || size != s.Size || ino != s.Ino || ctime != s.Ctime {
		return seal{}, false
	}
	s.file = lf.Path
	return s, true
}

// base is where the chain starts: seq 1 after genesis, or, once retention
// has deleted old files, the first record kept and the hash it links to.
// It is kept in FILE.base under the key, so deleting a file the retention
// did not delete still shows as missing records.
type base struct {
	First uint64 `json:"first"`
	Prev  string `json:"prev"`
	MAC   string `json:"mac"`
}

func basePath(log string) string { return log + ".base" }

func (b base) mac(key []byte) string {
	return hmacHex(key, fmt.Appendf(nil, "depotfs audit base v1\n%d %s", b.First, b.Prev))
}

// genesisBase is the start of a log retention never cut.
var genesisBase = base{First: 1, Prev: genesis}

// readBase returns the log's base: genesisBase when there is no base
// file, ErrCheckpoint when it does not carry a valid MAC.
func readBase(path string, key []byte) (base, error) {
	b, err := os.ReadFile(basePath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return genesisBase, nil
	}
	if err != nil {
		return base{}, fmt.Errorf("audit base: %w", err)
	}
	var bs base
	if json.Unmarshal(b, &bs) != nil || bs.First == 0 || !hmac.Equal([]byte(bs.MAC), []byte(bs.mac(key))) {
		return base{}, fmt.Errorf("%w: %s does not carry a valid MAC", ErrCheckpoint, basePath(path))
	}
	return bs, nil
}

func writeBase(path string, key []byte, b base) error {
	b.MAC = b.mac(key)
	return writeJSON(basePath(path), "audit base", b)
}
