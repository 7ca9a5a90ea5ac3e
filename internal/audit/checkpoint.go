package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/depotfs/depotfs/internal/atomicfile"
)

// ErrCheckpoint reports a checkpoint or key file that exists but cannot be
// trusted: unreadable, malformed, or no slot with a valid MAC.
var ErrCheckpoint = errors.New("audit checkpoint invalid")

// slotSize is the size of one checkpoint slot; the file holds two.
const slotSize = 256

// checkpoint is the head of the chain as last made durable.
type checkpoint struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
	MAC  string `json:"mac"`
}

// keyPath and checkpointPath name the files kept beside the log.
func keyPath(log string) string        { return log + ".key" }
func checkpointPath(log string) string { return log + ".checkpoint" }

// loadKey reads the HMAC key of the log at path, creating it (32 random
// bytes, hex, mode 0600) when create is set and there is none.
func loadKey(path string, create bool) ([]byte, error) {
	kp := keyPath(path)
	b, err := os.ReadFile(kp)
	if errors.Is(err, fs.ErrNotExist) && create {
		key := make([]byte, 32)
		_, _ = rand.Read(key) // crypto/rand.Read never fails
		if err := atomicfile.Write(kp, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("audit key: %w", err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	key, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil || len(key) < 32 {
		return nil, fmt.Errorf("%w: key file %s is not 32 or more hex-encoded bytes", ErrCheckpoint, kp)
	}
	return key, nil
}

// hmacHex returns the hex HMAC-SHA-256 of msg under key.
func hmacHex(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return hex.EncodeToString(m.Sum(nil))
}

// mac authenticates a head under key.
func mac(key []byte, seq uint64, hash string) string {
	return hmacHex(key, []byte("depotfs audit checkpoint v1\n"+strconv.FormatUint(seq, 10)+"\n"+hash))
}

// readCheckpoint returns the newest valid slot of the log's checkpoint, the
// slot it is in, and false if there is no checkpoint file. A file with no
// valid slot is ErrCheckpoint: it was tampered with or the key changed.
func readCheckpoint(path string, key []byte) (cp checkpoint, slot int, ok bool, err error) {
	b, err := os.ReadFile(checkpointPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint{}, 0, false, nil
	}
	if err != nil {
		return checkpoint{}, 0, false, fmt.Errorf("audit checkpoint: %w", err)
	}
	found := false
	for i := range 2 {
		if len(b) < (i+1)*slotSize {
			break
		}
		var c checkpoint
		raw := bytes.TrimRight(b[i*slotSize:(i+1)*slotSize], " \n\x00")
		if json.Unmarshal(raw, &c) != nil || !hmac.Equal([]byte(c.MAC), []byte(mac(key, c.Seq, c.Hash))) {
			continue
		}
		if !found || c.Seq > cp.Seq {
			cp, slot, found = c, i, true
		}
	}
	if !found {
		return checkpoint{}, 0, true, fmt.Errorf("%w: %s has no slot with a valid MAC", ErrCheckpoint, checkpointPath(path))
	}
	return cp, slot, true, nil
}

// checkpointFile writes the checkpoint slots in turn.
type checkpointFile struct {
	f    *os.File
	key  []byte
	next int // the slot to write next
	sync bool
}

// openCheckpoint opens (creating) the checkpoint file; next is the slot
// to write first (the one not holding the newest checkpoint).
func openCheckpoint(path string, key []byte, next int, sync bool) (*checkpointFile, error) {
	f, err := os.OpenFile(checkpointPath(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit checkpoint: %w", err)
	}
	return &checkpointFile{f: f, key: key, next: next, sync: sync}, nil
}

// checkpointSlot returns the slot that records seq and hash as the head.
func checkpointSlot(key []byte, seq uint64, hash string) []byte {
	b, _ := json.Marshal(checkpoint{Seq: seq, Hash: hash, MAC: mac(key, seq, hash)}) // strings and a number
	slot := bytes.Repeat([]byte{' '}, slotSize)
	copy(slot, b)
	slot[slotSize-1] = '\n'
	return slot
}

// write records seq and hash as the head, durably when sync is set.
func (c *checkpointFile) write(seq uint64, hash string) error {
	if _, err := c.f.WriteAt(checkpointSlot(c.key, seq, hash), int64(c.next*slotSize)); err != nil {
		return fmt.Errorf("audit checkpoint: %w", err)
	}
	if c.sync {
		if err := datasync(c.f); err != nil {
			return fmt.Errorf("audit checkpoint: %w", err)
		}
	}
	c.next = 1 - c.next
	return nil
}

// datasync makes f's data durable, with the metadata needed to read it
// back (its size) but not its times: fdatasync(2). The checkpoint,
// rewritten in place, needs no more, and on ext4 such an overwrite then
// costs a write and a cache flush instead of a journal commit.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Fdatasync(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
