package backend_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/hookgate/hookgate/internal/backend"
	"github.com/hookgate/hookgate/internal/pgtest"
)

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	b, err := backend.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "hookgate.db"), backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Ping(t.Context()); err != nil {
		t.Errorf("ping: %v", err)
	}
	if _, err := b.Stats(t.Context()); err != nil {
		t.Errorf("stats: %v", err)
	}
}

func TestOpenUnknown(t *testing.T) {
	t.Parallel()
	for _, db := range []string{"", "sqlite:", "mysql://localhost/x", "hookgate.db"} {
		if _, err := backend.Open(t.Context(), db, backend.Options{}); !errors.Is(err, backend.ErrUnknown) {
			t.Errorf("Open(%q) = %v, want ErrUnknown", db, err)
		}
	}
}

func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	b, err := backend.Open(t.Context(), pgtest.New(t), backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Ping(t.Context()); err != nil {
		t.Errorf("ping: %v", err)
	}
	if _, err := b.Stats(t.Context()); err != nil {
		t.Errorf("stats: %v", err)
	}
}
