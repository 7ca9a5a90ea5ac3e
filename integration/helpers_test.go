package integration_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func sha256hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// runProgram runs a real program and returns its stdout, failing the test
// when it exits non-zero.
func runProgram(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr)
	}
	return string(out)
}

// runFailing runs a program that must fail and returns its stderr.
func runFailing(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err == nil {
		t.Fatalf("%s %s succeeded; want failure (output %q)", name, strings.Join(args, " "), out)
	}
	return string(out)
}

// pseudoRandom returns n deterministic bytes for seed.
//
// The race detector does not watch it (go:norace): b and the generator are
// its own until it returns, and watched, every byte written cost an
// instrumented store, 0.65 s of CPU per 8 MiB, the tests' hundreds of MiB
// tens of seconds; unwatched and eight bytes at a time, 8 MiB take 8 ms.
//
//go:norace
func pseudoRandom(n int, seed uint64) []byte {
	r := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	b := make([]byte, n+8) // room for the last word's spare bytes
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b[:n:n]
}

// pushChunked uploads data to path with guide_read_file in chunks of
// chunkSize, sending them in a shuffled order and sending chunk retry twice.
// It returns the final reply.
func pushChunked(d *daemon, path string, data []byte, chunkSize int, uploadID string, retry int) envelope {
	d.t.Helper()
	count := (len(data) + chunkSize - 1) / chunkSize
	order := rand.New(rand.NewPCG(uint64(len(data)), 7)).Perm(count)
	whole := sha256hex(data)
	send := func(i int) envelope {
		chunk := data[i*chunkSize : min((i+1)*chunkSize, len(data))]
		return d.mustCall("guide_read_file", map[string]any{
			"path":         path,
			"upload_id":    uploadID,
			"chunk_index":  i,
			"chunk_count":  count,
			"content":      base64.StdEncoding.EncodeToString(chunk),
			"encoding":     "base64",
			"chunk_sha256": sha256hex(chunk),
			"sha256":       whole,
		})
	}
	var last envelope
	for n, i := range order {
		last = send(i)
		if i == retry {
			again := send(i)
			if uploadComplete(again) && n < count-1 {
				d.t.Fatalf("retrying chunk %d completed the upload early", i)
			}
			last = again
		}
		if complete := uploadComplete(last); complete != (n == count-1) {
			d.t.Fatalf("after %d of %d chunks complete=%v; reply %+v", n+1, count, complete, last.Data)
		}
		if _, err := os.Stat(d.path(path)); n < count-1 && err == nil {
			d.t.Fatalf("%s visible in the mount after %d of %d chunks", path, n+1, count)
		}
	}
	return last
}

// uploadComplete reports whether a guide_read_file reply says the chunked
// upload is complete.
func uploadComplete(env envelope) bool {
	progress, _ := env.Data["upload"].(map[string]any)
	complete, _ := progress["complete"].(bool)
	return complete
}

// fileState is what the mount shows of one entry.
type fileState struct {
	mode  fs.FileMode
	size  int64
	mtime int64
	hash  string // content hash, or the read error for a file that can't be read
}

// snapshot walks the mount and records every entry's kind, size, mtime and
// content hash, so a test can show that a rejected call changed nothing.
func snapshot(t testing.TB, root string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		st := fileState{mode: info.Mode(), size: info.Size(), mtime: info.ModTime().UnixNano()}
		if de.Type().IsRegular() {
			if b, err := os.ReadFile(p); err != nil {
				st.hash = "error: " + err.Error()
			} else {
				st.hash = sha256hex(b)
			}
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = st
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return out
}

// diffSnapshots describes how two snapshots differ, or returns "".
func diffSnapshots(before, after map[string]fileState) string {
	var diffs []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			diffs = append(diffs, "removed "+p)
		} else if a != b {
			diffs = append(diffs, fmt.Sprintf("changed %s: %+v -> %+v", p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "added "+p)
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "\n")
}

// soak is DEPOTFS_SOAK=1: the tests that repeat something many times or
// size it up, to show it holds at scale, run their long version. By
// default they run a short one that takes the same code paths and makes
// the same checks, so the README's test command stays within minutes.
var soak = os.Getenv("DEPOTFS_SOAK") != ""

// bySoak returns long under DEPOTFS_SOAK=1 and short otherwise.
func bySoak[T any](short, long T) T {
	if soak {
		return long
	}
	return short
}
