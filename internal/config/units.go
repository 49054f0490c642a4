package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a [time.Duration] written in YAML as Go duration text ("168h",
// "90s").
type Duration time.Duration

// UnmarshalYAML reads a duration such as "24h" or "1h30m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeError(n, "want a duration such as 24h or 90s")
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return typeError(n, fmt.Sprintf("invalid duration %q: want a number with unit h, m, s or ms, such as 24h", n.Value))
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as [Duration.String] does.
func (d Duration) MarshalYAML() (any, error) {
	return d.String(), nil
}

// String is the duration in Go syntax without trailing zero units: "168h",
// "1h30m", "90ms".
func (d Duration) String() string {
	s := time.Duration(d).String()
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
		return 0, fmt.Errorf("invalid size %q: want a whole number with unit B, KiB, MiB, GiB, KB, MB or GB, such as 1MiB", s)
	}
	return ByteSize(n * mult), nil
}

// UnmarshalYAML reads a size such as 1MiB, or a plain number of bytes.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeError(n, "want a size such as 1MiB")
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return typeError(n, err.Error())
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

// typeError reports a bad value at n's line so that the decoder collects it
// with the other errors of the document instead of stopping at it.
func typeError(n *yaml.Node, msg string) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, msg)}}
}
