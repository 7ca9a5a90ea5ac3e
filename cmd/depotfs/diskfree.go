package main

import (
	"fmt"
	"path/filepath"
	"syscall"
)

// defaultDiskReserve is what --disk-reserve keeps free unless told.
const defaultDiskReserve byteSize = 64 << 20

// diskFree returns a function giving the bytes free to depotfs on the
// disks holding files (the smallest, when they lie on several).
func diskFree(files ...string) func() (int64, error) {
	return func() (int64, error) {
		var least int64 = -1
		for _, f := range files {
			var st syscall.Statfs_t
			if err := syscall.Statfs(filepath.Dir(f), &st); err != nil {
				return 0, fmt.Errorf("free space of %s: %w", filepath.Dir(f), err)
			}
			free := int64(st.Bavail) * int64(st.Bsize)
			if least < 0 || free < least {
				least = free
			}
		}
		return least, nil
	}
}
