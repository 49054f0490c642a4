package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a [time.Duration] written in YAML as Go duration text with
// days too ("7d", "1d12h", "90s"): see [ParseDuration].
type Duration time.Duration

// wantDuration says what a duration is.
const wantDuration = "a duration like 30s, 5m, 2h or 7d"

// day is the unit "d" of a duration.
const day = 24 * time.Hour

// ParseDuration reads a duration as [time.ParseDuration] does, and a whole
// number of days before the rest: "7d", "1d12h", "-2d". A day is 24 hours.
// The configuration's durations and the commands' --since and --until are
// read with it.
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("%s: want %s", quote(s), wantDuration)
	sign, rest := "", s
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		sign, rest = rest[:1], rest[1:]
	}
	days, after, ok := strings.Cut(rest, "d")
	if !ok {
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, bad
		}
		return v, nil
	}
	n, err := strconv.ParseUint(days, 10, 64)
	if err != nil || n > math.MaxInt64/uint64(day) {
		return 0, bad
	}
	v := time.Duration(n) * day
	if after != "" {
		r, err := time.ParseDuration(after)
		if err != nil || after[0] == '-' || after[0] == '+' || r > math.MaxInt64-v {
			return 0, bad
		}
		v += r
	}
	if sign == "-" {
		v = -v
	}
	return v, nil
}

// UnmarshalYAML reads a duration such as "24h", "7d" or "1h30m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error { return asTypeError(d.decodeNode(n)) }

func (d *Duration) decodeNode(n *yaml.Node) *FieldError {
	if n.Kind != yaml.ScalarNode {
		return wrongKind(n, wantDuration)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &FieldError{Line: n.Line, Err: err}
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as [Duration.String] does.
func (d Duration) MarshalYAML() (any, error) {
	return d.String(), nil
}

// String is the duration as [ParseDuration] reads it, in whole days first
// and without trailing zero units: "7d", "1d12h", "1h30m", "90ms".
func (d Duration) String() string {
	if d < 0 && d != math.MinInt64 {
		return "-" + (-d).String()
	}
	days, rest := time.Duration(d)/day, time.Duration(d)%day
	if days <= 0 {
		return trimZeroUnits(time.Duration(d).String())
	}
	s := strconv.FormatInt(int64(days), 10) + "d"
	if rest != 0 {
		s += trimZeroUnits(rest.String())
	}
	return s
}

// trimZeroUnits drops the zero minutes and seconds of a Go duration:
// "2h0m0s" is "2h", "5m0s" is "5m".
func trimZeroUnits(s string) string {
	if rest, ok := strings.CutSuffix(s, "m0s"); ok {
		s = rest + "m"
	}
	if rest, ok := strings.CutSuffix(s, "h0m"); ok {
		s = rest + "h"
	}
	return s
}

// ByteSize is a size in bytes, written in YAML as an integer with an optional
// unit: B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (powers of 1000).
type ByteSize int64

// byteUnits lists the units in the order String prefers them.
var byteUnits = []struct {
	name string
	size int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3},
	{"B", 1},
}

// ParseByteSize reads a size such as "1MiB", "512 KB" or "4096".
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	mult := int64(1)
	if unit != "" {
		mult = 0
		for _, u := range byteUnits {
			if u.name == unit {
				mult = u.size
			}
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || mult == 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%s: want %s", quote(s), wantSize)
	}
	return ByteSize(n * mult), nil
}

// wantSize says what a size is.
const wantSize = "a whole number of bytes with a unit of B, KiB, MiB, GiB, KB, MB or GB, such as 1MiB"

// UnmarshalYAML reads a size such as 1MiB, or a plain number of bytes.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error { return asTypeError(b.decodeNode(n)) }

func (b *ByteSize) decodeNode(n *yaml.Node) *FieldError {
	if n.Kind != yaml.ScalarNode {
		return wrongKind(n, wantSize)
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return &FieldError{Line: n.Line, Err: err}
	}
	*b = v
	return nil
}

// MarshalYAML writes the size as [ByteSize.String] does.
func (b ByteSize) MarshalYAML() (any, error) {
	return b.String(), nil
}

// String writes the size in the largest unit that divides it exactly,
// preferring binary units: "1MiB", "1500KB", "7B".
func (b ByteSize) String() string {
	for _, u := range byteUnits {
		if b != 0 && int64(b)%u.size == 0 {
			return strconv.FormatInt(int64(b)/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}
