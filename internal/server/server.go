package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookgate/hookgate/internal/admin"
	"github.com/hookgate/hookgate/internal/alert"
	"github.com/hookgate/hookgate/internal/config"
	"github.com/hookgate/hookgate/internal/console"
	"github.com/hookgate/hookgate/internal/deliver"
	"github.com/hookgate/hookgate/internal/front"
	"github.com/hookgate/hookgate/internal/guard"
	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/intake"
	"github.com/hookgate/hookgate/internal/metrics"
	"github.com/hookgate/hookgate/internal/provider"
	"github.com/hookgate/hookgate/internal/source"
	"github.com/hookgate/hookgate/internal/spool"
	"github.com/hookgate/hookgate/internal/worker"
	"github.com/hookgate/hookgate/verify"
)

// ShutdownGrace bounds how long a stopping server waits for requests in
// flight.
const ShutdownGrace = 30 * time.Second

// Options are what a Server takes beyond its configuration. Zero values
// mean the defaults; the processing knobs exist for tests that cannot wait
// for production backoffs.
type Options struct {
	// Store is the opened inbox; the Server does not close it.
	Store inbox.Backend
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock of verification and processing; nil means time.Now.
	Now func() time.Time
	// Idle is how often an idle worker looks for due events (retries).
	Idle time.Duration
	// BackoffBase and BackoffMax, when set, replace every destination's
	// retry_initial and retry_max_delay; Rand draws the jitter in [0, 1).
	BackoffBase, BackoffMax time.Duration
	Rand                    func() float64
	// IntakeOnly keeps the workers stopped: events are accepted and stored
	// and wait in the inbox for a server that processes (while the
	// application is down for maintenance, say). The sweep still runs.
	IntakeOnly bool
	// AdminListener, when the configuration sets admin.listen, is the
	// listener Serve serves the operator's routes on; nil makes Serve
	// listen on admin.listen itself.
	AdminListener net.Listener
	// AlertSendEvery is how often queued alert notices are looked for;
	// zero: every second.
	AlertSendEvery time.Duration
}

// Server is a configured gateway.
type Server struct {
	cfg       config.Config
	store     inbox.Backend
	log       *slog.Logger
	now       func() time.Time
	sources   []*source.Source
	committer *intake.Committer
	pool      *worker.Pool
	process   bool
	metrics   *metrics.Metrics
	// handler serves the public listener; admin the operator's routes,
	// on the public listener too unless admin.listen is set.
	handler       http.Handler
	admin         *http.ServeMux
	adminListener net.Listener
	// fallback and spool, with dedupe.on_store_error: spool, take the
	// events while the store cannot be reached; front is the Redis front
	// (dedupe.front). Each is nil when off.
	fallback *spool.Fallback
	spool    *spool.Spool
	front    *front.Front
	// closeOnce closes the spool and the front once, whichever of Close
	// and Serve's shutdown comes first.
	closeOnce sync.Once
	// publicAddr is the public listener's address once Serve has it:
	// where the console posts its test events.
	publicAddr atomic.Pointer[string]
	// alerts opens incidents and notifies them; nil when the store keeps
	// none.
	alerts *alert.Engine
	// senders are the broker destinations' connections, closed with the
	// spool and the front.
	senders []io.Closer
	// reconcilers are the sources' reconciliations (reconcile.go).
	reconcilers []reconciler
}

