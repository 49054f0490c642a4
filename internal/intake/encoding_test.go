package intake_test

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/hookgate/hookgate/internal/metrics"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// encoders are the content codings a sender may use, by the
// Content-Encoding that names them; "deflate (raw)" sends the raw deflate
// stream some clients send for deflate instead of zlib.
var encoders = map[string]func(io.Writer) io.WriteCloser{
	"gzip": func(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) },
	"deflate": func(w io.Writer) io.WriteCloser {
		return zlib.NewWriter(w)
	},
	"deflate (raw)": func(w io.Writer) io.WriteCloser {
		fw, _ := flate.NewWriter(w, flate.DefaultCompression)
		return fw
	},
}

func encode(t testing.TB, name string, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := encoders[name](&buf)
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// headerName is the Content-Encoding of an encoder's name.
func headerName(name string) string { return strings.TrimSuffix(name, " (raw)") }

// encodedRequest is d with its body encoded with enc, signed over the decoded body.
func (b *bundle) encodedRequest(t *testing.T, d delivery, enc string) *http.Request {
	t.Helper()
	header := map[string]string{"Content-Encoding": headerName(enc)}
	for k, v := range d.header {
		header[k] = v
	}
	req := b.request(t, "/in/"+d.source, nil, encode(t, enc, d.body), header)
	if err := b.sources[d.source].Signer().Sign(req, d.body); err != nil {
		t.Fatal(err)
	}
	return req
}

// A gzip or deflate body, signed over the payload, is decoded before it is
// verified, keyed and stored: every provider's delivery is accepted, the
// stored payload is the decoded body, and the same delivery sent plain is
// its duplicate.
func TestContentEncodingDecoded(t *testing.T) {
	t.Parallel()
	for enc := range encoders {
		b := setup(t, 0)
		for _, d := range deliveries() {
			st, resp := do(t, b.encodedRequest(t, d, enc))
			if st != http.StatusAccepted || len(resp.Events) == 0 {
				t.Fatalf("%s %s: %d %+v, want 202", enc, d.source, st, resp)
			}
			ev, err := b.store.Get(context.Background(), resp.Events[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.source != "crm" && !bytes.Equal(ev.Payload, d.body) {
				t.Errorf("%s %s: stored %q, want the decoded body %q", enc, d.source, ev.Payload, d.body)
			}
			if _, ok := ev.Headers["Content-Encoding"]; ok {
				t.Errorf("%s %s: Content-Encoding kept with the decoded payload", enc, d.source)
			}
			if st, resp := b.post(t, d.source, "/in/"+d.source, d.body, d.header); st != http.StatusOK {
				t.Errorf("%s %s sent plain after: %d %+v, want 200 duplicate", enc, d.source, st, resp)
			}
		}
		// The replay guard's digest is of the decoded body too: the GitHub
		// delivery sent plain under a new (unsigned) delivery id is the
		// request already accepted.
		gh := deliveries()[2]
		if st, resp := b.post(t, "gh", "/in/gh", gh.body, map[string]string{"X-GitHub-Delivery": "forged", "X-GitHub-Event": "issues"}); st != http.StatusOK {
			t.Errorf("%s: the GitHub body plain under another delivery id: %d %+v, want 200", enc, st, resp)
		}
	}
}

// The signature covers the decoded body: one made over the compressed
// bytes is 401, and nothing is stored.
func TestSignatureOverEncodedBodyRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	body := stripeEvent("evt_enc", "charge.succeeded", "ch_enc", "succeeded", 1764583200, false)
	gz := encode(t, "gzip", body)
	st, resp := b.post(t, "stripe", "/in/stripe", gz, map[string]string{"Content-Encoding": "gzip"})
	if st != http.StatusUnauthorized {
		t.Errorf("signed over the gzip bytes: %d %+v, want 401", st, resp)
	}
	if n := b.count(t, "events") + b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("rows written: %d", n)
	}
}

// Codings other than gzip and deflate, and more than one coding, are 415
// naming them, with the codings intake takes in Accept-Encoding; a body
// that is not valid in its coding is 400 with the reason. Neither stores
// anything.
func TestContentEncodingRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	body := stripeEvent("evt_gz", "charge.succeeded", "ch_gz", "succeeded", 1764583200, false)
	for _, enc := range []string{"br", "zstd", "x-custom", "gzip, gzip", "deflate, identity, gzip"} {
		req := b.request(t, "/in/stripe", b.sources["stripe"].Signer(), body, map[string]string{"Content-Encoding": enc})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Header.Get("Accept-Encoding") != "gzip, deflate" {
			t.Errorf("Content-Encoding %q: %d Accept-Encoding %q, want 415 with Accept-Encoding: gzip, deflate",
				enc, resp.StatusCode, resp.Header.Get("Accept-Encoding"))
		}
	}
	st, resp := b.post(t, "stripe", "/in/stripe", body, map[string]string{"Content-Encoding": "br"})
	if st != http.StatusUnsupportedMediaType || !strings.Contains(resp.Error, `"br"`) {
		t.Errorf("br: %d %+v, want 415 naming the coding", st, resp)
	}
	gz := encode(t, "gzip", body)
	for name, tt := range map[string]struct {
		enc    string
		body   []byte
		reason string
	}{
		"plain body as gzip":    {"gzip", body, "decoding the gzip body: gzip: invalid header"},
		"truncated gzip":        {"gzip", gz[:len(gz)/2], "decoding the gzip body: unexpected EOF"},
		"gzip, bad checksum":    {"gzip", append(bytes.Clone(gz[:len(gz)-8]), 0, 0, 0, 0, 0, 0, 0, 0), "decoding the gzip body: gzip: invalid checksum"},
		"empty deflate":         {"deflate", nil, "decoding the deflate body: unexpected EOF"},
		"plain body as deflate": {"deflate", body, "decoding the deflate body: flate: corrupt input"},
	} {
		req := b.request(t, "/in/stripe", nil, tt.body, map[string]string{"Content-Encoding": tt.enc})
		if err := b.sources["stripe"].Signer().Sign(req, body); err != nil {
			t.Fatal(err)
		}
		if st, resp := do(t, req); st != http.StatusBadRequest || !strings.Contains(resp.Error, tt.reason) {
			t.Errorf("%s: %d %+v, want 400 with %q", name, st, resp, tt.reason)
		}
	}
	if n := b.count(t, "events") + b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("rows written for refused bodies: %d", n)
	}
	if got := testutil.ToFloat64(b.metrics.Received.WithLabelValues("stripe", metrics.ReceivedInvalid)); got != 11 {
		t.Errorf("invalid requests counted: %v, want 11", got)
	}
	for _, enc := range []string{"identity", "IDENTITY", ""} {
		if st, resp := b.post(t, "stripe", "/in/stripe", body, map[string]string{"Content-Encoding": enc}); st != http.StatusAccepted && st != http.StatusOK {
			t.Errorf("Content-Encoding %q: %d %+v, want it taken", enc, st, resp)
		}
	}
}

