package lograte

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestBurstThenSuppressedCount(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, nil)))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	for range Burst + 5 {
		l.Error("store down", "err", "disk full")
	}
	l.Info("other message")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != Burst+1 {
		t.Fatalf("%d lines, want %d (the burst, and another message)", len(lines), Burst+1)
	}
	now = now.Add(Period)
	buf.Reset()
	l.Error("store down", "err", "disk full")
	if got := buf.String(); !strings.Contains(got, "suppressed=5") {
		t.Errorf("first line of the next period %q should count the 5 left out", got)
	}
}

func TestDisabledLevelWritesNothing(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})))
	l.Info("quiet")
	if buf.Len() != 0 {
		t.Errorf("wrote %q below the handler's level", buf.String())
	}
}