// New builds a gateway from cfg, which must be valid (see
// config.Config.Validate): a configuration built in code starts from
// config.Default.
func New(cfg config.Config, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Dedupe.OnStoreError == config.OnStoreErrorSpool && time.Duration(cfg.Dedupe.StoreTimeout) <= spool.DefaultTimeout {
		// The spool takes a batch only after the database's try has
		// timed out; the write's deadline must leave it room.
		return nil, fmt.Errorf("dedupe.store_timeout: %v: with on_store_error: spool, want more than the %v the database is tried before the spool",
			cfg.Dedupe.StoreTimeout, spool.DefaultTimeout)
	}
	s := &Server{cfg: cfg, store: opts.Store, log: opts.Logger, now: opts.Now, metrics: metrics.New(), process: !opts.IntakeOnly,
		adminListener: opts.AdminListener}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.metrics.WatchInbox(s.store.Stats)
	registerDBCollector(s.metrics.Registry, s.store)
	var vopts []verify.Option
	if opts.Now != nil {
		vopts = append(vopts, verify.WithClock(opts.Now))
	}
	for _, sc := range cfg.Sources {
		src, err := source.New(sc, cfg.Dedupe, vopts...)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", sc.Name, err)
		}
		if p, ok := provider.Lookup(sc.Provider); ok && p.Warn != nil {
			if msg := p.Warn(sc.Credentials()); msg != "" {
				s.log.Warn(msg, "source", sc.Name)
			}
		}
		s.sources = append(s.sources, src)
	}
	wsources, err := s.workerSources(cfg, opts)
	if err != nil {
		s.closeSenders()
		return nil, err
	}
	if as, ok, err := alertSource(cfg, opts); err != nil {
		s.closeSenders()
		return nil, err
	} else if ok {
		wsources[as.Name] = as
	}
	s.pool, err = worker.New(worker.Options{
		Store: s.store, Sources: wsources, Workers: cfg.Workers, Batch: cfg.Batch,
		Lease: time.Duration(cfg.Lease), Idle: opts.Idle,
		BackoffBase: opts.BackoffBase, BackoffMax: opts.BackoffMax, Rand: opts.Rand,
		Now: opts.Now, Logger: s.log, Observer: s.metrics,
	})
	if err != nil {
		return nil, err
	}
	if err := s.openReconcilers(cfg); err != nil {
		s.closeSenders()
		return nil, err
	}
	acceptor, err := s.openDedupe(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := s.openAlerts(cfg, opts); err != nil {
		s.closeDedupe()
		return nil, err
	}
	s.committer = intake.NewCommitter(acceptor, intake.CommitterOptions{Now: opts.Now, Committed: s.stored(), Front: s.front,
		StoreTimeout: time.Duration(cfg.Dedupe.StoreTimeout)})
	in := intake.NewHandler(intake.Options{
		Sources:   s.sources,
		Committer: s.committer,
		MaxBody:   int64(cfg.MaxBody),
		// Zero (a configuration built in code) takes the intake default.
		MaxPendingBody: int64(cfg.Limits.MaxPendingBody),
		MinBodyRate:    int64(cfg.Limits.MinBodyRate),
		BodyGrace:      time.Duration(cfg.Limits.BodyGrace),
		Ready:          s.ready,
		Logger:         s.log,
		Metrics:        s.metrics,
	})
	s.admin = http.NewServeMux()
	// /metrics names every source and destination: it is served on the
	// public listener only behind metrics.token or when metrics.public
	// says so.
	var m http.Handler = s.metrics.Handler()
	metricsToken := cfg.Metrics.Token.Value()
	if metricsToken != "" {
		m = admin.RequireToken(metricsToken, guard.New(guard.Options{What: "metrics", Logger: s.log, Now: opts.Now}), m)
	}
	if cfg.Admin.Listen != "" || metricsToken != "" || cfg.Metrics.Public {
		s.admin.Handle("GET /metrics", m)
	}
	if token := cfg.Admin.Token.Value(); token != "" {
		api, err := admin.New(admin.Options{Store: s.store, Token: token, Logger: s.log})
		if err != nil {
			s.Close()
			return nil, err
		}
		s.admin.Handle("/api/", api)
		ui, err := console.New(console.Options{Store: s.store, Token: token, Sources: cfg.Sources,
			Intake: s.intakeAddr, Logger: s.log, Now: opts.Now})
		if err != nil {
			s.Close()
			return nil, err
		}
		s.admin.Handle("/ui/", ui)
		s.admin.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
		// The operator's listener opens on the console.
		s.admin.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusSeeOther))
	}
	// Probes may ask either listener.
	s.admin.Handle("GET /healthz", in)
	s.admin.Handle("GET /readyz", in)
	if cfg.Admin.Listen == "" {
		// The operator's routes share the public listener: the intake
		// paths go to intake, every other path to the admin mux.
		mux := http.NewServeMux()
		mux.Handle("/in/", in)
		mux.Handle("/", s.admin)
		s.handler = mux
	} else {
		s.handler = in
	}
	return s, nil
}

