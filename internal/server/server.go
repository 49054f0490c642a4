package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hookgate/hookgate/internal/config"
	inboxsqlite "github.com/hookgate/hookgate/internal/inbox/sqlite"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/verify"
)

// ShutdownGrace bounds how long a stopping server waits for requests in
// flight.
const ShutdownGrace = 30 * time.Second

// Options are what a Server takes beyond its configuration.
type Options struct {
	// Store is the opened inbox; the Server does not close it.
	Store *inboxsqlite.Store
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock of verification and processing; nil means time.Now.
	Now func() time.Time
}

// Server is a configured gateway.
type Server struct {
	cfg       config.Config
	store     *inboxsqlite.Store
	log       *slog.Logger
	sources   []*source.Source
	committer *intake.Committer
	handler   http.Handler
}

// New builds a gateway from cfg.
func New(cfg config.Config, opts Options) (*Server, error) {
	s := &Server{cfg: cfg, store: opts.Store, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var vopts []verify.Option
	if opts.Now != nil {
		vopts = append(vopts, verify.WithClock(opts.Now))
	}
	for _, sc := range cfg.Sources {
		src, err := source.New(sc, cfg.Dedupe, vopts...)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", sc.Name, err)
		}
		s.sources = append(s.sources, src)
	}
	s.committer = intake.NewCommitter(s.store, intake.CommitterOptions{Now: opts.Now})
	s.handler = intake.NewHandler(intake.Options{
		Sources:   s.sources,
		Committer: s.committer,
		MaxBody:   int64(cfg.MaxBody),
		Ready:     func(ctx context.Context) error { return s.store.DB().PingContext(ctx) },
		Logger:    s.log,
	})
	return s, nil
}

// Sources are the configured sources, in configuration order.
func (s *Server) Sources() []*source.Source { return s.sources }

// Handler serves every HTTP route of the gateway.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves HTTP on ln until ctx ends, then shuts down gracefully:
// it stops accepting, answers the requests in flight (their events are
// written first), and stops the background work.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		s.log.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
		err = srv.Shutdown(sctx)
		cancel()
	}
	s.committer.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
