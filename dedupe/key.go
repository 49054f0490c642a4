package dedupe

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// HashSize is the length of a [Hash] in bytes.
const HashSize = 16

// Key identifies one event for deduplication. Two deliveries are the same
// event exactly when all five fields are equal.
type Key struct {
	// Tenant is the account the event belongs to; empty for single-tenant sources.
	Tenant string
	// Provider names the sender (stripe, hubspot, ...) or the source.
	Provider string
	// ObjectType is the kind of object the event is about (charge, deal, ...).
	ObjectType string
	// Action is what happened to it (created, propertyChange, ...).
	Action string
	// EventID is the provider's identifier of the event within that scope.
	EventID string
}

// Hash is the stored form of a [Key]: SHA-256 over the length-prefixed
// fields, truncated to [HashSize] bytes.
type Hash [HashSize]byte

// HashFromBytes reads a hash as a store keeps it: HashSize bytes.
func HashFromBytes(raw []byte) (Hash, error) {
	var h Hash
	if len(raw) != len(h) {
		return h, fmt.Errorf("dedupe: a stored hash of %d bytes, want %d", len(raw), len(h))
	}
	copy(h[:], raw)
	return h, nil
}

// Hash returns the key's hash. Each field is prefixed with its length, so no
// two different keys hash alike by moving bytes between fields
// ("ab"+"c" and "a"+"bc" differ).
func (k Key) Hash() Hash {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	for _, f := range [...]string{k.Tenant, k.Provider, k.ObjectType, k.Action, k.EventID} {
		n := binary.PutUvarint(buf[:], uint64(len(f)))
		h.Write(buf[:n])
		h.Write([]byte(f))
	}
	var sum [sha256.Size]byte
	var out Hash
	copy(out[:], h.Sum(sum[:0]))
	return out
}

// Scope is the readable form of everything but the event id:
// "tenant/provider/objecttype/action", with empty parts left empty.
func (k Key) Scope() string {
	return strings.Join([]string{k.Tenant, k.Provider, k.ObjectType, k.Action}, "/")
}

// String is the readable form of the whole key: its scope, then the event id.
func (k Key) String() string {
	return k.Scope() + "/" + k.EventID
}

// String returns the hash in lower-case hex.
func (h Hash) String() string {
	return hex.EncodeToString(h[:])
}

// ParseHash reads a hash written by [Hash.String].
func ParseHash(s string) (Hash, error) {
	var h Hash
	if hex.DecodedLen(len(s)) != HashSize {
		return h, fmt.Errorf("dedupe: hash %q: want %d hex characters", s, 2*HashSize)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("dedupe: hash %q: %w", s, err)
	}
	return h, nil
}
