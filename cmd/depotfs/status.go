package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver"
)

// statusConfig is what "depotfs status" is told by flags and environment.
type statusConfig struct {
	url     string
	json    bool
	timeout time.Duration
	creds   clientCreds
}

// clientCreds are how a client command authenticates to depotfs serve: a
// bearer token (DEPOTFS_TOKEN, or the first line of --token-file) and/or a
// client certificate (--cert, --key), trusting the server with --ca.
type clientCreds struct {
	tokenFile     string
	cert, key, ca string
	token         string // resolved by load
	tls           *tls.Config
}

func (c *clientCreds) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tokenFile, "token-file", "", "`file` whose first line is a bearer token ('depotfs token issue'); the environment variable DEPOTFS_TOKEN may hold the token itself instead")
	fs.StringVar(&c.cert, "cert", "", "PEM client certificate `file` for a server that requires mTLS ('depotfs ca issue'), with --key")
	fs.StringVar(&c.key, "key", "", "PEM private key `file` of --cert")
	fs.StringVar(&c.ca, "ca", "", "PEM CA certificate `file` to trust the server's certificate with (an https --url); default the system's roots")
}

// load reads the token and the certificates the flags name.
func (c *clientCreds) load() error {
	if (c.cert == "") != (c.key == "") {
		return usageError{errors.New("--cert and --key go together")}
	}
	envToken := strings.TrimSpace(os.Getenv(envPrefix + "TOKEN"))
	switch {
	case c.tokenFile != "" && envToken != "":
		return usageError{errors.New("both --token-file and DEPOTFS_TOKEN are set: choose one")}
	case c.tokenFile != "":
		data, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		line, _, _ := strings.Cut(string(data), "\n")
		if c.token = strings.TrimSpace(line); c.token == "" {
			return fmt.Errorf("--token-file %s: empty", c.tokenFile)
		}
	default:
		c.token = envToken
	}
	if c.cert == "" && c.ca == "" {
		return nil
	}
	c.tls = &tls.Config{MinVersion: tls.VersionTLS13}
	if c.ca != "" {
		pem, err := os.ReadFile(c.ca)
		if err != nil {
			return fmt.Errorf("--ca: %w", err)
		}
		c.tls.RootCAs = x509.NewCertPool()
		if !c.tls.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--ca %s: no PEM certificate in it", c.ca)
		}
	}
	if c.cert != "" {
		cert, err := tls.LoadX509KeyPair(c.cert, c.key)
		if err != nil {
			return fmt.Errorf("--cert/--key: %w", err)
		}
		c.tls.Certificates = []tls.Certificate{cert}
	}
	return nil
}

// options are the mcp-go transport options that present the credentials.
func (c *clientCreds) options() []transport.StreamableHTTPCOption {
	var opts []transport.StreamableHTTPCOption
	if c.tls != nil {
		opts = append(opts, transport.WithHTTPBasicClient(&http.Client{
			// HTTP/1.1: with HTTP/2, a refused handshake surfaces as "client
			// conn could not be established" and hides the TLS alert.
			Transport: &http.Transport{TLSClientConfig: c.tls, Proxy: http.ProxyFromEnvironment},
		}))
	}
	if c.token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + c.token}))
	}
	return opts
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg statusConfig
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:7411/mcp", "MCP `endpoint` of the running depotfs serve")
	fs.BoolVar(&cfg.json, "json", false, "print the statistics as JSON (guide_cache_stats' data) instead of a table")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "give up on the server after this long")
	cfg.creds.flags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: depotfs status [flags]

Asks a running "depotfs serve" for its statistics and limits over MCP (the
guide_cache_stats tool) and prints them. The database allows one process at a
time, so status never opens it: the server must be running and reachable
over streamable HTTP.

A server that requires authentication takes a bearer token (DEPOTFS_TOKEN, or
--token-file) or a client certificate (--cert and --key); an https --url
trusts the server with --ca.

