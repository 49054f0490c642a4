package config

import (
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseByteSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want ByteSize
		str  string
	}{
		{"0", 0, "0B"},
		{"4096", 4096, "4KiB"},
		{"1000", 1000, "1KB"},
		{"7B", 7, "7B"},
		{"1KiB", 1024, "1KiB"},
		{"1MiB", 1 << 20, "1MiB"},
		{"2GiB", 2 << 30, "2GiB"},
		{"1500 KB", 1_500_000, "1500KB"},
		{"3MB", 3_000_000, "3MB"},
		{"1GB", 1_000_000_000, "1GB"},
		{"1025", 1025, "1025B"},
	}
	for _, tt := range tests {
		got, err := ParseByteSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			continue
		}
		if got.String() != tt.str {
			t.Errorf("ByteSize(%d).String() = %q, want %q", got, got.String(), tt.str)
		}
		if back, err := ParseByteSize(got.String()); err != nil || back != got {
			t.Errorf("round trip of %q = %d, %v", got.String(), back, err)
		}
	}
	for _, bad := range []string{"", "MiB", "1 XB", "1mib", "1.5MiB", "-1", "1e6", "9223372036854775807KB", "99999999999999999999"} {
		if got, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", bad, got)
		}
	}
}

func TestByteSizeYAML(t *testing.T) {
	t.Parallel()
	var v struct {
		A ByteSize `yaml:"a"`
		B ByteSize `yaml:"b"`
	}
	if err := yaml.Unmarshal([]byte("a: 2048\nb: 1MiB\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.A != 2048 || v.B != 1<<20 {
		t.Errorf("decoded %+v", v)
	}
	if err := yaml.Unmarshal([]byte("a: [1]\n"), &v); err == nil {
		t.Error("a list decoded as a size")
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want time.Duration
		str  string
	}{
		{"168h", 168 * time.Hour, "7d"},
		{"7d", 7 * 24 * time.Hour, "7d"},
		{"1d12h", 36 * time.Hour, "1d12h"},
		{"36h", 36 * time.Hour, "1d12h"},
		{"30d", 720 * time.Hour, "30d"},
		{"1d0h30m", 24*time.Hour + 30*time.Minute, "1d30m"},
		{"0d", 0, "0s"},
		{"-7d", -7 * 24 * time.Hour, "-7d"},
		{"+2d", 48 * time.Hour, "2d"},
		{"24h", 24 * time.Hour, "1d"},
		{"23h59m", 23*time.Hour + 59*time.Minute, "23h59m"},
		{"1h30m", 90 * time.Minute, "1h30m"},
		{"90s", 90 * time.Second, "1m30s"},
		{"2m", 2 * time.Minute, "2m"},
		{"1h0m30s", time.Hour + 30*time.Second, "1h0m30s"},
		{"250ms", 250 * time.Millisecond, "250ms"},
		{"-1h", -time.Hour, "-1h"},
		{"0s", 0, "0s"},
	}
	for _, tt := range tests {
		var d Duration
		if err := yaml.Unmarshal([]byte(tt.in), &d); err != nil || time.Duration(d) != tt.want {
			t.Errorf("decode %q = %v, %v; want %v", tt.in, time.Duration(d), err, tt.want)
			continue
		}
		if d.String() != tt.str {
			t.Errorf("Duration(%v).String() = %q, want %q", time.Duration(d), d.String(), tt.str)
		}
		if back, err := ParseDuration(d.String()); err != nil || back != tt.want {
			t.Errorf("round trip of %q = %v, %v", d.String(), back, err)
		}
	}
	for _, bad := range []string{"1 hour", "[1h]", "d", "7", "7dd", "1.5d", "d12h", "7d-1h", "7d+1h", "--7d", "7 d",
		"106752d", "106751d24h", "-106752d"} {
		var d Duration
		if err := yaml.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("decode %q succeeded: %v", bad, time.Duration(d))
		}
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, got)
		}
	}
}

// TestParseDuration: the one parser of durations with days, which
// --since and --until read too.
func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{
		"7d":     7 * 24 * time.Hour,
		"1d12h":  36 * time.Hour,
		"90m":    90 * time.Minute,
		"2h":     2 * time.Hour,
		"10d30s": 10*24*time.Hour + 30*time.Second,
		"-1d1h":  -25 * time.Hour,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if got, err := ParseDuration(""); err == nil {
		t.Errorf("ParseDuration(\"\") = %v, want an error", got)
	}
}
