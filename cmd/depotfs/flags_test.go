package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
)

func TestEnvName(t *testing.T) {
	for flagName, want := range map[string]string{
		"db":             "DEPOTFS_DB",
		"max-file-size":  "DEPOTFS_MAX_FILE_SIZE",
		"upload-timeout": "DEPOTFS_UPLOAD_TIMEOUT",
	} {
		if got := envName(flagName); got != want {
			t.Errorf("envName(%q) = %q, want %q", flagName, got, want)
		}
	}
}

// TestParseFlagsPrecedence checks that a flag beats the environment, which
// beats the default.
func TestParseFlagsPrecedence(t *testing.T) {
	newSet := func() (*flag.FlagSet, *string, *time.Duration) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		mount := fs.String("mount", "/mnt/default", "")
		timeout := fs.Duration("upload-timeout", time.Hour, "")
		return fs, mount, timeout
	}
	tests := []struct {
		name        string
		env         map[string]string
		args        []string
		wantMount   string
		wantTimeout time.Duration
	}{
		{"defaults", nil, nil, "/mnt/default", time.Hour},
		{"environment", map[string]string{"DEPOTFS_MOUNT": "/env", "DEPOTFS_UPLOAD_TIMEOUT": "5m"}, nil, "/env", 5 * time.Minute},
		{"flag beats environment", map[string]string{"DEPOTFS_MOUNT": "/env"}, []string{"--mount", "/flag"}, "/flag", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs, mount, timeout := newSet()
			if err := parseFlags(fs, tt.args, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			if *mount != tt.wantMount || *timeout != tt.wantTimeout {
				t.Errorf("mount %q timeout %v, want %q %v", *mount, *timeout, tt.wantMount, tt.wantTimeout)
			}
		})
	}
}

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"bad env value", map[string]string{"DEPOTFS_UPLOAD_TIMEOUT": "soon"}, nil, "DEPOTFS_UPLOAD_TIMEOUT"},
		{"bad env size", map[string]string{"DEPOTFS_MAX_FILE_SIZE": "10 parsecs"}, nil, "DEPOTFS_MAX_FILE_SIZE"},
		{"unknown flag", nil, []string{"--nope"}, "nope"},
		{"stray argument", nil, []string{"extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.Duration("upload-timeout", time.Hour, "")
			var size byteSize
			fs.Var(&size, "max-file-size", "")
			err := parseFlags(fs, tt.args, &bytes.Buffer{})
			if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseFlags error %v, want a usage error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestToolsFlag(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []mcpserver.Profile
	}{
		{"default", nil, nil, []mcpserver.Profile{"guide", "provider"}},
		{"flag", nil, []string{"--tools", "fs"}, []mcpserver.Profile{"guide", "fs"}},
		{"environment", map[string]string{"DEPOTFS_TOOLS": "provider,fs"}, nil, []mcpserver.Profile{"guide", "provider", "fs"}},
		{"flag beats environment", map[string]string{"DEPOTFS_TOOLS": "fs"}, []string{"--tools", "guide"}, []mcpserver.Profile{"guide"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var cfg serveConfig
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			cfg.flags(fs)
			if err := parseFlags(fs, tt.args, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			if err := cfg.validate(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.profiles, tt.want) {
				t.Errorf("profiles %q, want %q", cfg.profiles, tt.want)
			}
		})
	}
}

func TestCheckListen(t *testing.T) {
	mtls := &authConfig{tlsCert: "s.crt", tlsKey: "s.key", clientCA: "ca.crt", crl: "crl.pem"}
	tokensTLS := &authConfig{tlsCert: "s.crt", tlsKey: "s.key", tokensOn: true}
	tokensPlain := &authConfig{tokensOn: true}
	tlsOnly := &authConfig{tlsCert: "s.crt", tlsKey: "s.key"}
	none := &authConfig{}
	tests := []struct {
		addr     string
		insecure bool
		auth     *authConfig
		want     string // "" means accepted
	}{
		{"127.0.0.1:7411", false, none, ""},
		{"[::1]:7411", false, none, ""},
		{"localhost:7411", false, none, ""},
		{"0.0.0.0:7411", false, none, "no authentication is configured"},
		{":7411", false, none, "no authentication is configured"},
		{"192.0.2.10:7411", false, none, "no authentication is configured"},
		{"192.0.2.10:7411", false, tlsOnly, "no authentication is configured"},
		{"0.0.0.0:7411", true, none, ""},
		{"0.0.0.0:7411", false, mtls, ""},
		{"0.0.0.0:7411", false, tokensTLS, ""},
		{"0.0.0.0:7411", false, tokensPlain, "clear text"},
		{"0.0.0.0:7411", true, tokensPlain, ""},
		{"no-port", false, none, "missing port"},
	}
	for _, tt := range tests {
		err := checkListen(tt.addr, tt.insecure, tt.auth)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("checkListen(%q, insecure=%v, %s) = %v, want %q", tt.addr, tt.insecure, tt.auth.methods(), err, tt.want)
		}
	}
}

// TestServeRefusesBadConfiguration runs the serve command with settings it
// must refuse before opening the database or mounting anything.
func TestServeRefusesBadConfiguration(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--db", dir + "/depot.db", "--mount", dir + "/mnt"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"public listen", []string{"--listen", "0.0.0.0:7411"}, "not a loopback address"},
		{"stdio and listen", []string{"--stdio", "--listen", "127.0.0.1:1"}, "exclusive"},
		{"bad umask", []string{"--umask", "999"}, "--umask"},
		{"tls cert without key", []string{"--tls-cert", "s.crt"}, "go together"},
		{"client CA without TLS", []string{"--client-ca", "ca.crt", "--crl", "crl.pem"}, "needs --tls-cert"},
		{"client CA without CRL", []string{"--tls-cert", "s.crt", "--tls-key", "s.key", "--client-ca", "ca.crt"}, "needs --crl"},
		{"CRL without client CA", []string{"--crl", "crl.pem"}, "needs --client-ca"},
		{"legacy without client CA", []string{"--accept-legacy-grants"}, "needs --client-ca"},
		{"tokens with stdio", []string{"--stdio", "--tokens", "t.json"}, "not --stdio"},
		{"bad grant", []string{"--grants", "guide:relative:rw"}, "invalid grant"},
		{"public listen with plain tokens", []string{"--listen", "0.0.0.0:7411", "--tokens", "t.json"}, "clear text"},
		{"bad store size", []string{"--max-store-size", "lots"}, "max-store-size"},
		{"negative file size", []string{"--max-file-size", "-1"}, "max-file-size"},
		{"file limit over the store limit", []string{"--max-store-size", "1GiB", "--max-file-size", "2GiB"}, "could never be stored"},
		{"zero fetch timeout", []string{"--fetch-timeout", "0s"}, "--fetch-timeout"},
		{"negative upload ttl", []string{"--upload-ttl", "-1h"}, "--upload-ttl"},
		{"unknown tool profile", []string{"--tools", "guide,shell"}, `unknown tool profile "shell"`},
		{"no tool profile", []string{"--tools", ""}, "no tool profile"},
		{"zero resource page", []string{"--resource-page-size", "0"}, "--resource-page-size"},
		{"negative resource limit", []string{"--max-resource-bytes", "-1"}, "--max-resource-bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve"}, append(base, tt.args...)...), &bytes.Buffer{}, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), tt.want)
			}
			if _, err := os.Stat(dir + "/depot.db"); err == nil {
				t.Errorf("refused configuration still created the database")
			}
		})
	}
}

