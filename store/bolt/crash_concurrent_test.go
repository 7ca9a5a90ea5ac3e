package bolt_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// crashConcurrentEnv names the database the concurrent crash writer uses.
const crashConcurrentEnv = "DEPOTFS_BOLT_CRASH_CONCURRENT_DB"

// crashWriters is how many goroutines write at once, so that writes share
// transactions.
const crashWriters = 16

// concurrentWrite is write i of writer g: a path of its own and content
// that depends on both; every fifth goes through a chunked upload.
func concurrentWrite(g, i int) (path string, data []byte, chunked bool) {
	size := 1 + (g*131+i*7919)%(24<<10)
	unit := []byte(fmt.Sprintf("writer %d write %d;", g, i))
	data = bytes.Repeat(unit, size/len(unit)+1)[:size]
	return fmt.Sprintf("/crash/w%d/f%d", g, i), data, i%5 == 4
}

// TestCrashConcurrentChild is the writer killed by TestCrashConcurrent; it
// does nothing unless re-executed with crashConcurrentEnv set. Each of its
// crashWriters goroutines prints "ack g i" after its write i returned.
func TestCrashConcurrentChild(t *testing.T) {
	path := os.Getenv(crashConcurrentEnv)
	if path == "" {
		t.Skip("only run by TestCrashConcurrent")
	}
	s, err := bolt.Open(path, &bolt.Options{ChunkSize: 4096})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				p, data, chunked := concurrentWrite(g, i)
				var err error
				if chunked {
					file := store.PutRequest{Path: p, SHA256: storetest.Sum(data)}
					half := len(data) / 2
					for j, part := range [][]byte{data[:half], data[half:]} {
						if _, err = s.PutChunk(ctx, store.Chunk{UploadID: fmt.Sprintf("u%d-%d", g, i), Index: j, Count: 2, Data: part, File: file}); err != nil {
							break
						}
					}
				} else {
					_, err = s.Put(ctx, store.PutRequest{Path: p, Data: data})
				}
				mu.Lock()
				if err != nil {
					fmt.Fprintln(out, "write:", err)
					out.Flush()
					os.Exit(2)
				}
				fmt.Fprintf(out, "ack %d %d\n", g, i)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestCrashConcurrent kills crashWriters concurrent writers with SIGKILL and
// checks that every acknowledged write survives, whole: group commit
// acknowledges a write only after the fsync that covers it.
func TestCrashConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	db := filepath.Join(t.TempDir(), "crash.db")
	for round := range 3 {
		acked := crashConcurrentRound(t, db, minAcks(100, round))
		s := openAt(t, db, nil)
		ctx := context.Background()
		n := 0
		for g, last := range acked {
			for i := 0; i <= last; i++ {
				p, data, _ := concurrentWrite(g, i)
				e, err := s.Stat(ctx, p)
				if err != nil {
					t.Errorf("round %d: %s: acknowledged write lost: %v", round, p, err)
					continue
				}
				if e.SHA256 != storetest.Sum(data) {
					t.Errorf("round %d: %s holds %s, want %s", round, p, e.SHA256, storetest.Sum(data))
				} else if got := readAll(t, s, p); !bytes.Equal(got, data) {
					t.Errorf("round %d: %s reads %d bytes that differ from the %d written", round, p, len(got), len(data))
				}
				n++
			}
		}
		if err := bolt.Verify(s); err != nil {
			t.Errorf("round %d: after the crash: %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d acknowledged writes present and intact", round, n)
	}
}

// crashConcurrentRound runs the concurrent writer against db, kills it once
// at least minAcks writes were acknowledged, and returns for each writer the
// highest index it acknowledged (-1: none). A writer acknowledges in order,
// so every index up to that one was acknowledged too. Each round starts
// again from write 0, rewriting the same content.
func crashConcurrentRound(t *testing.T, db string, minAcks int) []int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashConcurrentChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashConcurrentEnv+"="+db)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := make([]int, crashWriters)
	for g := range acked {
		acked[g] = -1
	}
	record := func(line string) bool {
		var g, i int
		if _, err := fmt.Sscanf(line, "ack %d %d", &g, &i); err != nil || g < 0 || g >= crashWriters {
			return false
		}
		acked[g] = max(acked[g], i)
		return true
	}
	lines := bufio.NewScanner(out)
	n := 0
	var other []string
	for n < minAcks && lines.Scan() {
		if record(lines.Text()) {
			n++
		} else {
			other = append(other, lines.Text())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		record(lines.Text())
	}
	cmd.Wait()
	if n < minAcks {
		t.Fatalf("the writers stopped after %d writes:\n%s\n%s", n, strings.Join(other, "\n"), stderr.String())
	}
	return acked
}
