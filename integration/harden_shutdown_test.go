package integration_test

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMLetsReadsFinish is issue 11 point 13: a program that has a
// file open when depotfs gets SIGTERM reads it to its end (within
// --shutdown-timeout); depotfs then unmounts and exits.
func TestSIGTERMLetsReadsFinish(t *testing.T) {
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--shutdown-timeout", "20s"}})
	data := pseudoRandom(8<<20, 11)
	pushChunked(d, "/big.bin", data, 4<<20, "u-big", -1)
	f, err := os.Open(d.path("/big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 1<<20)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the reader is slow: the shutdown has begun
	rest, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading on after SIGTERM: %v", err)
	}
	if !bytes.Equal(append(head, rest...), data) {
		t.Fatal("the file read across SIGTERM differs from what was pushed")
	}
	f.Close()
	if !d.waitExit(20 * time.Second) {
		t.Fatal("depotfs did not exit after the last file was closed")
	}
}
