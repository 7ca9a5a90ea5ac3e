package backup_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/depotfs/depotfs/internal/backup"
)

// container returns a complete container with a database and two audit
// files.
func container(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := backup.NewWriter(&buf, backup.Header{Store: "bolt", Revision: 42, Audit: "audit.log"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ name, body string }{
		{backup.DBName, "database bytes"},
		{backup.AuditDir + "audit.log.key", "key"},
		{backup.AuditDir + "audit.log", "{\"seq\":1}\n"},
	} {
		if err := w.Add(m.name, int64(len(m.body)), func(w io.Writer) error { _, err := io.WriteString(w, m.body); return err }); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// members reads a container and returns its header and members.
func members(b []byte) (backup.Header, map[string]string, error) {
	got := map[string]string{}
	h, err := backup.Read(bytes.NewReader(b), func(_ backup.Header, name string, _ int64, r io.Reader) error {
		body, err := io.ReadAll(r)
		got[name] = string(body)
		return err
	})
	return h, got, err
}

func TestRoundTrip(t *testing.T) {
	h, got, err := members(container(t))
	if err != nil {
		t.Fatal(err)
	}
	if h.Revision != 42 || h.Store != "bolt" || h.Format != backup.Format || h.Audit != "audit.log" {
		t.Errorf("header %+v", h)
	}
	if got[backup.DBName] != "database bytes" || got[backup.AuditDir+"audit.log.key"] != "key" || len(got) != 3 {
		t.Errorf("members %v", got)
	}
}

// TestCutOffRefused: a container cut off at any byte is refused with
// ErrCorrupt, however much of it arrived.
func TestCutOffRefused(t *testing.T) {
	b := container(t)
	// What follows the sums' last line is tar padding and end blocks,
	// which carry nothing: a cut there still holds every member and the
	// sums.
	complete := bytes.LastIndex(b, []byte("  "+backup.AuditDir+"audit.log\n")) + len("  "+backup.AuditDir+"audit.log\n")
	for n := 0; n < len(b); n++ {
		_, _, err := members(b[:n])
		switch {
		case err == nil && n < complete:
			t.Fatalf("cut at %d of %d bytes: accepted", n, len(b))
		case err != nil && !errors.Is(err, backup.ErrCorrupt):
			t.Fatalf("cut at %d: %v, want ErrCorrupt", n, err)
		}
	}
}

// TestAlteredRefused: a changed byte anywhere in a member's data is
// refused.
func TestAlteredRefused(t *testing.T) {
	b := container(t)
	i := bytes.Index(b, []byte("database bytes"))
	b[i] ^= 1
	if _, _, err := members(b); !errors.Is(err, backup.ErrCorrupt) {
		t.Fatalf("altered member: %v, want ErrCorrupt", err)
	}
}

func TestAddWrongSize(t *testing.T) {
	w, err := backup.NewWriter(io.Discard, backup.Header{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(backup.DBName, 10, func(w io.Writer) error { _, err := io.WriteString(w, "short"); return err }); err == nil {
		t.Fatal("a member shorter than announced was accepted")
	}
}

// FuzzRead: whatever bytes arrive, Read fails cleanly or succeeds; it
// never panics.
func FuzzRead(f *testing.F) {
	f.Add(container(f))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		members(b)
	})
}
