package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// readEnvFile reads DEPOTFS_<FLAG>=value settings from a file in the
// subset of systemd's EnvironmentFile syntax that depotfs needs: one
// assignment a line, blank lines and lines starting with # or ; ignored,
// an optional "export ", values optionally in single or double quotes.
// Variables not starting with DEPOTFS_ are skipped, so the same file can
// serve other programs. It returns flag names ("log-level") to values.
func readEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--env-file: %w", err)
	}
	vals := map[string]string{}
	for i, raw := range strings.Split(string(data), "\n") {
		n, line := i+1, strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("--env-file %s:%d: want NAME=value, got %q", path, n, line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			if val[0] == '"' {
				if val, err = strconv.Unquote(val); err != nil {
					return nil, fmt.Errorf("--env-file %s:%d: %s: %w", path, n, key, err)
				}
			} else {
				val = val[1 : len(val)-1]
			}
		}
		name, ok := strings.CutPrefix(key, envPrefix)
		if !ok {
			continue
		}
		vals[strings.ToLower(strings.ReplaceAll(name, "_", "-"))] = val
	}
	return vals, nil
}

// errEnvFileFlag reports a setting in the env file that is not a flag of
// the command.
var errEnvFileFlag = errors.New("not a flag of this command")

// applyEnvFile sets each flag of fs named in the env file at path, unless
// the command line or the environment set it already (they win over the
// file, as the environment wins over a default). It returns the names of
// the flags set before the file was applied, and the file's settings.
func applyEnvFile(fs *flag.FlagSet, path string) (explicit map[string]bool, vals map[string]string, err error) {
	explicit = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if vals, err = readEnvFile(path); err != nil {
		return nil, nil, err
	}
	for name, v := range vals {
		if fs.Lookup(name) == nil || name == "env-file" {
			return nil, nil, fmt.Errorf("--env-file %s: %s: %w", path, envName(name), errEnvFileFlag)
		}
		if explicit[name] {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return nil, nil, fmt.Errorf("--env-file %s: %s=%q: %w", path, envName(name), v, err)
		}
	}
	return explicit, vals, nil
}
