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
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver"
)

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

// request sends a request with the credentials to path beside the MCP
// endpoint mcpURL (a server's /backup, /import), and returns its response
// when it is 200 OK, with the URL asked. Any other status is an error
// carrying the server's message.
func (c *clientCreds) request(ctx context.Context, method, mcpURL, path string, body io.Reader) (*http.Response, string, error) {
	if err := c.load(); err != nil {
		return nil, "", err
	}
	u, err := url.Parse(mcpURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, "", usageError{fmt.Errorf("--url %q: want http(s)://HOST:PORT/mcp", mcpURL)}
	}
	u.Path, u.RawQuery = path, ""
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, "", err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := &http.Client{}
	if c.tls != nil {
		hc.Transport = &http.Transport{TLSClientConfig: c.tls, Proxy: http.ProxyFromEnvironment}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, "", fmt.Errorf("%s: %s: %s", u, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, u.String(), nil
}

// connect starts an MCP session with the server at url, as client name,
// over hc (nil: one for the credentials), explaining the usual failures
// (no or refused credentials, an untrusted certificate, no server).
func connect(ctx context.Context, url string, creds *clientCreds, name string, hc *http.Client) (*client.Client, error) {
	if hc == nil && creds.tls != nil {
		// HTTP/1.1: with HTTP/2, a refused handshake surfaces as "client
		// conn could not be established" and hides the TLS alert.
		hc = &http.Client{Transport: &http.Transport{TLSClientConfig: creds.tls, Proxy: http.ProxyFromEnvironment}}
	}
	var opts []transport.StreamableHTTPCOption
	if hc != nil {
		opts = append(opts, transport.WithHTTPBasicClient(hc))
	}
	if creds.token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + creds.token}))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
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
		if _, ok := errors.AsType[*transport.AuthorizationRequiredError](err); ok {
			if creds.token != "" {
				return nil, fmt.Errorf("%s refused the bearer token (revoked, expired or unknown: see the server's log)", url)
			}
			return nil, fmt.Errorf("%s requires authentication: give a bearer token (DEPOTFS_TOKEN or --token-file) or a client certificate (--cert, --key)", url)
		}
		if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
			return nil, fmt.Errorf("%s: the server's certificate is not trusted (give the CA that signed it with --ca): %w", url, err)
		}
		if strings.Contains(err.Error(), "remote error: tls:") {
			return nil, fmt.Errorf("%s refused the TLS handshake: it may require a client certificate (--cert, --key), or yours is revoked or from another CA: %w", url, err)
		}
		return nil, fmt.Errorf("connect to %s (is depotfs serve running there?): %w", url, err)
	}
	return c, nil
}

// callGuide calls a guide tool and decodes its envelope's data into data.
func callGuide(ctx context.Context, c *client.Client, tool string, args map[string]any, data any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fmt.Errorf("%s: reply: %w", tool, err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s: reply: %w", tool, err)
	}
	d, err := env.result(fmt.Errorf("%s failed", tool))
	if err != nil {
		return err
	}
	return json.Unmarshal(d, data)
}

// envelope is a reply of the server: a tool's, or a PUT's.
type envelope struct {
	mcpserver.Envelope
	Data json.RawMessage `json:"data"`
}

// result is the reply's data, or the server's refusal, or failed when it
// failed without saying why.
func (e *envelope) result(failed error) (json.RawMessage, error) {
	switch {
	case e.Success:
		return e.Data, nil
	case e.Error != nil:
		return nil, &refusal{typ: string(e.Error.Type), msg: e.Error.Message, retry: e.Error.RetryAfter}
	}
	return nil, failed
}

// serverClient is how the client commands (status, uploads) reach a
// running server: its endpoint, the credentials, a time limit, and whether
// the reply is printed as JSON.
type serverClient struct {
	name    string // the MCP client name the server logs
	url     string
	json    bool
	timeout time.Duration
	creds   clientCreds
}

// flags declares the connection flags; jsonUsage says what --json prints.
func (u *serverClient) flags(fs *flag.FlagSet, jsonUsage string) {
	fs.StringVar(&u.url, "url", "http://127.0.0.1:7411/mcp", "MCP `endpoint` of the running depotfs serve")
	fs.BoolVar(&u.json, "json", false, jsonUsage)
	fs.DurationVar(&u.timeout, "timeout", 10*time.Second, "give up on the server after this long")
	u.creds.flags(fs)
}

// call runs one guide tool on the server and decodes its data into data;
// with --json it prints data to stdout, and says it did.
func (u *serverClient) call(ctx context.Context, stdout io.Writer, tool string, args map[string]any, data any) (printed bool, err error) {
	if u.timeout <= 0 {
		return false, usageError{fmt.Errorf("--timeout %v: want a positive duration", u.timeout)}
	}
	if err := u.creds.load(); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	c, err := connect(ctx, u.url, &u.creds, u.name, nil)
	if err != nil {
		return false, err
	}
	defer c.Close()
	if err := callGuide(ctx, c, tool, args, data); err != nil {
		return false, fmt.Errorf("%s: %w", u.url, err)
	}
	if u.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return true, enc.Encode(data)
	}
	return false, nil
}
