package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStoreFlags(t *testing.T) {
	creds := filepath.Join(t.TempDir(), "depot.creds")
	if err := os.WriteFile(creds, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cfg     storeConfig
		servers []string
		err     string // "" for valid
	}{
		{name: "Bolt", cfg: storeConfig{url: "bolt"}},
		{name: "OneServer", cfg: storeConfig{url: "nats://n1:4222"}, servers: []string{"nats://n1:4222"}},
		{name: "Several", cfg: storeConfig{url: "nats://n1:4222,n2:4222,nats://10.0.0.3:4222"},
			servers: []string{"nats://n1:4222", "nats://n2:4222", "nats://10.0.0.3:4222"}},
		{name: "Creds", cfg: storeConfig{url: "nats://n1:4222", creds: creds}, servers: []string{"nats://n1:4222"}},
		{name: "Unknown", cfg: storeConfig{url: "etcd://x:1"}, err: "want bolt or nats://"},
		{name: "Empty", cfg: storeConfig{url: "nats://"}, err: "want bolt or nats://"},
		{name: "NoPort", cfg: storeConfig{url: "nats://n1"}, err: `"n1" is not host:port`},
		{name: "Path", cfg: storeConfig{url: "nats://n1:4222/x"}, err: "is not host:port"},
		{name: "User", cfg: storeConfig{url: "nats://u:p@n1:4222"}, err: "is not host:port"},
		{name: "CredsWithBolt", cfg: storeConfig{url: "bolt", creds: creds}, err: "apply only with --store nats://"},
		{name: "CertWithoutKey", cfg: storeConfig{url: "nats://n1:4222", tlsCert: creds}, err: "go together"},
		{name: "MissingCreds", cfg: storeConfig{url: "nats://n1:4222", creds: creds + ".missing"}, err: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("validate: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("validate: %v, want an error saying %q", err, tc.err)
			case tc.err == "" && !slices.Equal(tc.cfg.servers, tc.servers):
				t.Errorf("servers %q, want %q", tc.cfg.servers, tc.servers)
			}
		})
	}
}
