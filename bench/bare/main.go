package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookgate/hookgate/bench/internal/httpserve"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	fs := flag.NewFlagSet("bare", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "listen address (port 0: any free port)")
	_ = fs.Parse(os.Args[1:])
	err := httpserve.Run(ctx, *listen, newHandler(), os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}

// maxBody bounds a request body, as the gateway does.
const maxBody = 1 << 20

func newHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /in/{source}", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
			if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	return mux
}
