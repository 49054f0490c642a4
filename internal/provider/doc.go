// Package provider is everything hookgate knows about each sender, one file
// per provider: how its deliveries are verified, split and keyed (the
// preset), which headers its signature covers (the replay guard's facts),
// which credentials a source of it needs and how they are checked, how the
// sender is answered, what the console says about it, and how `hookgate
// sign`, `hookgate trigger` and the console send its example events, and,
// where the provider lists what it sent, its [Reconciler].
//
// Configuration, the source presets, intake, the server, the CLI and the
// console ask this package by a source's provider name ([Lookup]); none of
// them names a provider. A new provider is one new file that calls
// [register] from its init function.
//
// The package sits low in the import graph: it imports verify and nothing
// of hookgate's engine, so that internal/config can ask it while it knows
// nothing of configuration files.
package provider
