package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// crlWarnBefore is how long before a CRL's next update serve starts
// warning that it must be re-signed.
const crlWarnBefore = 7 * 24 * time.Hour

// crlNextUpdate reads the next update time of the PEM CRL at path.
func crlNextUpdate(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("crl: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return time.Time{}, fmt.Errorf("crl %s: no PEM block", path)
	}
	rl, err := x509.ParseRevocationList(block.Bytes)
	if err != nil {
		return time.Time{}, fmt.Errorf("crl %s: %w", path, err)
	}
	return rl.NextUpdate, nil
}

// watchCRLExpiry warns, at start and then every hour, while the CRL's next
// update is less than a week away: once it passes, every certificate is
// refused until the CRL is re-signed ('depotfs ca crl'). next is called
// each time, so a reloaded CRL is seen. It returns when ctx ends.
func watchCRLExpiry(ctx context.Context, next func() time.Time, path string, log *slog.Logger) {
	check := func() {
		at := next()
		if left := time.Until(at); left < crlWarnBefore {
			log.Warn("the CRL must be re-signed soon: once it expires every client certificate is refused; run 'depotfs ca crl' and copy it here",
				"crl", path, "next_update", at.UTC().Format(time.RFC3339), "left", left.Round(time.Minute))
		}
	}
	check()
	every(ctx, time.Hour, check)
}

// every runs f every d until ctx is done.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
