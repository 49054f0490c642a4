package intake

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"testing"
)

// FuzzReadBody feeds the decoder arbitrary bytes as gzip and as deflate:
// never a panic; what comes back is at most the limit; an error is a
// decode error (400) or the decoded limit (413). (TestContentEncodingDecoded
// and TestZipBombRefused check what valid bodies decode to.)
func FuzzReadBody(f *testing.F) {
	const limit = 4 << 10
	f.Add([]byte(`{"id":"evt_1"}`))
	f.Add(bytes.Repeat([]byte{0}, limit+1))
	seed := func(w io.WriteCloser, buf *bytes.Buffer, data []byte) {
		w.Write(data)
		w.Close()
		f.Add(bytes.Clone(buf.Bytes()))
		buf.Reset()
	}
	var buf bytes.Buffer
	seed(gzip.NewWriter(&buf), &buf, []byte(`{"id":"evt_1"}`))
	seed(zlib.NewWriter(&buf), &buf, []byte(`{"id":"evt_1"}`))
	seed(gzip.NewWriter(&buf), &buf, make([]byte, 64<<10))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []coding{codingGzip, codingDeflate} {
			out, err := readBody(bytes.NewReader(data), -1, c, limit)
			if len(out) > limit {
				t.Fatalf("%d bytes decoded, over the limit of %d", len(out), limit)
			}
			var de *decodeError
			var tooBig *decodedTooLarge
			if err != nil && !errors.As(err, &de) && !errors.As(err, &tooBig) {
				t.Fatalf("error %T %v, want a decode error or the decoded limit", err, err)
			}
		}
	})
}
