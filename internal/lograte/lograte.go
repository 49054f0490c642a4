// Package lograte writes log lines at a bounded rate per message, so that
// a flood (of dead events, of requests refused because the store is down)
// cannot fill the disk: the lines left out are counted, and the count goes
// with the next line written.
package lograte

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Rate of the lines a Logger writes per message: at most Burst in each
// Period.
const (
	Burst  = 20
	Period = time.Minute
)

// Logger writes through a slog.Logger, at most Burst lines per message in
// a Period. It is safe for concurrent use.
type Logger struct {
	log *slog.Logger
	now func() time.Time

	mu sync.Mutex
	by map[string]*window
}

// window counts one message's lines in the current period.
type window struct {
	start            time.Time
	written, dropped int
}

// New returns a Logger writing to log.
func New(log *slog.Logger) *Logger {
	return &Logger{log: log, now: time.Now, by: map[string]*window{}}
}

// Info logs at info level.
func (l *Logger) Info(msg string, args ...any) { l.write(slog.LevelInfo, msg, args) }

// Warn logs at warn level.
func (l *Logger) Warn(msg string, args ...any) { l.write(slog.LevelWarn, msg, args) }

// Error logs at error level.
func (l *Logger) Error(msg string, args ...any) { l.write(slog.LevelError, msg, args) }

func (l *Logger) write(level slog.Level, msg string, args []any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	now := l.now()
	l.mu.Lock()
	w := l.by[msg]
	if w == nil {
		w = &window{start: now}
		l.by[msg] = w
	}
	if now.Sub(w.start) >= Period {
		w.start, w.written = now, 0
	}
	if w.written >= Burst {
		w.dropped++
		l.mu.Unlock()
		return
	}
	w.written++
	dropped := w.dropped
	w.dropped = 0
	l.mu.Unlock()
	if dropped > 0 {
		args = append(args, "suppressed", dropped)
	}
	l.log.Log(context.Background(), level, msg, args...)
}
