// Package inboxtest is the conformance suite every [inbox.Store] passes.
//
// A backend's tests call [Exercise] with a function that opens a fresh,
// empty store reading its time from the [Clock] it is given:
//
//	func TestInbox(t *testing.T) {
//		inboxtest.Exercise(t, func(t *testing.T, clock *inboxtest.Clock) inbox.Store {
//			s, err := sqlite.Open(filepath.Join(t.TempDir(), "inbox.db"), sqlite.Options{Now: clock.Now})
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// Each case runs as a parallel subtest with its own store and clock. Cases
// that need time to pass (dedupe windows, leases, retries, retention)
// advance the clock instead of sleeping. The clock starts on a whole second
// and moves in whole seconds, and expiry is checked a second past each
// deadline, so a backend that keeps coarser times or treats the deadline
// itself either way passes too.
//
// [ExerciseNodes] runs the cases in which two stores on one database race
// each other, as nodes of one deployment (or processes on one file) do:
// accepting the same events, leasing the same events, dispatching the same
// deliveries. Its factory makes a database and returns a function that
// opens another store on it.
package inboxtest