Examples:
  depotfs status
  DEPOTFS_TOKEN=dfs1_... depotfs status --url http://127.0.0.1:7411/mcp
  depotfs status --url https://depot.example.org:7411/mcp \
      --ca ca.crt --cert agent.crt --key agent.key --json

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if cfg.timeout <= 0 {
		return usageError{fmt.Errorf("--timeout %v: want a positive duration", cfg.timeout)}
	}
	if err := cfg.creds.load(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	st, err := fetchStatus(ctx, cfg.url, &cfg.creds)
	if err != nil {
		return err
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return printStatus(stdout, cfg.url, st)
}

// fetchStatus calls guide_cache_stats on the server at url.
func fetchStatus(ctx context.Context, url string, creds *clientCreds) (*mcpserver.CacheStats, error) {
	c, err := connect(ctx, url, creds, "depotfs-status")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var st mcpserver.CacheStats
	if err := callGuide(ctx, c, "guide_cache_stats", map[string]any{}, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return &st, nil
}

// connect starts an MCP session with the server at url, as client name,
// explaining the usual failures (no or refused credentials, an untrusted
// certificate, no server).
func connect(ctx context.Context, url string, creds *clientCreds, name string) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(url, creds.options()...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if err := c.Start(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: version()}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		var authErr *transport.AuthorizationRequiredError
		if errors.As(err, &authErr) {
			if creds.token != "" {
				return nil, fmt.Errorf("%s refused the bearer token (revoked, expired or unknown: see the server's log)", url)
			}
			return nil, fmt.Errorf("%s requires authentication: give a bearer token (DEPOTFS_TOKEN or --token-file) or a client certificate (--cert, --key)", url)
		}
		var verifyErr *tls.CertificateVerificationError
		switch {
		case errors.As(err, &verifyErr):
			return nil, fmt.Errorf("%s: the server's certificate is not trusted (give the CA that signed it with --ca): %w", url, err)
		case strings.Contains(err.Error(), "remote error: tls:"):
			return nil, fmt.Errorf("%s refused the TLS handshake: it may require a client certificate (--cert, --key), or yours is revoked or from another CA: %w", url, err)
		}
		return nil, fmt.Errorf("connect to %s (is depotfs serve running there?): %w", url, err)
	}
	return c, nil
}

// printStatus writes the statistics as a table for people.
func printStatus(w io.Writer, url string, st *mcpserver.CacheStats) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	s, f, l := st.Store, st.Fetch, st.Limits
	bytes := func(n int64) string { return fmt.Sprintf("%s\t(%d bytes)", humanSize(n), n) }
	limit := func(n int64) string {
		if n == 0 {
			return "none"
		}
		return fmt.Sprintf("%s\t(%d bytes)", formatSize(n), n)
	}
	seconds := func(v float64, zero string) string {
		if v == 0 {
			return zero
		}
		return (time.Duration(v * float64(time.Second))).String()
	}
	n := strconv.FormatInt
	rows := [][2]string{
		{"depotfs", url},
		{"revision", strconv.FormatUint(st.Revision, 10)},
		{"", ""},
		{"STORE", ""},
		{"files", n(s.Files, 10)},
		{"placeholders", n(s.Placeholders, 10) + "\t(listed, stale or evicted: read on demand)"},
		{"directories", n(s.Directories, 10)},
		{"stored", bytes(s.StoredBytes)},
		{"files' total size", bytes(s.LogicalBytes)},
		{"saved by dedup", bytes(s.DedupSavedBytes)},
		{"distinct contents", n(s.Blobs, 10)},
		{"uploads in progress", fmt.Sprintf("%d\t(%s)", s.Uploads, humanSize(s.UploadBytes))},
		{"raw uploads arriving", humanSize(s.ReceivingBytes) + "\t(not yet stored; count against the size limit)"},
		{"evictions", fmt.Sprintf("%d\t(%s)", s.Evictions, humanSize(s.EvictedBytes))},
		{"expiries", n(s.Expiries, 10)},
		{"leaked chunks swept", n(s.SweptChunks, 10) + "\t(left by a crashed host; --store nats)"},
		{"cache hits / misses", fmt.Sprintf("%d / %d", s.Hits, s.Misses)},
		{"snapshots", n(s.Snapshots, 10)},
		{"versions kept", fmt.Sprintf("%d\t(%s only they hold)", s.Versions, humanSize(s.HeldBytes))},
		{"", ""},
		{"FETCHES", ""},
	}
	if f.Enabled {
		rows = append(rows,
			[2]string{"pending", fmt.Sprintf("%d\t(%d programs waiting)", f.Pending, f.Waiting)},
			[2]string{"requested", strconv.FormatUint(f.Requested, 10)},
			[2]string{"fetched", strconv.FormatUint(f.Fetched, 10)},
			[2]string{"timed out", strconv.FormatUint(f.TimedOut, 10)},
			[2]string{"abandoned", strconv.FormatUint(f.Abandoned, 10)},
			[2]string{"withdrawn", strconv.FormatUint(f.Withdrawn, 10)},
		)
	} else {
		rows = append(rows, [2]string{"on demand", "off (not mounted)"})
	}
	rows = append(rows,
		[2]string{"", ""},
		[2]string{"LIMITS", ""},
		[2]string{"max store size", limit(l.MaxStoreBytes)},
		[2]string{"max file size", limit(l.MaxFileBytes)},
		[2]string{"max content per call", limit(l.MaxContentBytes)},
		[2]string{"max chunks", strconv.Itoa(l.MaxChunks)},
		[2]string{"fetch timeout", seconds(l.FetchTimeoutSeconds, "none (not mounted)")},
		[2]string{"upload ttl", seconds(l.UploadTTLSeconds, "none (uploads are kept)")},
		[2]string{"keep versions", strconv.Itoa(l.KeepVersions) + "\t(earlier versions of each file)"},
	)
	if len(st.Caller.Limits) > 0 {
		rows = append(rows, [2]string{"", ""}, [2]string{"YOURS", "\t" + st.Caller.Identity})
		for _, q := range st.Caller.Limits {
			rows = append(rows, [2]string{strings.ReplaceAll(q.Name, "_", " "), fmt.Sprintf("%d of %d\t(%s)", q.Held, q.Limit, q.Flag)})
		}
	}
	for _, r := range rows {
		// Every line has a cell, blank ones too, so one alignment spans
		// all sections.
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}
