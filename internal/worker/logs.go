package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Rate of the lines a Pool logs per message: at most logBurst in each
// logPeriod. A flood of dead events or a store that keeps failing cannot
// fill the disk; the lines left out are counted and the count goes with
// the next line written.
const (
	logBurst  = 20
	logPeriod = time.Minute
)

// limitedLog writes log lines, at most logBurst per message in a
// logPeriod.
type limitedLog struct {
	log *slog.Logger

	mu sync.Mutex
	by map[string]*logWindow
}

// logWindow counts one message's lines in the current period.
type logWindow struct {
	start            time.Time
	written, dropped int
}

func newLimitedLog(log *slog.Logger) *limitedLog {
	return &limitedLog{log: log, by: map[string]*logWindow{}}
}

func (l *limitedLog) info(msg string, args ...any)  { l.write(slog.LevelInfo, msg, args) }
func (l *limitedLog) warn(msg string, args ...any)  { l.write(slog.LevelWarn, msg, args) }
func (l *limitedLog) error(msg string, args ...any) { l.write(slog.LevelError, msg, args) }

func (l *limitedLog) write(level slog.Level, msg string, args []any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	now := time.Now()
	l.mu.Lock()
	w := l.by[msg]
	if w == nil || now.Sub(w.start) >= logPeriod {
		if w == nil {
			w = &logWindow{}
			l.by[msg] = w
		}
		w.start, w.written = now, 0
	}
	if w.written >= logBurst {
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
