package integration_test

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pushProxy is a reverse proxy in front of a daemon, as an operator's
// would be. Before it forwards the nth PUT it calls onPut, which may act
// on the client's disk while push is waiting for that PUT, or replace the
// request body; push has planned every PATH by then.
type pushProxy struct {
	srv    *httptest.Server
	target atomic.Pointer[url.URL]
	puts   atomic.Int64
	onPut  func(n int64, r *http.Request)
	sniff  *sniffListener // with TLS: what arrived in clear text
}

// newPushProxy makes an unstarted proxy; start it with start once the
// daemon it forwards to is known.
func newPushProxy(t *testing.T, onPut func(n int64, r *http.Request)) *pushProxy {
	p := &pushProxy{onPut: onPut}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(p.target.Load())
		pr.Out.Host = pr.In.Host // the daemon builds its URLs on the Host it was reached at
	}, FlushInterval: -1}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && p.onPut != nil {
			p.onPut(p.puts.Add(1), r)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// start forwards to the daemon at mcpURL and starts serving, with TLS
// when tls is set (its certificate written to a PEM file for --ca).
func (p *pushProxy) start(t *testing.T, mcpURL string, tls bool) (endpoint, caFile string) {
	t.Helper()
	u, err := url.Parse(mcpURL)
	if err != nil {
		t.Fatal(err)
	}
	p.target.Store(&url.URL{Scheme: u.Scheme, Host: u.Host})
	if !tls {
		p.srv.Start()
		return p.srv.URL + "/mcp", ""
	}
	p.sniff = &sniffListener{Listener: p.srv.Listener}
	p.srv.Listener = p.sniff
	p.srv.StartTLS()
	caFile = filepath.Join(t.TempDir(), "proxy-ca.pem")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	if err := os.WriteFile(caFile, block, 0o600); err != nil {
		t.Fatal(err)
	}
	return p.srv.URL + "/mcp", caFile
}

// addr is the proxy's host:port, known before it starts.
func (p *pushProxy) addr() string { return p.srv.Listener.Addr().String() }

// sniffListener records the first bytes of every connection that does not
// start a TLS handshake: an HTTP request sent in clear text to a TLS port.
type sniffListener struct {
	net.Listener
	mu    sync.Mutex
	plain bytes.Buffer
}

func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, l: l}, nil
}

// clear is what arrived in clear text.
func (l *sniffListener) clear() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.plain.String()
}

type sniffConn struct {
	net.Conn
	l       *sniffListener
	checked bool
	plain   bool
}

func (c *sniffConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.checked {
		c.checked, c.plain = true, b[0] != 0x16 // a TLS record of type handshake
	}
	if n > 0 && c.plain {
		c.l.mu.Lock()
		c.l.plain.Write(b[:n])
		c.l.mu.Unlock()
	}
	return n, err
}

// runDepotfsIn runs the binary in dir with env added, like runDepotfs
// but for up to five minutes.
func runDepotfsIn(t testing.TB, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runDepotfsWith(t, 5*time.Minute, dir, env, args...)
}

// depotFiles lists the regular files under the depot directory dir
// through the mount, with their content.
func depotFiles(t testing.TB, d *daemon, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	root := d.path(dir)
	filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
		}
		got[strings.TrimPrefix(p, d.mount)] = string(data)
		return nil
	})
	return got
}

// TestPushRefusesSwappedLinks (hostile client side): between the plan and
// the send, a file of a pushed tree is replaced by a link to a secret
// outside it, and a directory by a link to a directory outside it. Push
// must follow neither: nothing outside the tree reaches the depot, and it
// exits non-zero naming the link.
func TestPushRefusesSwappedLinks(t *testing.T) {
	t.Parallel()
	const secret = "root:$6$secret-hash:19000:0:99999:7:::\n"
	for _, swap := range []string{"file", "directory"} {
		t.Run(swap, func(t *testing.T) {
			t.Parallel()
			src, outside := t.TempDir(), t.TempDir()
			mustWrite(t, filepath.Join(outside, "shadow"), secret)
			mustWrite(t, filepath.Join(outside, "f"), secret)
			mustWrite(t, filepath.Join(src, "first.txt"), "first\n")
			tree := filepath.Join(src, "tree")
			mustWrite(t, filepath.Join(tree, "a.txt"), "a\n")
			mustWrite(t, filepath.Join(tree, "shadow"), "harmless\n")
			mustWrite(t, filepath.Join(tree, "sub", "f"), "harmless\n")
			// The swap happens while push waits for its first PUT, after
			// it planned both PATHs.
			p := newPushProxy(t, func(n int64, _ *http.Request) {
				if n != 1 {
					return
				}
				var err error
				if swap == "file" {
					err = errors.Join(os.Remove(filepath.Join(tree, "shadow")),
						os.Symlink(filepath.Join(outside, "shadow"), filepath.Join(tree, "shadow")))
				} else {
					err = errors.Join(os.Rename(filepath.Join(tree, "sub"), filepath.Join(src, "old-sub")),
						os.Symlink(outside, filepath.Join(tree, "sub")))
				}
				if err != nil {
					t.Error(err)
				}
			})
			d := startDaemon(t, daemonConfig{transport: overHTTP})
			endpoint, _ := p.start(t, d.url, false)
			code, stdout, stderr := runDepotfs(t, "push", "--url", endpoint, "--to", "/in",
				filepath.Join(src, "first.txt"), tree)
			if code == 0 {
				t.Errorf("push exit 0 after the swap\n%s\n%s", stdout, stderr)
			}
			if !strings.Contains(stderr, "symbolic link") || !strings.Contains(stderr, "changed") {
				t.Errorf("stderr does not say a link replaced what was planned:\n%s", stderr)
			}
			for p, data := range depotFiles(t, d, "/") {
				if data == secret {
					t.Errorf("%s holds the secret from outside the tree", p)
				}
			}
			if _, err := os.Stat(d.path("/in/first.txt")); err != nil {
				t.Errorf("the PATH before the swapped one was not pushed: %v", err)
			}
		})
	}
}

