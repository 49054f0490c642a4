// Package memory is a [dedupe.Store] that keeps its keys in the process's
// memory: for tests and for library users who run one process. Its keys do
// not survive a restart and are not shared with other processes.
//
// Keys are spread over mutex-guarded shards by their hash, so claims of
// different keys rarely wait for each other. Expiry is checked on every
// claim, so an expired key is claimable at once; [Store.Sweep] only frees
// the memory expired keys still hold. The store starts no goroutines: a
// caller that keeps it for long runs Sweep itself, for example
//
//	go func() {
//		tick := time.NewTicker(time.Minute)
//		defer tick.Stop()
//		for {
//			select {
//			case <-ctx.Done():
//				return
//			case <-tick.C:
//				store.Sweep(ctx)
//			}
//		}
//	}()
package memory
