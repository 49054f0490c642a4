package httpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// ShutdownGrace bounds how long a stopping server waits for the requests
// in flight.
const ShutdownGrace = 10 * time.Second

// Run listens on addr (port 0: any free port), writes "listening on
// http://ADDR" to announce once connections are accepted, and serves h
// until ctx ends. It returns nil after a graceful shutdown.
func Run(ctx context.Context, addr string, h http.Handler, announce io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(announce, "listening on http://%s\n", ln.Addr()); err != nil {
		srv.Close()
		<-served
		return err
	}
	select {
	case err = <-served:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
		err = srv.Shutdown(sctx)
		cancel()
		if err == nil {
			err = <-served
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
