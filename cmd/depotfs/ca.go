package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/auth/ca"
)

// group is the run of a command group: it dispatches to one of subs, or
// prints the group's usage, summary its description.
func group(name, summary string, subs []command) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if r, ok := stderr.(*flagRecorder); ok {
			return r.recordGroup(ctx, name, subs)
		}
		usage := func(w io.Writer) {
			fmt.Fprintf(w, "Usage: depotfs %s <command> [flags]\n\n%s\n\nCommands:\n", name, summary)
			for _, s := range subs {
				fmt.Fprintf(w, "  %-12s %s\n", s.name, s.summary)
			}
			fmt.Fprintf(w, "\nRun 'depotfs %s <command> -h' for its flags.\n", name)
		}
		if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			usage(stdout)
			if len(args) == 0 {
				return usageError{fmt.Errorf("%s needs a command", name)}
			}
			return nil
		}
		for _, s := range subs {
			if s.name == args[0] {
				return s.run(ctx, args[1:], stdout, stderr)
			}
		}
		usage(stderr)
		return usageError{fmt.Errorf("unknown command %q", args[0])}
	}
}

var runCA = group("ca", "A small certificate authority for agents that connect with client certificates (mTLS).", []command{
	{"init", "create a CA (key and certificate) and an empty CRL in a directory", runCAInit},
	{"issue", "issue a key and certificate for an agent, with its grants", runCAIssue},
	{"server-cert", "issue a key and certificate for serve --tls-cert/--tls-key", runCAServerCert},
	{"revoke", "revoke a certificate by serial or file and rewrite the CRL", runCARevoke},
	{"crl", "sign a fresh CRL (run it regularly: a stale CRL refuses every agent)", runCACRL},
})

// caFlags is the flag set of "depotfs ca name", with its --dir: by
// default beside the default database.
func caFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("ca "+name, flag.ContinueOnError)
	return fs, fs.String("dir", filepath.Join(defaultDataDir(), "ca"), "CA `directory` (ca.crt, ca.key, crl.pem, revoked.json)")
}

func days(n int) (time.Duration, error) {
	if n <= 0 || n > 100*365 {
		return 0, usageError{fmt.Errorf("--days %d: want 1 to 36500", n)}
	}
	return time.Duration(n) * 24 * time.Hour, nil
}

func runCAInit(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := caFlags("init")
	name := fs.String("name", "depotfs agents CA", "the CA's common `name`")
	nDays := fs.Int("days", 3650, "`days` the CA certificate stays valid")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	validity, err := days(*nDays)
	if err != nil {
		return err
	}
	c, err := ca.Init(*dir, *name, validity, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "CA %q created in %s, valid until %s\n", *name, c.Dir(), c.Cert().NotAfter.UTC().Format(time.RFC3339))
	fmt.Fprintf(stdout, "  certificate: %s   (serve --client-ca; agents trust the server with it)\n", filepath.Join(c.Dir(), ca.CertFile))
	fmt.Fprintf(stdout, "  private key: %s   (mode 0600; keep it off the server if you can)\n", filepath.Join(c.Dir(), ca.KeyFile))
	fmt.Fprintf(stdout, "  CRL:         %s   (serve --crl; refresh it with 'depotfs ca crl' before %s)\n",
		c.CRLPath(), time.Now().Add(ca.DefaultCRLValidity).UTC().Format(time.DateOnly))
	return nil
}

