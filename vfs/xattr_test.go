package vfs_test

import (
	"bytes"
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/storetest"
	"github.com/depotfs/depotfs/vfs"
)

func TestXattrs(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	res := put(t, st, m, store.PutRequest{Path: "/f.txt", Data: []byte("hi"), Source: "guide_cache_file upload 7", Encoding: "utf-8"})
	file := m.path("/f.txt")
	tests := []struct {
		name, want string
		err        error
	}{
		{vfs.XattrSHA256, res.Entry.SHA256, nil},
		{vfs.XattrSource, "guide_cache_file upload 7", nil},
		{vfs.XattrEncoding, "utf-8", nil},
		{vfs.XattrDeclaredSHA256, "", syscall.ENODATA}, // only placeholders have one
		{"user.other", "", syscall.ENODATA},
		{"security.selinux", "", syscall.EOPNOTSUPP},
		{"system.posix_acl_access", "", syscall.EOPNOTSUPP},
		{"trusted.x", "", syscall.EOPNOTSUPP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size, err := syscall.Getxattr(file, tt.name, nil)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("size query: %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || size != len(tt.want) {
				t.Fatalf("size query = %d, %v; want %d", size, err, len(tt.want))
			}
			if len(tt.want) > 1 {
				if _, err := syscall.Getxattr(file, tt.name, make([]byte, 1)); !errors.Is(err, syscall.ERANGE) {
					t.Errorf("short buffer: %v, want ERANGE", err)
				}
			}
			buf := make([]byte, 256)
			n, err := syscall.Getxattr(file, tt.name, buf)
			if err != nil || string(buf[:n]) != tt.want {
				t.Errorf("value = %q, %v; want %q", buf[:n], err, tt.want)
			}
		})
	}
	buf := make([]byte, 1024)
	n, err := syscall.Listxattr(file, buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("listxattr = %q, want nothing: the attributes are read by name", buf[:n])
	}
	n, err = syscall.Listxattr(m.path("/"), buf)
	if err != nil || n != 0 {
		t.Errorf("listxattr on the root = %q, %v; want nothing", buf[:n], err)
	}

	if getfattr, err := exec.LookPath("getfattr"); err == nil {
		out, err := exec.Command(getfattr, "-n", vfs.XattrSHA256, file).Output()
		if err != nil {
			t.Fatalf("getfattr: %v", err)
		}
		if want := `user.depotfs.sha256="` + res.Entry.SHA256 + `"`; !bytes.Contains(out, []byte(want)) {
			t.Errorf("getfattr output lacks %s:\n%s", want, out)
		}
	}
}

// TestDeclaredSHA256Xattr checks that a placeholder shows the hash an
// agent declared for it, in user.depotfs.declared_sha256 (and has no
// user.depotfs.sha256: its content is not there), until its content
// arrives.
func TestDeclaredSHA256Xattr(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, nil)
	data := []byte("declared content")
	if _, err := st.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/later.bin", Kind: store.KindFile, Size: int64(len(data)), SHA256: storetest.Sum(data)},
	}}); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, m)
	file := m.path("/later.bin")
	buf := make([]byte, 256)
	n, err := syscall.Getxattr(file, vfs.XattrDeclaredSHA256, buf)
	if err != nil || string(buf[:n]) != storetest.Sum(data) {
		t.Errorf("%s of a placeholder = %q, %v; want the declared hash", vfs.XattrDeclaredSHA256, buf[:n], err)
	}
	if _, err := syscall.Getxattr(file, vfs.XattrSHA256, buf); !errors.Is(err, syscall.ENODATA) {
		t.Errorf("%s of a placeholder: %v, want ENODATA", vfs.XattrSHA256, err)
	}
	put(t, st, m, store.PutRequest{Path: "/later.bin", Data: data})
	if _, err := syscall.Getxattr(file, vfs.XattrDeclaredSHA256, buf); !errors.Is(err, syscall.ENODATA) {
		t.Errorf("%s once the content arrived: %v, want ENODATA", vfs.XattrDeclaredSHA256, err)
	}
	if n, err := syscall.Getxattr(file, vfs.XattrSHA256, buf); err != nil || string(buf[:n]) != storetest.Sum(data) {
		t.Errorf("%s once the content arrived = %q, %v", vfs.XattrSHA256, buf[:n], err)
	}
}

func TestNoXattrs(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, &vfs.Options{NoXattrs: true})
	put(t, st, m, store.PutRequest{Path: "/f", Data: []byte("hi")})
	_, err := syscall.Getxattr(m.path("/f"), vfs.XattrSHA256, make([]byte, 128))
	if !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("getxattr with NoXattrs: %v, want EOPNOTSUPP", err)
	}
}
