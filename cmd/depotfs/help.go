package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// examples are shown by "depotfs help <command>" after the command's own
// usage, unless that usage has its own Examples section.
var examples = map[string]string{
	"serve": `  depotfs serve
  depotfs serve --mount /mnt/depot --listen 127.0.0.1:7411 --tools guide,provider,fs
  depotfs serve --stdio --no-mount          # for an MCP client that starts depotfs
  depotfs serve --env-file /etc/depotfs/depotfs.env   # settings SIGHUP can reload
  depotfs serve --listen 0.0.0.0:7411 --tls-cert server.crt --tls-key server.key \
      --client-ca ca.crt --crl crl.pem       # agents with client certificates`,
	"ca": `  depotfs ca init
  depotfs ca server-cert --host depot.example.org --out /etc/depotfs
  depotfs ca issue --name build-bot --domain example.org --grant guide:/builds:rw
  depotfs ca revoke /var/lib/depotfs/ca/issued/build-bot.crt`,
	"token": `  depotfs token issue --name ci --grant 'guide:/ci:rw'
  depotfs token list
  depotfs token revoke 0123456789abcdef && systemctl reload depotfs`,
	"audit": `  depotfs audit verify
  depotfs audit query --since 1h --decision deny`,
	"tools":   `  depotfs tools > docs/tools.md`,
	"version": `  depotfs version`,
	"flags":   `  depotfs flags > docs/configuration.md`,
}

// runHelp prints a command's usage, flags and examples on stdout:
// "depotfs help", "depotfs help serve", "depotfs help ca issue".
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name != args[0] || c.name == "help" {
			continue
		}
		var out strings.Builder
		err := c.run(ctx, append(append([]string{}, args[1:]...), "-h"), &out, &out)
		if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.As(err, new(usageError)) {
			return err
		}
		fmt.Fprint(stdout, out.String())
		if ex := examples[c.name]; ex != "" && !strings.Contains(out.String(), "Examples:") {
			fmt.Fprintf(stdout, "\nExamples:\n%s\n", ex)
		}
		return nil
	}
	return usageError{fmt.Errorf("unknown command %q: run 'depotfs help' for the list", args[0])}
}