// TestPushCredentialsStayAtURL (hostile client side): behind a proxy that
// terminates TLS, the daemon sees plain HTTP and hands out an http upload
// URL. Push must not send the bearer token there: it refuses, naming
// --public-url; with serve --public-url the push goes through the proxy.
func TestPushCredentialsStayAtURL(t *testing.T) {
	t.Parallel()
	for _, public := range []bool{false, true} {
		t.Run(fmt.Sprintf("public-url=%v", public), func(t *testing.T) {
			t.Parallel()
			tokens := filepath.Join(t.TempDir(), "tokens.json")
			tok, _ := issueToken(t, tokens, "ci", "guide:/ci:rw")
			p := newPushProxy(t, nil)
			args := []string{"--tokens", tokens}
			if public {
				args = append(args, "--public-url", "https://"+p.addr())
			}
			d := startDaemon(t, daemonConfig{transport: overHTTP, args: args, client: clientAuth{bearer: tok}})
			endpoint, ca := p.start(t, d.url, true)
			src := filepath.Join(t.TempDir(), "f.txt")
			mustWrite(t, src, "pushed through the proxy\n")
			code, stdout, stderr := runDepotfsIn(t, "", []string{"DEPOTFS_TOKEN=" + tok},
				"push", "--url", endpoint, "--ca", ca, "--to", "/ci", src)
			if clear := p.sniff.clear(); strings.Contains(clear, tok) || clear != "" {
				t.Errorf("the proxy's TLS port received clear text (token in it: %v):\n%.300s", strings.Contains(clear, tok), clear)
			}
			_, err := os.Stat(d.path("/ci/f.txt"))
			if public {
				if code != 0 || err != nil {
					t.Errorf("push with --public-url: exit %d, file %v\n%s\n%s", code, err, stdout, stderr)
				}
				return
			}
			if code == 0 || !strings.Contains(stderr, "--public-url") || err == nil {
				t.Errorf("push to an http upload URL behind https: exit %d, stored %v, stderr:\n%s", code, err == nil, stderr)
			}
		})
	}
}

// TestPushManyPaths: a push of 100 PATHs against the default
// --max-conns-per-addr 64 shares one HTTP client, and works.
func TestPushManyPaths(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-conns-per-addr", "64"}})
	src := t.TempDir()
	var paths []string
	for i := range 100 {
		p := filepath.Join(src, fmt.Sprintf("f%03d.txt", i))
		mustWrite(t, p, fmt.Sprintf("file %d\n", i))
		paths = append(paths, p)
	}
	code, stdout, stderr := runDepotfs(t, append([]string{"push", "--url", d.url, "--to", "/many"}, paths...)...)
	if code != 0 || !strings.Contains(stdout, "pushed 100 of 100 paths") {
		t.Fatalf("push of 100 PATHs: exit %d\n%.2000s\n%.2000s", code, stdout, stderr)
	}
	if n := len(depotFiles(t, d, "/many")); n != 100 {
		t.Errorf("%d files on the mount, want 100", n)
	}
}

// TestPushRefusesFileChangedWhileSent: a file rewritten in place (same
// size) while push sends it, alone or inside a tree, is refused with exit
// 1 and nothing of it stored, not stored as a mix of two versions.
func TestPushRefusesFileChangedWhileSent(t *testing.T) {
	t.Parallel()
	const size = 32 << 20 // far more than the socket buffers between push and the proxy
	for _, kind := range []string{"file", "tree"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			src := t.TempDir()
			big := filepath.Join(src, "tree", "big.bin")
			if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(big, bytes.Repeat([]byte{'a'}, size), 0o644); err != nil {
				t.Fatal(err)
			}
			// After the proxy has passed on the first MiB of the PUT, the
			// file is rewritten in place with other bytes.
			p := newPushProxy(t, func(n int64, r *http.Request) {
				r.Body = &rewriteAfter{ReadCloser: r.Body, after: 1 << 20, rewrite: func() {
					f, err := os.OpenFile(big, os.O_WRONLY, 0)
					if err == nil {
						_, err = f.Write(bytes.Repeat([]byte{'b'}, size))
						err = errors.Join(err, f.Close())
					}
					if err != nil {
						t.Error(err)
					}
				}}
			})
			d := startDaemon(t, daemonConfig{transport: overHTTP})
			endpoint, _ := p.start(t, d.url, false)
			path := big
			if kind == "tree" {
				path = filepath.Dir(big)
			}
			code, stdout, stderr := runDepotfs(t, "push", "--url", endpoint, "--to", "/in", path)
			if code == 0 || !strings.Contains(stderr, "changed under depotfs push while it was read") {
				t.Errorf("push of a file rewritten while sent: exit %d\n%s\n%s", code, stdout, stderr)
			}
			if files := depotFiles(t, d, "/"); len(files) != 0 {
				for p, data := range files {
					t.Errorf("%s stored (%d bytes, %d of them 'b')", p, len(data), strings.Count(data, "b"))
				}
			}
		})
	}
}

// rewriteAfter calls rewrite once, after after bytes were read through it.
type rewriteAfter struct {
	io.ReadCloser
	after   int64
	read    int64
	rewrite func()
}

func (r *rewriteAfter) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if r.read < r.after && r.read+int64(n) >= r.after {
		r.rewrite()
	}
	r.read += int64(n)
	return n, err
}

// mustWrite writes a file, with its parent directories.
func mustWrite(t testing.TB, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