// TestServeLimitFlags checks the defaults of the limit flags and that each
// can come from the environment or the command line.
func TestServeLimitFlags(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		store   byteSize
		file    byteSize
		fetch   time.Duration
		uploads time.Duration
	}{
		{"defaults", nil, nil, 10 << 30, 100 << 20, 30 * time.Second, 24 * time.Hour},
		{"environment", map[string]string{
			"DEPOTFS_MAX_STORE_SIZE": "512MiB", "DEPOTFS_MAX_FILE_SIZE": "1MB",
			"DEPOTFS_FETCH_TIMEOUT": "2s", "DEPOTFS_UPLOAD_TTL": "1m",
		}, nil, 512 << 20, 1e6, 2 * time.Second, time.Minute},
		{"flags", map[string]string{"DEPOTFS_MAX_STORE_SIZE": "512MiB"},
			[]string{"--max-store-size", "10GB", "--max-file-size", "0", "--fetch-timeout", "1m", "--upload-ttl", "0"},
			10e9, 0, time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var cfg serveConfig
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			cfg.flags(fs)
			if err := parseFlags(fs, tt.args, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			if cfg.maxStoreSize != tt.store || cfg.maxFileSize != tt.file || cfg.fetchTimeout != tt.fetch || cfg.uploadTTL != tt.uploads {
				t.Errorf("store %v file %v fetch %v uploads %v", &cfg.maxStoreSize, &cfg.maxFileSize, cfg.fetchTimeout, cfg.uploadTTL)
			}
		})
	}
}

// TestServeFileLimitFollowsStoreLimit checks that the default
// --max-file-size shrinks to a smaller --max-store-size, and that a file
// limit the operator gave is kept (or refused when it cannot fit).
func TestServeFileLimitFollowsStoreLimit(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		file byteSize
		err  string
	}{
		{"defaults", nil, nil, 100 << 20, ""},
		{"small store", nil, []string{"--max-store-size", "3584KiB"}, 3584 << 10, ""},
		{"small store from the environment", map[string]string{"DEPOTFS_MAX_STORE_SIZE": "1MiB"}, nil, 1 << 20, ""},
		{"explicit smaller file limit", nil, []string{"--max-store-size", "3584KiB", "--max-file-size", "1MiB"}, 1 << 20, ""},
		{"unlimited store", nil, []string{"--max-store-size", "0"}, 100 << 20, ""},
		{"explicit larger file limit", nil, []string{"--max-store-size", "3584KiB", "--max-file-size", "100MiB"}, 0, "could never be stored"},
		{"larger file limit from the environment", map[string]string{"DEPOTFS_MAX_FILE_SIZE": "100MiB"}, []string{"--max-store-size", "1MiB"}, 0, "could never be stored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var cfg serveConfig
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			cfg.flags(fs)
			if err := parseFlags(fs, tt.args, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			cfg.noteSet(fs)
			err := cfg.validate()
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("validate: %v, want an error containing %q", err, tt.err)
			case tt.err == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tt.err == "" && cfg.maxFileSize != tt.file:
				t.Errorf("--max-file-size is %v, want %v", &cfg.maxFileSize, &tt.file)
			}
		})
	}
}
