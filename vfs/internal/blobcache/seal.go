package blobcache

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
)

// A seal is the small file <sum>.seal beside a blob. It records, after the
// blob's bytes were checked against its hash and synced to disk, what the
// blob file looked like then: its size, inode number, and change and
// modification times. Open keeps a blob only when its file still looks
// exactly like that; any write, truncation, chmod, link or rename of the
// file moves its change time, which no system call can set back.
const (
	sealSuffix = ".seal"
	sealMagic  = "depotfs-blob-seal 1"
	// maxSeal bounds what is read of a seal; a real one is under 200 bytes.
	maxSeal = 512
)

// stamp is the seal line for the blob sum whose file has the status st.
func stamp(sum string, st *syscall.Stat_t) string {
	return fmt.Sprintf("%s %s size=%d ino=%d ctime=%d.%09d mtime=%d.%09d\n", sealMagic, sum,
		st.Size, st.Ino, st.Ctim.Sec, st.Ctim.Nsec, st.Mtim.Sec, st.Mtim.Nsec)
}

// runSealer seals filled blobs until Close, then seals the ones still
// queued and exits.
func (c *Cache) runSealer() {
	defer close(c.sealerDone)
	for {
		select {
		case b := <-c.seals:
			c.seal(b)
		case <-c.stopSealer:
			for {
				select {
				case b := <-c.seals:
					c.seal(b)
				default:
					return
				}
			}
		}
	}
}

// seal syncs the blob b's file to disk and writes its seal, unless the blob
// was deleted (or deleted and filled again) meanwhile. A blob that cannot
// be sealed stays usable until the next Open, which drops it.
func (c *Cache) seal(b *blob) {
	f, err := os.Open(c.path(b.sum))
	if err != nil {
		return // deleted since
	}
	defer f.Close()
	var st syscall.Stat_t
	if err = f.Sync(); err == nil {
		err = syscall.Fstat(int(f.Fd()), &st)
	}
	if err != nil {
		c.log.Warn("blobcache: sealing a blob failed; it will not be kept across restarts", "sha256", b.sum, "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.blobs[b.sum]; !ok || el.Value.(*blob) != b {
		return
	}
	if err := c.writeSeal(b.sum, stamp(b.sum, &st)); err != nil {
		c.log.Warn("blobcache: sealing a blob failed; it will not be kept across restarts", "sha256", b.sum, "err", err)
	}
}

// writeSeal writes the seal of sum under a temporary name and renames it
// into place, so that a seal is never partial.
func (c *Cache) writeSeal(sum, line string) (err error) {
	tmp, err := os.CreateTemp(c.dir, ".fill-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.WriteString(line); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), c.path(sum)+sealSuffix)
}

// sealed reports whether the blob file sum is a regular file that looks
// exactly as its seal recorded.
func (c *Cache) sealed(sum string) bool {
	f, err := os.Open(c.path(sum) + sealSuffix)
	if err != nil {
		return false
	}
	want, err := io.ReadAll(io.LimitReader(f, maxSeal))
	f.Close()
	if err != nil {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(c.path(sum), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return false
	}
	return string(want) == stamp(sum, &st)
}

// reindex fills the index from what an earlier run left in the directory:
// the blobs whose files are unchanged since sealed, least recently filled
// at the back of the LRU list (beyond the bound, deleted). Every other
// blob, seal and unfinished fill is deleted.
func (c *Cache) reindex() error {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("blobcache: %w", err)
	}
	type kept struct {
		sum   string
		size  int64
		mtime int64
	}
	var keep []kept
	var drop []string
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, ".fill-"):
			drop = append(drop, name)
		case strings.HasSuffix(name, sealSuffix) && isBlobName(strings.TrimSuffix(name, sealSuffix)):
			if _, err := os.Lstat(c.path(strings.TrimSuffix(name, sealSuffix))); err != nil {
				drop = append(drop, name) // a seal without its blob
			}
		case isBlobName(name):
			var st syscall.Stat_t
			if !c.sealed(name) || syscall.Lstat(c.path(name), &st) != nil {
				drop = append(drop, name+sealSuffix, name)
				continue
			}
			keep = append(keep, kept{sum: name, size: st.Size, mtime: st.Mtim.Nano()})
		}
	}
	for _, name := range drop {
		if err := os.Remove(c.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("blobcache: dropping %s: %w", name, err)
		}
		if !strings.HasSuffix(name, sealSuffix) {
			c.stats.Dropped++
		}
	}
	slices.SortFunc(keep, func(a, b kept) int { return cmp.Compare(a.mtime, b.mtime) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keep {
		c.blobs[k.sum] = c.lru.PushFront(&blob{sum: k.sum, size: k.size, kept: true})
		c.used += k.size
	}
	c.makeRoomLocked(0)
	c.stats.Kept = len(c.blobs)
	return nil
}
