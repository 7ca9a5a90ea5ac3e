package mcpserver

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWatchedResponse: a client that stops reading makes a write fail
// with ErrReaderStalled within about the idle limit; one that reads on,
// slower than the minimum rate once the idle limit has passed, fails the
// same way; one that reads everything gets it all.
func TestWatchedResponse(t *testing.T) {
	const idle = 300 * time.Millisecond
	serve := func(minRate int64, total int) (chan error, *httptest.Server) {
		got := make(chan error, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rw := newWatchedResponse(w, HTTPLimits{BodyIdleTimeout: idle, BodyMinRate: minRate})
			chunk := make([]byte, 64<<10)
			var err error
			for n := 0; n < total && err == nil; n += len(chunk) {
				_, err = rw.Write(chunk)
			}
			got <- err
		}))
		t.Cleanup(srv.Close)
		return got, srv
	}
	t.Run("stalled", func(t *testing.T) {
		got, srv := serve(-1, 1<<30)
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close() // never read
		select {
		case err := <-got:
			if !errors.Is(err, ErrReaderStalled) {
				t.Errorf("write to a stalled reader: %v, want ErrReaderStalled", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the write to a stalled reader never failed")
		}
	})
	t.Run("slow", func(t *testing.T) {
		got, srv := serve(1<<30, 1<<30) // a gigabyte a second: no client keeps up
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		go func() {
			buf := make([]byte, 1<<10)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		select {
		case err := <-got:
			if !errors.Is(err, ErrReaderStalled) {
				t.Errorf("write to a slow reader: %v, want ErrReaderStalled", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the write to a slow reader never failed")
		}
	})
	t.Run("reading", func(t *testing.T) {
		got, srv := serve(1<<10, 8<<20)
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != 8<<20 {
			t.Errorf("read %d bytes, %v; want all %d", n, err, 8<<20)
		}
		if err := <-got; err != nil {
			t.Errorf("writes to a reading client: %v", err)
		}
	})
}
