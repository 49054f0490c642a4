// Package dedupetest is the conformance suite every [dedupe.Store] passes.
//
// A store's own tests call [Exercise] with a [Factory] that opens a fresh,
// empty store reading its time from the [Clock] it is given:
//
//	func TestStore(t *testing.T) {
//		dedupetest.Exercise(t, func(t *testing.T, clock *dedupetest.Clock) dedupe.Store {
//			return memory.New(memory.Options{Now: clock.Now})
//		}, dedupetest.Features{})
//	}
//
// Each case runs as a parallel subtest with its own store and clock. Cases
// that need expiry advance the clock instead of sleeping; a store that keeps
// time on its server declares [Features.NoManualClock] and those cases skip
// with a visible reason.
//
// Times are compared exactly under the manual clock, which starts on a whole
// second and only moves in whole seconds, so a store that keeps time at
// second precision passes too.
package dedupetest
