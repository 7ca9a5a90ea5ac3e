package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/sdnotify"
)

// reloader is what SIGHUP does to a running "depotfs serve": it reads the
// tokens file and the CRL again at once, and, from --env-file, the log
// level and the local grants, unless the command line or the environment
// fixed them. Calls in flight, sessions and the mount carry on.
type reloader struct {
	log      *slog.Logger
	level    *slog.LevelVar
	notifier *sdnotify.Notifier
	auth     *httpAuth
	envFile  string
	explicit map[string]bool   // flags set on the command line or in the environment
	started  map[string]string // the env file's settings at start
	grants   func([]grant.Grant)
}

// run reloads on every signal from hup until ctx is done.
func (r *reloader) run(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := r.notifier.Reloading(); err != nil {
				r.log.Warn("systemd notification failed", "err", err)
			}
			r.reload()
			notify(r.log, r.notifier, sdnotify.Ready, "STATUS=serving (reloaded)")
		}
	}
}

// reload does one reload and logs what it did. A part that fails leaves
// the rest reloaded; an unusable tokens file or CRL refuses every
// credential of its kind until it is fixed, as it would without a signal.
func (r *reloader) reload() {
	var errs []error
	attrs := []any{}
	if r.auth.tokens != nil {
		if err := r.auth.tokens.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("tokens: %w", err))
		}
		attrs = append(attrs, "tokens", "reloaded")
	}
	if r.auth.crl != nil {
		if err := r.auth.crl.Reload(); err != nil {
			errs = append(errs, fmt.Errorf("crl: %w", err))
		}
		attrs = append(attrs, "crl", "reloaded")
	}
	if r.envFile != "" {
		more, err := r.reloadEnvFile()
		attrs, errs = append(attrs, more...), append(errs, err) // errors.Join drops a nil
	} else {
		attrs = append(attrs, "log_level", "fixed (no --env-file)", "grants", "fixed (no --env-file)")
	}
	if err := errors.Join(errs...); err != nil {
		r.log.Error("SIGHUP: reload incomplete; still serving", append(attrs, "err", err)...)
		return
	}
	r.log.Info("SIGHUP: reloaded; still serving", attrs...)
}

// reloadEnvFile applies the env file's log level and grants, and warns
// about other settings that changed since start, which need a restart.
func (r *reloader) reloadEnvFile() ([]any, error) {
	vals, err := readEnvFile(r.envFile)
	if err != nil {
		return nil, err
	}
	var attrs []any
	var errs []error
	if r.explicit["log-level"] {
		attrs = append(attrs, "log_level", "fixed by the command line or environment")
	} else {
		level := slog.LevelInfo
		if v, ok := vals["log-level"]; ok {
			if err := level.UnmarshalText([]byte(v)); err != nil {
				errs = append(errs, fmt.Errorf("--env-file %s: %s=%q: %w", r.envFile, envName("log-level"), v, err))
			}
		}
		if len(errs) == 0 {
			r.level.Set(level)
			attrs = append(attrs, "log_level", level.String())
		}
	}
	if r.explicit["grants"] || r.grants == nil {
		attrs = append(attrs, "grants", "fixed by the command line or environment")
	} else if v, ok := vals["grants"]; ok {
		var g grantsFlag
		if err := g.Set(v); err != nil {
			errs = append(errs, fmt.Errorf("--env-file %s: %s=%q: %w", r.envFile, envName("grants"), v, err))
		} else {
			r.grants(append([]grant.Grant{}, g.grants...)) // non-nil: exactly these
			attrs = append(attrs, "grants", g.String())
		}
	} else {
		r.grants(nil)
		attrs = append(attrs, "grants", "all")
	}
	for name, v := range vals {
		if name != "log-level" && name != "grants" && !r.explicit[name] && r.started[name] != v {
			r.log.Warn("SIGHUP: a setting changed in --env-file takes effect only on restart", "setting", envName(name))
		}
	}
	for name := range r.started {
		if _, ok := vals[name]; !ok && name != "log-level" && name != "grants" && !r.explicit[name] {
			r.log.Warn("SIGHUP: a setting removed from --env-file takes effect only on restart", "setting", envName(name))
		}
	}
	return attrs, errors.Join(errs...)
}