// openDedupe opens what cfg.Dedupe adds in front of the store: the spool
// (on_store_error: spool), whose Fallback is then what intake writes
// through, and the Redis front (front:), whose metrics it registers. It
// returns what intake writes through.
func (s *Server) openDedupe(cfg config.Config, opts Options) (intake.Acceptor, error) {
	var acceptor intake.Acceptor = s.store
	if cfg.Dedupe.OnStoreError == config.OnStoreErrorSpool {
		sp, err := spool.Open(context.Background(), cfg.Dedupe.Spool, spool.Options{Now: opts.Now})
		if err != nil {
			return nil, fmt.Errorf("dedupe.spool: %w", err)
		}
		s.spool = sp
		s.fallback = spool.NewFallback(s.store, sp, spool.FallbackOptions{Logger: s.log})
		acceptor = s.fallback
		s.metrics.Registry.MustRegister(newSpoolCollector(sp))
	}
	if cfg.Dedupe.Front != "" {
		fr, err := front.Open(cfg.Dedupe.Front, front.Options{Prefix: cfg.Dedupe.FrontPrefix, Logger: s.log})
		if err != nil {
			s.closeDedupe()
			return nil, fmt.Errorf("dedupe.front: %w", err)
		}
		s.front = fr
		s.metrics.Registry.MustRegister(fr)
	}
	return acceptor, nil
}

// closeDedupe closes the spool and the Redis front, once nothing uses
// them; only the first call does.
func (s *Server) closeDedupe() {
	s.closeOnce.Do(func() {
		s.closeSenders()
		if s.spool != nil {
			s.spool.Close()
		}
		if s.front != nil {
			s.front.Close()
		}
	})
}

// closeSenders closes the broker destinations' connections.
func (s *Server) closeSenders() {
	for _, c := range s.senders {
		if err := c.Close(); err != nil {
			s.log.Warn("closing a destination", "err", err)
		}
	}
	s.senders = nil
}

// ready is what /readyz checks: the last write to the store succeeded, or
// a write made now succeeds (a store that answers reads while every write
// fails, a full disk or a read-only file, is not ready; one that is back
// is ready before any event arrives), and the store answers now. A node that
// spools while the store cannot be reached is ready but degraded: it
// takes events, and the load balancer should keep sending them.
func (s *Server) ready(ctx context.Context) error {
	if reason := s.fallback.Degraded(); reason != "" {
		return fmt.Errorf("%w: %s", intake.ErrDegraded, reason)
	}
	if err := s.committer.WriteErr(); err != nil {
		// The store may be back: only a write can tell.
		wc, ok := s.store.(inbox.WriteChecker)
		if !ok {
			return fmt.Errorf("the last write to the store failed: %w", err)
		}
		if werr := wc.CheckWrite(ctx); werr != nil {
			return fmt.Errorf("the last write to the store failed, and a write now fails: %w", werr)
		}
	}
	return s.store.Ping(ctx)
}

