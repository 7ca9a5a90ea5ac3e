package chunkread_test

import (
	"errors"
	"io"
	"io/fs"
	"testing"

	"github.com/depotfs/depotfs/store/internal/chunkread"
)

// chunks is a content split into chunks, counting the chunks read.
type chunks struct {
	parts [][]byte
	read  []int64
	err   error
}

func (c *chunks) Chunks(read func(get func(i int64) ([]byte, error)) error) error {
	if c.err != nil {
		return c.err
	}
	return read(func(i int64) ([]byte, error) {
		c.read = append(c.read, i)
		if i >= int64(len(c.parts)) {
			return nil, nil
		}
		return c.parts[i], nil
	})
}

func TestReadAt(t *testing.T) {
	content := "0123456789" // chunks of 4: "0123" "4567" "89"
	src := func() *chunks { return &chunks{parts: [][]byte{[]byte("0123"), []byte("4567"), []byte("89")}} }
	for _, tc := range []struct {
		name    string
		off     int64
		n       int
		want    string
		wantErr error
		chunks  int
	}{
		{"within a chunk", 1, 2, "12", nil, 1},
		{"across chunks", 3, 6, content[3:9], nil, 3},
		{"to the end exactly", 6, 4, "6789", nil, 2},
		{"past the end", 8, 5, "89", io.EOF, 1},
		{"at the end", 10, 1, "", io.EOF, 0},
		{"nothing at the end", 10, 0, "", nil, 0},
		{"nothing inside", 2, 0, "", nil, 0},
		{"negative offset", -1, 1, "", fs.ErrInvalid, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := src()
			p := make([]byte, tc.n)
			n, err := chunkread.ReadAt(s, "sum", int64(len(content)), 4, p, tc.off)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if got := string(p[:n]); got != tc.want {
				t.Fatalf("read %q, want %q", got, tc.want)
			}
			if len(s.read) != tc.chunks {
				t.Fatalf("read chunks %v, want %d of them", s.read, tc.chunks)
			}
		})
	}
}

func TestReadAtFailures(t *testing.T) {
	short := &chunks{parts: [][]byte{[]byte("0123"), []byte("45")}}
	n, err := chunkread.ReadAt(short, "sum", 8, 4, make([]byte, 8), 0)
	if err == nil || n != 6 {
		t.Fatalf("short chunk: %d, %v; want 6 bytes and an error", n, err)
	}
	closed := errors.New("closed")
	if _, err := chunkread.ReadAt(&chunks{err: closed}, "sum", 8, 4, make([]byte, 1), 0); !errors.Is(err, closed) {
		t.Fatalf("source error: %v, want %v", err, closed)
	}
}

func TestContent(t *testing.T) {
	released := 0
	c := chunkread.New(&chunks{parts: [][]byte{[]byte("0123"), []byte("45")}}, "sum", 6, 4, func() { released++ })
	if c.Size() != 6 || c.SHA256() != "sum" {
		t.Fatalf("Size %d, SHA256 %q", c.Size(), c.SHA256())
	}
	p := make([]byte, 3)
	if n, err := c.ReadAt(p, 2); err != nil || string(p[:n]) != "234" {
		t.Fatalf("ReadAt: %q, %v", p[:n], err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil || released != 1 {
		t.Fatalf("second Close: %v, released %d times", err, released)
	}
	if _, err := c.ReadAt(p, 0); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("ReadAt after Close: %v, want fs.ErrClosed", err)
	}
}
