package main

import (
	"errors"
	"math"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1048576", 1 << 20, true},
		{"512MiB", 512 << 20, true},
		{"512mib", 512 << 20, true},
		{"512Mi", 512 << 20, true},
		{"512 MiB", 512 << 20, true},
		{" 100MiB ", 100 << 20, true},
		{"10GB", 10e9, true},
		{"10G", 10e9, true},
		{"10gb", 10e9, true},
		{"1kB", 1000, true},
		{"1KiB", 1024, true},
		{"3TiB", 3 << 40, true},
		{"2PB", 2e15, true},
		{"7B", 7, true},
		{"1.5KiB", 1536, true},
		{"1.50KiB", 1536, true},
		{"0.5MB", 500000, true},
		{"8191PiB", 8191 << 50, true},
		{"9223372036854775807", math.MaxInt64, true},

		{"", 0, false},
		{"MiB", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},       // not whole bytes
		{"1.0001KiB", 0, false}, // not whole bytes
		{".5GB", 0, false},
		{"5.GB", 0, false},
		{"1.2.3MB", 0, false},
		{"1e9", 0, false},
		{"10 GB extra", 0, false},
		{"10  GB", 0, false},
		{"10XB", 0, false},
		{"8192PiB", 0, false}, // overflows int64
		{"9223372036854775808", 0, false},
		{"99999999999999999999", 0, false},
		{"1.0000000001GB", 0, false}, // too many fraction digits
		{"１０MB", 0, false},           // full-width digits
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSize(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("parseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
			if err != nil && !errors.Is(err, errSize) {
				t.Errorf("error %v does not wrap errSize", err)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 1: "1", 1024: "1KiB", 100 << 20: "100MiB", 10e9: "10GB", 1536: "1536", 1500: "1500",
		10 << 30: "10GiB", 1e3: "1kB", math.MaxInt64: "9223372036854775807",
	} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := parseSize(formatSize(n)); err != nil || back != n {
			t.Errorf("parseSize(formatSize(%d)) = %d, %v", n, back, err)
		}
	}
}

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 49357: "48.2 KiB", 100 << 20: "100.0 MiB", 3 << 40: "3.0 TiB",
	} {
		if got := humanSize(n); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzParseSize checks that any input either fails cleanly or gives a
// non-negative size that formats and parses back to itself.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "512MiB", "10GB", "1.5KiB", "1.0001KiB", "8192PiB", " 7 b", "1e9", "..", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err != nil {
			if !errors.Is(err, errSize) {
				t.Fatalf("parseSize(%q): error %v does not wrap errSize", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("parseSize(%q) = %d, negative", s, n)
		}
		if back, err := parseSize(formatSize(n)); err != nil || back != n {
			t.Fatalf("parseSize(%q) = %d, but formatSize gives %q which parses to %d, %v", s, n, formatSize(n), back, err)
		}
	})
}