// workerSources turns the configured sources into what workers need:
// compiled schemas and signing destinations, and the senders of broker
// destinations, which it opens (Close closes them).
func (s *Server) workerSources(cfg config.Config, opts Options) (map[string]worker.Source, error) {
	out := make(map[string]worker.Source, len(cfg.Sources))
	for _, sc := range cfg.Sources {
		ws := worker.Source{Name: sc.Name}
		if sc.Schema != "" {
			schema, err := worker.CompileSchema(sc.Schema)
			if err != nil {
				return nil, fmt.Errorf("source %s: %w", sc.Name, err)
			}
			ws.Schema = schema
		}
		for _, dc := range sc.Destinations {
			d := worker.Destination{
				Destination: deliver.Destination{Name: dc.Name, URL: dc.URL, Timeout: time.Duration(dc.Timeout),
					Headers: headers(dc.Headers)},
				On:            dc.On,
				Types:         dc.Types,
				MaxAttempts:   dc.MaxAttempts,
				RetryInitial:  time.Duration(dc.RetryInitial),
				RetryMaxDelay: time.Duration(dc.RetryMaxDelay),
				MaxInFlight:   dc.MaxInFlight,
				PauseAfter:    dc.PauseAfter,
				PauseFor:      time.Duration(dc.PauseFor),
				Order:         dc.Order,
				OrderKey:      dc.OrderKey,
				OnExhausted:   dc.OnExhausted,
				Rate:          inbox.Rate{Events: dc.Rate.N, Per: dc.Rate.Per},
			}
			if dc.Batch != nil {
				d.BatchMax, d.BatchWait = dc.Batch.Max, time.Duration(dc.Batch.Wait)
			}
			if opts.BackoffBase > 0 {
				d.RetryInitial = opts.BackoffBase
			}
			if opts.BackoffMax > 0 {
				d.RetryMaxDelay = opts.BackoffMax
			}
			if secret := dc.Secret.Value(); secret != "" {
				signer, err := verify.NewStandard(secret)
				if err != nil {
					return nil, fmt.Errorf("source %s destination %s: %w", sc.Name, dc.Name, err)
				}
				d.Signer = signer
			}
			if dc.Kind() != config.KindHTTP {
				sender, err := deliver.Open(dc)
				if err != nil {
					return nil, fmt.Errorf("source %s: %w", sc.Name, err)
				}
				d.Sender = sender
				if c, ok := sender.(io.Closer); ok {
					s.senders = append(s.senders, c)
				}
			}
			ws.Destinations = append(ws.Destinations, d)
		}
		out[sc.Name] = ws
	}
	return out, nil
}

// headers resolves a destination's static headers; nil when it has none.
func headers(hs map[string]config.HeaderValue) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	out := make(map[string]string, len(hs))
	for k, v := range hs {
		out[k] = v.Value()
	}
	return out
}

// Close stops intake (events submitted before are written and answered,
// later ones are refused) and releases what New opened: the spool, whose
// file another process may then take, and the Redis front. Serve calls
// it; a caller that serves Handler itself calls it once its HTTP server is
// shut down and Run has returned.
func (s *Server) Close() {
	s.stopIntake()
	s.closeDedupe()
}

// stopIntake writes and answers the events submitted so far and refuses
// later ones.
func (s *Server) stopIntake() {
	s.committer.Close()
}

// Run does the gateway's background work until ctx ends: the workers, the
// periodic sweep and, with the spool on, its drain into the store. It returns once the workers have finished their
// batches. With Options.IntakeOnly only the sweep runs.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { s.sweepEvery(ctx) })
	wg.Go(func() { s.reconcileEvery(ctx) })
	if s.alerts != nil {
		wg.Go(func() { s.alerts.Run(ctx) })
	}
	if s.fallback != nil {
		wg.Go(func() { s.fallback.Run(ctx) })
	}
	var err error
	if s.process {
		err = s.pool.Run(ctx)
	}
	wg.Wait()
	return err
}

