package main

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// byteSize is a number of bytes given on the command line with a human
// unit; it implements flag.Value (and so flag.TextVar's needs).
type byteSize int64

// sizeUnits are the units parseSize accepts, lower case: decimal (powers
// of 1000, as disk makers and SI count) and binary (powers of 1024).
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12, "p": 1e15, "pb": 1e15,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30,
	"ti": 1 << 40, "tib": 1 << 40, "pi": 1 << 50, "pib": 1 << 50,
}

// maxSizeFraction bounds the digits after a decimal point.
const maxSizeFraction = 9

// errSize is wrapped by every error of parseSize.
var errSize = errors.New("want a size such as 512MiB, 10GB, 1.5GiB or a number of bytes")

// parseSize parses a size: a non-negative decimal number, optionally with a
// fraction, then optionally a unit (case-insensitive, an optional space
// before it): B; k/KB, M/MB, G/GB, T/TB, P/PB (powers of 1000); Ki/KiB,
// Mi/MiB, Gi/GiB, Ti/TiB, Pi/PiB (powers of 1024). "512MiB" is 536870912,
// "10GB" 10000000000, "1.5KiB" 1536. The result must be a whole number of
// bytes that fits in an int64. The input comes from flags and the
// environment, so parseSize is strict and fuzzed.
func parseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	i := 0
	for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.') {
		i++
	}
	num, unit := in[:i], strings.ToLower(strings.TrimPrefix(in[i:], " "))
	mult, ok := sizeUnits[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("%q: %w", s, errSize)
	}
	whole, frac, hasPoint := strings.Cut(num, ".")
	if whole == "" || hasPoint && (frac == "" || len(frac) > maxSizeFraction) || strings.Contains(frac, ".") {
		return 0, fmt.Errorf("%q: %w", s, errSize)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, errSize)
	}
	hi, n := bits.Mul64(uint64(w), uint64(mult))
	if hi != 0 || n > math.MaxInt64 {
		return 0, fmt.Errorf("%q: too large: %w", s, errSize)
	}
	if frac == "" {
		return int64(n), nil
	}
	// The fraction times the unit must be whole bytes: f/10^len(frac)*mult.
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, errSize)
	}
	scale := int64(math.Pow10(len(frac)))
	fhi, fn := bits.Mul64(uint64(f), uint64(mult))
	if fhi != 0 || fn%uint64(scale) != 0 {
		return 0, fmt.Errorf("%q: not a whole number of bytes: %w", s, errSize)
	}
	total := n + fn/uint64(scale)
	if total < n || total > math.MaxInt64 {
		return 0, fmt.Errorf("%q: too large: %w", s, errSize)
	}
	return int64(total), nil
}

// formatSize renders n with the largest unit that divides it exactly
// ("100MiB", "10GB", "1536"), so that parseSize gives n back.
func formatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range []struct {
		name string
		mult int64
	}{ // largest first
		{"PiB", 1 << 50}, {"PB", 1e15}, {"TiB", 1 << 40}, {"TB", 1e12}, {"GiB", 1 << 30}, {"GB", 1e9},
		{"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"kB", 1e3},
	} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// humanSize renders n approximately for people: "48.2 KiB".
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

func (b *byteSize) String() string { return formatSize(int64(*b)) }

// Set parses a flag value with parseSize.
func (b *byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}
