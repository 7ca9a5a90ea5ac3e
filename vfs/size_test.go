package vfs

import (
	"testing"
	"unsafe"
)

// TestFileNodeSize: a fileNode stays in the 288-byte size class of Go's
// allocator. The mount keeps one for every file the kernel knows, and at
// 312 bytes (the open state inline) each took a 320-byte slot.
func TestFileNodeSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size class is a 64-bit build's")
	}
	if got := unsafe.Sizeof(fileNode{}); got > 288 {
		t.Errorf("fileNode is %d bytes, want at most 288", got)
	}
}