// sweepEvery removes expired dedupe keys and processed events older than
// the retention, once per sweep period; on a database several nodes share,
// only the node holding the lead does.
func (s *Server) sweepEvery(ctx context.Context) {
	tick := time.NewTicker(time.Duration(s.cfg.SweepEvery))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if s.spool != nil {
				if _, err := s.spool.Sweep(ctx); err != nil {
					s.log.Error("spool sweep", "err", err)
				}
			}
			if !s.leads(ctx) {
				continue
			}
			res, err := s.store.Sweep(ctx, s.now().Add(-time.Duration(s.cfg.Retention)))
			if err != nil {
				s.log.Error("sweep", "err", err)
				continue
			}
			s.log.Info("sweep", "keys", res.Keys, "digests", res.Digests, "events", res.Events)
		}
	}
}

// leads reports whether this node runs the periodic sweep: always on a
// backend of one node, only while it holds the lead on a shared one.
func (s *Server) leads(ctx context.Context) bool {
	l, ok := s.store.(inbox.Leader)
	if !ok {
		return true
	}
	held, err := l.Lead(ctx)
	if err != nil {
		s.log.Error("sweep: taking the lead", "err", err)
	}
	return held
}

// Sources are the configured sources, in configuration order.
func (s *Server) Sources() []*source.Source { return s.sources }

// Handler serves the public listener: intake, /healthz and /readyz, and,
// unless admin.listen is set, the operator's routes (/api/, /ui/,
// /metrics).
func (s *Server) Handler() http.Handler { return s.handler }

// intakeAddr is the public listener's address, "" before Serve.
func (s *Server) intakeAddr() string {
	if a := s.publicAddr.Load(); a != nil {
		return *a
	}
	return ""
}

// Serve serves HTTP on ln and runs the background work until ctx ends,
// then shuts down gracefully: it stops accepting, answers the requests in
// flight (their events are written first), and lets the workers finish
// their batches.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	addr := ln.Addr().String()
	s.publicAddr.Store(&addr)
	adminLn := s.adminListener
	if adminLn == nil && s.cfg.Admin.Listen != "" {
		var err error
		if adminLn, err = net.Listen("tcp", s.cfg.Admin.Listen); err != nil {
			ln.Close()
			s.Close()
			return fmt.Errorf("admin.listen: %w", err)
		}
	}
	workCtx, stopWork := context.WithCancel(context.Background())
	worked := make(chan error, 1)
	go func() { worked <- s.Run(workCtx) }()
	maxConns := s.cfg.Limits.MaxConnections
	if maxConns <= 0 {
		maxConns = config.DefaultMaxConnections
	}
	busy := s.metrics.Busy.WithLabelValues(metrics.BusyConnections)
	limited := newLimitListener(ln, maxConns, int64(s.cfg.Limits.MinBodyRate), busy.Inc, s.metrics.IdleClosed.Inc, s.metrics.SlowClosed.Inc)
	public := s.httpServer(limited.watchBodies(s.handler))
	public.ConnState = limited.connState
	public.ConnContext = limited.connContext
	servers := []*http.Server{public}
	listeners := []net.Listener{limited}
	if adminLn != nil {
		s.log.Info("admin listening", "addr", adminLn.Addr().String())
		servers = append(servers, s.httpServer(s.admin))
		listeners = append(listeners, adminLn)
	}
	served := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { served <- srv.Serve(listeners[i]) }()
	}
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		s.log.Info("shutting down")
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	// Either listener failing, or ctx ending, stops both.
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	for _, srv := range servers {
		err = errors.Join(err, srv.Shutdown(sctx))
	}
	cancel()
	s.stopIntake()
	stopWork()
	err = errors.Join(err, <-worked)
	s.closeDedupe()
	return err
}

// httpServer is the HTTP server of one listener.
func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// stored is what wakes this node's workers once new events are stored:
// the pool's Notify, or nothing for a store that several nodes watch,
// which wakes them itself for what this node stored (inbox.Watcher),
// since a second wake would make a second, empty lease.
func (s *Server) stored() func() {
	if _, ok := s.store.(inbox.Watcher); ok {
		return nil
	}
	return s.pool.Notify
}
