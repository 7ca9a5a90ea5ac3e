package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// envPrefix starts the environment variable that backs each flag.
const envPrefix = "DEPOTFS_"

// envName returns the environment variable for a flag: "max-file-size" is
// DEPOTFS_MAX_FILE_SIZE.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// newFlagSet is a command's flag set whose -h prints usage, then the
// flags.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags applies environment variables to the flags of fs, then parses
// args, so a command-line flag wins over the environment, which wins over the
// default. Each flag's usage gains the name of its variable. Run by
// "depotfs flags" (stderr is a *flagRecorder), it records fs and parses
// nothing.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if r, ok := stderr.(*flagRecorder); ok {
		r.sets = append(r.sets, fs)
		return flag.ErrHelp
	}
	fs.SetOutput(stderr)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		f.Usage = fmt.Sprintf("%s (env %s)", f.Usage, envName(f.Name))
		if v, ok := os.LookupEnv(envName(f.Name)); ok && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = usageError{fmt.Errorf("environment %s=%q: %w", envName(f.Name), v, err)}
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %q", fs.Args())}
	}
	return nil
}

// parseFlagsArgs is parseFlags for a command that takes exactly n
// positional arguments (any number when n is negative), which may come
// before, between or after the flags ("token revoke ID --tokens F" as well
// as "token revoke --tokens F ID").
func parseFlagsArgs(fs *flag.FlagSet, args []string, stderr io.Writer, n int, what string) ([]string, error) {
	var pos, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			rest = append(rest, a)
			name := strings.TrimLeft(a, "-")
			if f := fs.Lookup(name); f != nil && !strings.Contains(name, "=") && !isBoolFlag(f) && i+1 < len(args) {
				i++
				rest = append(rest, args[i])
			}
		default:
			pos = append(pos, a)
		}
	}
	if err := parseFlags(fs, rest, stderr); err != nil {
		return nil, err
	}
	if n >= 0 && len(pos) != n {
		return nil, usageError{fmt.Errorf("want %s, got %d arguments %q", what, len(pos), pos)}
	}
	return pos, nil
}

// failIf is an error when bad, else nil: cmp.Or of a list of them is the
// first check that fails.
func failIf(bad bool, format string, a ...any) error {
	if !bad {
		return nil
	}
	return fmt.Errorf(format, a...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