func runCAIssue(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := caFlags("issue")
	name := fs.String("name", "", "the agent's `name` (required): the certificate's CN and depotfs://<domain>/agent/<name>")
	domain := fs.String("domain", auth.LocalDomain, "the `domain` of the agent's identity URI")
	var grants grantsFlag
	fs.Var(&grants, "grant", "a grant `TOOL:PREFIX:ACCESS` (repeatable; ACCESS r, w or rw), e.g. guide:/projects/a:rw")
	nDays := fs.Int("days", 7, "`days` the certificate stays valid")
	out := fs.String("out", ".", "`directory` for NAME.crt and NAME.key")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *name == "" {
		return usageError{errors.New("--name is required")}
	}
	is, certPath, keyPath, err := issueFiles(*dir, *nDays, *out, *name, func(c *ca.CA, validity time.Duration) (*ca.Issued, error) {
		return c.IssueAgent(ca.AgentRequest{Name: *name, Domain: *domain, Grants: grants.grants, Validity: validity}, time.Now())
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "issued %s (serial %s), valid until %s\n", is.Cert.URIs[0], is.Cert.SerialNumber.Text(16),
		is.Cert.NotAfter.UTC().Format(time.RFC3339))
	fmt.Fprintf(stdout, "  grants:      %s\n", grantsOrNone(grants.String()))
	fmt.Fprintf(stdout, "  certificate: %s\n  private key: %s (mode 0600)\n", certPath, keyPath)
	return nil
}

func grantsOrNone(s string) string {
	if s == "" {
		return "none (the agent can authenticate but do nothing)"
	}
	return s
}

func runCAServerCert(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := caFlags("server-cert")
	var hosts []string
	fs.Func("host", "a DNS `name` or IP address agents use to reach the server (repeatable, required)", appendTo(&hosts))
	nDays := fs.Int("days", 90, "`days` the certificate stays valid")
	out := fs.String("out", ".", "`directory` for server.crt and server.key")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if len(hosts) == 0 {
		return usageError{errors.New("--host is required")}
	}
	is, certPath, keyPath, err := issueFiles(*dir, *nDays, *out, "server", func(c *ca.CA, validity time.Duration) (*ca.Issued, error) {
		return c.IssueServer(hosts, validity, time.Now())
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "issued a server certificate for %v, valid until %s\n", hosts, is.Cert.NotAfter.UTC().Format(time.RFC3339))
	fmt.Fprintf(stdout, "  --tls-cert %s --tls-key %s\n", certPath, keyPath)
	return nil
}

func runCARevoke(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := caFlags("revoke")
	pos, err := parseFlagsArgs(fs, args, stderr, 1, "one SERIAL or CERTFILE")
	if err != nil {
		return err
	}
	c, err := ca.Open(*dir)
	if err != nil {
		return err
	}
	var serial *big.Int
	if _, statErr := os.Stat(pos[0]); statErr == nil {
		serial, err = c.SerialOf(pos[0])
	} else {
		serial, err = ca.ParseSerial(pos[0])
	}
	if err != nil {
		return err
	}
	crl, added, err := c.Revoke(serial, time.Now())
	if err != nil {
		return err
	}
	if added {
		fmt.Fprintf(stdout, "revoked serial %s; wrote %s\n", serial.Text(16), crl)
	} else {
		fmt.Fprintf(stdout, "serial %s was already revoked; wrote %s\n", serial.Text(16), crl)
	}
	fmt.Fprintln(stdout, "A server reading this CRL (serve --crl) refuses the certificate from its next request; copy the file to servers that read another path.")
	if next, err := crlNextUpdate(crl); err == nil {
		fmt.Fprintf(stdout, "The CRL is valid until %s: re-sign it before then with 'depotfs ca crl' (servers refuse every certificate once it has expired; serve warns a week ahead).\n", next.UTC().Format(time.RFC3339))
	}
	return nil
}

func runCACRL(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, dir := caFlags("crl")
	nDays := fs.Int("days", 30, "`days` the CRL stays valid")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	validity, err := days(*nDays)
	if err != nil {
		return err
	}
	c, err := ca.Open(*dir)
	if err != nil {
		return err
	}
	path, next, err := c.WriteCRL(validity, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s, next update due %s (every agent is refused after that until a fresh CRL is installed)\n",
		path, next.UTC().Format(time.RFC3339))
	return nil
}

// issueFiles opens the CA in caDir, has it issue a certificate valid for nDays
// days, and writes it as NAME.crt and NAME.key (0600) into dir, refusing to
// replace existing files.
func issueFiles(caDir string, nDays int, dir, name string, issue func(*ca.CA, time.Duration) (*ca.Issued, error)) (is *ca.Issued, certPath, keyPath string, err error) {
	validity, err := days(nDays)
	if err != nil {
		return nil, "", "", err
	}
	c, err := ca.Open(caDir)
	if err != nil {
		return nil, "", "", err
	}
	if is, err = issue(c, validity); err != nil {
		return nil, "", "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", "", err
	}
	certPath, keyPath = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := writeNew(keyPath, is.KeyPEM, 0o600); err != nil {
		return nil, "", "", err
	}
	if err := writeNew(certPath, is.CertPEM, 0o644); err != nil {
		os.Remove(keyPath)
		return nil, "", "", err
	}
	return is, certPath, keyPath, nil
}

// writeNew creates path with data, failing if it exists.
func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("%w (move the old file away first)", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// appendTo is the Func of a repeatable flag whose values go to *list.
func appendTo(list *[]string) func(string) error {
	return func(v string) error { *list = append(*list, v); return nil }
}
