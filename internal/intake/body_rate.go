package intake

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// rateReader reads a request body that must keep up with a minimum rate:
// all of it read so far is due by start + grace + read/rate, and the
// connection's read deadline is moved there before each read, so that a
// body trickling in a byte every few seconds fails once it is grace
// behind the rate, while a large body on a slow but steady link keeps
// being given time. The deadline replaces the server's ReadTimeout for
// the body; the next request on the connection gets the server's again.
type rateReader struct {
	body  io.Reader
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	rate  int64
	read  int64
}

// newRateReader paces body at rate bytes a second after grace; a zero
// rate leaves it as it is.
func newRateReader(w http.ResponseWriter, body io.Reader, rate int64, grace time.Duration) io.Reader {
	if rate <= 0 {
		return body
	}
	return &rateReader{body: body, rc: http.NewResponseController(w), start: time.Now(), grace: grace, rate: rate}
}

func (r *rateReader) Read(p []byte) (int, error) {
	due := r.start.Add(r.grace + time.Duration(float64(r.read)/float64(r.rate)*float64(time.Second)))
	// A server that cannot set deadlines (HTTP/1 hijacked, a test
	// recorder) leaves the body to its ReadTimeout.
	_ = r.rc.SetReadDeadline(due)
	n, err := r.body.Read(p)
	r.read += int64(n)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &slowBody{rate: r.rate, read: r.read}
	}
	return n, err
}

// slowBody is a body that fell more than the grace behind the minimum
// rate (408).
type slowBody struct{ rate, read int64 }

func (e *slowBody) Error() string {
	return fmt.Sprintf("body arrived slower than %d bytes a second (%d bytes read)", e.rate, e.read)
}
