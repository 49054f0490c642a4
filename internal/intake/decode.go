package intake

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// acceptedEncodings is the Accept-Encoding a 415 answers with: the
// content codings intake decodes.
const acceptedEncodings = "gzip, deflate"

// coding is the content coding of a request body.
type coding int

const (
	codingIdentity coding = iota
	codingGzip
	codingDeflate
)

// contentCoding reads the Content-Encoding of h. identity is ignored; one
// coding, gzip or deflate, is decoded; any other coding, or more than one,
// is an [*unsupportedEncoding].
func contentCoding(h http.Header) (coding, error) {
	var found []string
	for _, v := range h.Values("Content-Encoding") {
		for enc := range strings.SplitSeq(v, ",") {
			if enc = strings.TrimSpace(enc); enc != "" && !strings.EqualFold(enc, "identity") {
				found = append(found, enc)
			}
		}
	}
	switch {
	case len(found) == 0:
		return codingIdentity, nil
	case len(found) > 1:
		return 0, &unsupportedEncoding{msg: fmt.Sprintf("Content-Encoding %q: one content coding at most", strings.Join(found, ", "))}
	}
	switch strings.ToLower(found[0]) {
	case "gzip", "x-gzip":
		return codingGzip, nil
	case "deflate":
		return codingDeflate, nil
	}
	return 0, &unsupportedEncoding{msg: fmt.Sprintf("Content-Encoding %q is not accepted; send the body as gzip, deflate or unencoded", found[0])}
}

// unsupportedEncoding is a Content-Encoding intake does not decode (415).
type unsupportedEncoding struct{ msg string }

func (e *unsupportedEncoding) Error() string { return e.msg }

// decodeError is a body that is not valid in its content coding (400).
type decodeError struct {
	coding string
	err    error
}

func (e *decodeError) Error() string { return "decoding the " + e.coding + " body: " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// decodedTooLarge is a body whose decoded size is over the limit (413).
type decodedTooLarge struct{ limit int64 }

func (e *decodedTooLarge) Error() string {
	return fmt.Sprintf("decoded body larger than %d bytes", e.limit)
}

// readBody reads body, at most limit bytes as sent, and decodes it from c,
// at most limit bytes decoded. size is the body's Content-Length, -1 when
// unknown; an unencoded body of known size is read into one buffer of
// that size, so that it holds what the pending budget counts for it and
// no more. The decoder streams, so a small body that decodes to gigabytes
// (a zip bomb) costs what limit allows and no more: reading stops at the
// first byte past it.
func readBody(body io.Reader, size int64, c coding, limit int64) ([]byte, error) {
	if c == codingIdentity {
		if size < 0 || size > limit {
			return io.ReadAll(body)
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	var (
		dec  io.Reader
		name string
		err  error
	)
	switch c {
	case codingGzip:
		name = "gzip"
		dec, err = gzip.NewReader(body)
	case codingDeflate:
		name = "deflate"
		dec, err = deflateReader(body)
	}
	if err != nil {
		return nil, decodeFailure(name, err)
	}
	out, err := io.ReadAll(io.LimitReader(dec, limit+1))
	if err != nil {
		return nil, decodeFailure(name, err)
	}
	if int64(len(out)) > limit {
		return nil, &decodedTooLarge{limit: limit}
	}
	return out, nil
}

// decodeFailure keeps an over-limit body read (a *http.MaxBytesError, 413)
// as it is and makes anything else a decodeError.
func decodeFailure(name string, err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return err
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return &decodeError{coding: name, err: err}
}

// deflateReader decodes HTTP's deflate, which RFC 9110 defines as the zlib
// format (RFC 1950); some senders send the raw deflate stream (RFC 1951)
// instead, so, as browsers and curl do, a body without a zlib header is
// read as raw deflate.
func deflateReader(body io.Reader) (io.Reader, error) {
	br := bufio.NewReader(body)
	head, err := br.Peek(2)
	if err != nil && len(head) < 2 {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if isZlibHeader(head[0], head[1]) {
		return zlib.NewReader(br)
	}
	return flate.NewReader(br), nil
}

// isZlibHeader reports whether cmf and flg open a zlib stream: method 8
// (deflate), a window of at most 32 KiB, and the check bits.
func isZlibHeader(cmf, flg byte) bool {
	return cmf&0x0f == 8 && cmf>>4 <= 7 && (uint16(cmf)<<8|uint16(flg))%31 == 0
}
