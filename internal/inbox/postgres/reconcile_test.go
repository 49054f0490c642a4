package postgres_test

import (
	"testing"

	"github.com/hookgate/hookgate/internal/inbox"
	"github.com/hookgate/hookgate/internal/inbox/inboxtest"
	"github.com/hookgate/hookgate/internal/inbox/postgres"
)

func TestReconciliations(t *testing.T) {
	t.Parallel()
	inboxtest.ExerciseReconciliations(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
		return open(t, postgres.Migrated.New(t), clock)
	})
}
