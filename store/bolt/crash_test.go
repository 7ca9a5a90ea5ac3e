package bolt_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// crashEnv names the database a re-executed test binary writes to until
// it is killed; crashLimitEnv, when set, its MaxStoreBytes.
const (
	crashEnv      = "DEPOTFS_BOLT_CRASH_DB"
	crashLimitEnv = "DEPOTFS_BOLT_CRASH_LIMIT"
)

// crashLimit is the store limit of TestCrashEvicting: about a third of
// what the crash paths hold, so most writes evict.
const crashLimit = 200 << 10

// crashPaths is how many paths the crash writer cycles through.
const crashPaths = 21

// soak is DEPOTFS_SOAK=1, the switch of the test suite's long versions:
// the crash tests then let their writers run longer before each kill.
var soak = os.Getenv("DEPOTFS_SOAK") != ""

// minAcks is how many acknowledged writes round r of a crash test waits
// for before the kill: more each round, so the kills land at different
// points of the file's growth; three times as many with soak.
func minAcks(base, r int) int {
	if soak {
		base *= 3
	}
	return base + r*base
}

func crashPath(k int) string { return fmt.Sprintf("/crash/d%d/f%d", k%3, k) }

// crashWrite is write i of the crash writer: its path, its content, and
// whether it goes through a chunked upload.
func crashWrite(i int) (path string, data []byte, chunked bool) {
	size := 1 + (i*7919)%(48<<10)
	unit := []byte(fmt.Sprintf("write %d;", i))
	data = bytes.Repeat(unit, size/len(unit)+1)[:size]
	return crashPath(i % crashPaths), data, i%4 == 3
}

// TestCrashChild is the writer killed by TestCrash; it does nothing unless
// re-executed with crashEnv set. It prints "ack i" after write i returned.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("only run by TestCrash")
	}
	limit, _ := strconv.ParseInt(os.Getenv(crashLimitEnv), 10, 64)
	s, err := bolt.Open(path, &bolt.Options{ChunkSize: 4096, MaxStoreBytes: limit})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		p, data, chunked := crashWrite(i)
		if chunked {
			file := store.PutRequest{Path: p, SHA256: storetest.Sum(data)}
			third := len(data) / 3
			parts := [][]byte{data[:third], data[third : 2*third], data[2*third:]}
			for _, j := range []int{1, 2, 0} {
				_, err = s.PutChunk(ctx, store.Chunk{UploadID: fmt.Sprintf("u%d", i), Index: j, Count: 3, Data: parts[j], File: file})
				if err != nil {
					break
				}
			}
		} else {
			_, err = s.Put(ctx, store.PutRequest{Path: p, Data: data})
		}
		if err != nil {
			fmt.Println("write:", err)
			os.Exit(2)
		}
		fmt.Printf("ack %d\n", i)
	}
}

// TestCrash kills a writer with SIGKILL at an arbitrary moment and checks
// that every acknowledged write survives, whole.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	db := filepath.Join(t.TempDir(), "crash.db")
	for round := range 3 {
		acked := crashRound(t, db, minAcks(crashPaths+9, round), 0)
		s := openAt(t, db, nil)
		checkCrash(t, s, acked, false)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrashEvicting is TestCrash with a store limit, so that most writes
// evict: a kill at any moment must leave each write with all of its
// evictions or none of them. A half-evicted state would show as a file
// whose content is gone but still counted, a refs or lru index out of
// step, or a placeholder still referencing its blob; Verify checks all of
// these against the tree and the blobs.
func TestCrashEvicting(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	db := filepath.Join(t.TempDir(), "crash.db")
	for round := range 3 {
		acked := crashRound(t, db, minAcks(crashPaths+9, round), crashLimit)
		s := openAt(t, db, &bolt.Options{MaxStoreBytes: crashLimit})
		checkCrash(t, s, acked, true)
		st, err := s.Stats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.StoredBytes > crashLimit || st.Evictions == 0 {
			t.Errorf("round %d: %+v, want evictions and at most %d bytes stored", round, st, crashLimit)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// crashRound runs the writer against db, kills it after at least minAcks
// acknowledged writes, and returns the highest write index acknowledged.
func crashRound(t *testing.T, db string, minAcks int, limit int64) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+db, fmt.Sprintf("%s=%d", crashLimitEnv, limit))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	acked, n := -1, 0
	var other []string
	for n < minAcks && lines.Scan() {
		line := lines.Text()
		if i, err := strconv.Atoi(strings.TrimPrefix(line, "ack ")); err == nil {
			acked, n = i, n+1
		} else {
			other = append(other, line)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Acknowledgements printed before the kill count too.
	for lines.Scan() {
		if i, err := strconv.Atoi(strings.TrimPrefix(lines.Text(), "ack ")); err == nil {
			acked = i
		}
	}
	cmd.Wait()
	if n < minAcks {
		t.Fatalf("the writer stopped after %d writes:\n%s\n%s", n, strings.Join(other, "\n"), stderr.String())
	}
	return acked
}

// checkCrash verifies the store after a kill: each path holds its last
// acknowledged write or the one in flight (or, evicting, a placeholder of
// one of them), every file reads whole and matches its hash, and the
// file's invariants hold. Every round acknowledges more than crashPaths
// writes, so every path was written.
func checkCrash(t *testing.T, s *bolt.Store, acked int, evicting bool) {
	t.Helper()
	ctx := context.Background()
	allowed := map[string][]string{} // path → acceptable hashes
	sizes := map[string][]int64{}    // path → acceptable sizes
	for i := acked + 1; i > acked-crashPaths; i-- {
		p, data, _ := crashWrite(i)
		allowed[p] = append(allowed[p], storetest.Sum(data))
		sizes[p] = append(sizes[p], int64(len(data)))
	}
	for k := range crashPaths {
		p := crashPath(k)
		e, err := s.Stat(ctx, p)
		if err != nil {
			t.Errorf("%s: acknowledged write lost (acked up to %d): %v", p, acked, err)
			continue
		}
		if evicting && !e.Present {
			if e.SHA256 != "" || !slices.Contains(sizes[p], e.Size) {
				t.Errorf("%s: evicted entry %+v, want a placeholder of a recent write (sizes %d)", p, e, sizes[p])
			}
			continue
		}
		if !slices.Contains(allowed[p], e.SHA256) {
			t.Errorf("%s holds %s, want the last acknowledged write or the one in flight (%q)", p, e.SHA256, allowed[p])
		}
		got := readAll(t, s, p)
		if storetest.Sum(got) != e.SHA256 || int64(len(got)) != e.Size {
			t.Errorf("%s: entry %+v, content of %d bytes hashing to %s", p, e, len(got), storetest.Sum(got))
		}
	}
	if err := bolt.Verify(s); err != nil {
		t.Errorf("after the crash: %v", err)
	}
}
