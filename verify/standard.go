package verify

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names.
const (
	// HeaderWebhookID carries the message id, stable across retries.
	HeaderWebhookID = "webhook-id"
	// HeaderWebhookTimestamp carries the signing time in unix seconds.
	HeaderWebhookTimestamp = "webhook-timestamp"
	// HeaderWebhookSignature carries space-separated "v1,<base64>" entries.
	HeaderWebhookSignature = "webhook-signature"
)

// Standard verifies and signs Standard Webhooks (standardwebhooks.com):
// HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>", sent base64
// in webhook-signature as space-separated "v1,<sig>" entries. Entries of
// other versions are ignored; any matching v1 entry passes.
type Standard struct {
	key       []byte
	now       func() time.Time
	tolerance time.Duration
}

var (
	_ Verifier = (*Standard)(nil)
	_ Signer   = (*Standard)(nil)
)

const schemeStandard = "standard"

// NewStandard returns a Standard Webhooks verifier. secret is "whsec_"
// followed by the base64 key; the base64 key alone is accepted too. The
// tolerance defaults to [DefaultTolerance].
func NewStandard(secret string, opts ...Option) (*Standard, error) {
	o, err := buildOptions(schemeStandard, opts)
	if err != nil {
		return nil, err
	}
	b64 := strings.TrimPrefix(secret, "whsec_")
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(b64)
	}
	if err != nil || len(key) == 0 {
		return nil, fail(schemeStandard, "secret", ErrConfig)
	}
	return &Standard{key: key, now: o.now, tolerance: o.tolerance}, nil
}

// Verify checks webhook-id, webhook-timestamp and webhook-signature.
func (s *Standard) Verify(r *http.Request, body []byte) error {
	if len(s.key) == 0 {
		return fail(schemeStandard, "secret", ErrConfig)
	}
	id, err := header(r, schemeStandard, HeaderWebhookID)
	if err != nil {
		return err
	}
	ts, err := header(r, schemeStandard, HeaderWebhookTimestamp)
	if err != nil {
		return err
	}
	sig, err := header(r, schemeStandard, HeaderWebhookSignature)
	if err != nil {
		return err
	}
	unix, ok := parseDigits(ts)
	if !ok {
		return fail(schemeStandard, "header "+HeaderWebhookTimestamp, ErrMalformed)
	}
	if err := checkTime(schemeStandard, s.now(), time.Unix(unix, 0), s.tolerance); err != nil {
		return err
	}
	var v1 []string
	for entry := range strings.FieldsSeq(sig) {
		version, b64, found := strings.Cut(entry, ",")
		if !found {
			return fail(schemeStandard, "header "+HeaderWebhookSignature, ErrMalformed)
		}
		if version == "v1" {
			v1 = append(v1, b64)
		}
	}
	mac := hmacSHA256(s.key, id+"."+ts, ".", body)
	if !anyBase64Equal(mac, v1) {
		return fail(schemeStandard, "signature", ErrMismatch)
	}
	return nil
}

// Sign sets webhook-timestamp (the signer's clock) and webhook-signature.
// It keeps r's webhook-id when set, so that retries and replays of one
// event carry the same id, and otherwise sets a fresh random "msg_" id.
func (s *Standard) Sign(r *http.Request, body []byte) error {
	if len(s.key) == 0 {
		return fail(schemeStandard, "secret", ErrConfig)
	}
	ensureHeader(r)
	id := strings.TrimSpace(r.Header.Get(HeaderWebhookID))
	if id == "" {
		id = newMessageID()
	}
	ts := strconv.FormatInt(s.now().Unix(), 10)
	mac := hmacSHA256(s.key, id+"."+ts, ".", body)
	r.Header.Set(HeaderWebhookID, id)
	r.Header.Set(HeaderWebhookTimestamp, ts)
	r.Header.Set(HeaderWebhookSignature, "v1,"+base64.StdEncoding.EncodeToString(mac))
	return nil
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newMessageID returns "msg_" and 26 random base32 characters (128 bits).
func newMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "msg_" + strings.ToLower(idEncoding.EncodeToString(b[:]))
}