// zeros is an endless stream of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// max_body bounds the decoded size: a 10 KB gzip of 10 MB is 413 naming
// the limit, and a gzip of 1 GB of zeros streamed to the server is 413
// with the server allocating a few max_bodies, not the gigabyte. Not
// parallel, so that the allocation count is this request's.
func TestZipBombRefused(t *testing.T) {
	b := setup(t, 0)
	// A gzip body may hold several members, decoded one after the other:
	// one member of 1 MB of zeros, repeated, makes any size cheaply.
	var member bytes.Buffer
	w, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	io.Copy(w, io.LimitReader(zeros{}, 1<<20))
	w.Close()
	small := bytes.Repeat(member.Bytes(), 10)
	if len(small) > 12<<10 {
		t.Fatalf("the bomb is %d bytes, want about 10 KB", len(small))
	}
	req := b.request(t, "/in/std", nil, small, map[string]string{"Content-Encoding": "gzip", "webhook-id": "msg_bomb"})
	if st, resp := do(t, req); st != http.StatusRequestEntityTooLarge || resp.Error != "decoded body larger than 1048576 bytes" {
		t.Errorf("10 KB of gzip, 10 MB decoded: %d %+v, want 413 naming the decoded limit", st, resp)
	}

	pr, pw := io.Pipe()
	go func() {
		var err error
		for range 1 << 10 {
			if _, err = pw.Write(member.Bytes()); err != nil {
				break
			}
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest(http.MethodPost, b.url+"/in/std", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("webhook-id", "msg_bomb")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.DefaultClient.Do(req)
	runtime.ReadMemStats(&after)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("1 GB of zeros as gzip: %d, want 413", resp.StatusCode)
	}
	// The server's share is the decoded body (max_body, doubled while it
	// grows) and the decoder's window.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("allocated %d MB for one bomb, want a few max_bodies", alloc>>20)
	}
	if n := b.count(t, "events") + b.count(t, "dedupe_keys"); n != 0 {
		t.Fatalf("rows written for bombs: %d", n)
	}
}
