package dedupe_test

import (
	"strings"
	"testing"

	"github.com/hookgate/hookgate/dedupe"
)

// The expected hashes were computed outside Go: SHA-256 over each field's
// length as an unsigned varint followed by its bytes, truncated to 16 bytes.
// A change of the stored format breaks this test.
func TestKeyHashKnownAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  dedupe.Key
		want string
	}{
		{dedupe.Key{Tenant: "acme", Provider: "stripe", ObjectType: "charge", Action: "succeeded", EventID: "evt_1NirD82eZvKYlo2CIvbtLWuY"}, "3b164de2a847beba250faf665b73de98"},
		{dedupe.Key{Provider: "github", EventID: strings.Repeat("x", 200)}, "fbcdbc81c2a76faf45c1a80fc67fe52a"},
		{dedupe.Key{}, "8855508aade16ec573d21e6a485dfd0a"},
	} {
		if got := tc.key.Hash().String(); got != tc.want {
			t.Errorf("%q: hash %s, want %s", tc.key.String(), got, tc.want)
		}
	}
}

func TestKeyHashFieldBoundaries(t *testing.T) {
	t.Parallel()
	fields := func(k *dedupe.Key) [5]*string {
		return [...]*string{&k.Tenant, &k.Provider, &k.ObjectType, &k.Action, &k.EventID}
	}
	seen := map[dedupe.Hash]dedupe.Key{}
	for i := range 4 {
		for _, pair := range [][2]string{{"ab", "c"}, {"a", "bc"}, {"abc", ""}, {"", "abc"}} {
			var k dedupe.Key
			*fields(&k)[i], *fields(&k)[i+1] = pair[0], pair[1]
			if prev, dup := seen[k.Hash()]; dup && prev != k {
				t.Fatalf("%+v and %+v hash alike", prev, k)
			}
			seen[k.Hash()] = k
		}
	}
}

// FuzzKeyHashSplit moves the boundary between two adjacent fields; the same
// bytes split differently must hash differently.
func FuzzKeyHashSplit(f *testing.F) {
	f.Add("abc", uint8(1), uint8(0), uint8(2))
	f.Add("", uint8(0), uint8(3), uint8(0))
	f.Add(strings.Repeat("y", 300), uint8(128), uint8(2), uint8(127))
	f.Fuzz(func(t *testing.T, s string, cut1, field, cut2 uint8) {
		c1, c2 := int(cut1)%(len(s)+1), int(cut2)%(len(s)+1)
		if c1 == c2 {
			return
		}
		split := func(cut int) dedupe.Key {
			var k dedupe.Key
			fs := [...]*string{&k.Tenant, &k.Provider, &k.ObjectType, &k.Action, &k.EventID}
			i := int(field) % 4
			*fs[i], *fs[i+1] = s[:cut], s[cut:]
			return k
		}
		if a, b := split(c1), split(c2); a.Hash() == b.Hash() {
			t.Fatalf("%+v and %+v hash alike", a, b)
		}
	})
}

func TestKeyHashStable(t *testing.T) {
	t.Parallel()
	k := dedupe.Key{Tenant: "t", Provider: "p", ObjectType: "o", Action: "a", EventID: "e"}
	c := k
	if k.Hash() != c.Hash() {
		t.Fatal("equal keys hash differently")
	}
	c.EventID = "f"
	if k.Hash() == c.Hash() {
		t.Fatal("different event ids hash alike")
	}
}

func TestParseHashRoundTrip(t *testing.T) {
	t.Parallel()
	for _, k := range []dedupe.Key{{}, {Provider: "stripe", EventID: "evt_1"}, {Tenant: "acme", EventID: strings.Repeat("z", 1000)}} {
		h := k.Hash()
		s := h.String()
		if len(s) != 2*dedupe.HashSize || strings.ToLower(s) != s {
			t.Fatalf("String() = %q: want %d lower-case hex digits", s, 2*dedupe.HashSize)
		}
		got, err := dedupe.ParseHash(s)
		if err != nil || got != h {
			t.Fatalf("ParseHash(%q) = %v, %v; want %v", s, got, err, h)
		}
	}
}

func TestParseHashErrors(t *testing.T) {
	t.Parallel()
	valid := dedupe.Key{EventID: "x"}.Hash().String()
	for name, s := range map[string]string{
		"empty":      "",
		"short":      valid[:30],
		"odd short":  valid[:31],
		"odd long":   valid + "0",
		"long":       valid + "00",
		"not hex":    "zz" + valid[2:],
		"space":      " " + valid[1:],
		"0x prefix":  "0x" + valid[2:],
		"multi-byte": "é" + valid[2:],
	} {
		if h, err := dedupe.ParseHash(s); err == nil {
			t.Errorf("%s: ParseHash(%q) = %v, want an error", name, s, h)
		}
	}
}

func TestKeyScopeString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key         dedupe.Key
		scope, full string
	}{
		{dedupe.Key{Tenant: "acme", Provider: "hubspot", ObjectType: "deal", Action: "propertyChange", EventID: "42"}, "acme/hubspot/deal/propertyChange", "acme/hubspot/deal/propertyChange/42"},
		{dedupe.Key{Provider: "github", EventID: "d-1"}, "/github//", "/github///d-1"},
		{dedupe.Key{}, "///", "////"},
	} {
		if got := tc.key.Scope(); got != tc.scope {
			t.Errorf("Scope() = %q, want %q", got, tc.scope)
		}
		if got := tc.key.String(); got != tc.full {
			t.Errorf("String() = %q, want %q", got, tc.full)
		}
	}
}
