// Package inbox defines the durable store of accepted events.
//
// Intake hands the store a batch of events; the store claims their dedupe
// keys, writes the new ones and commits the keys in one transaction, so an
// event is acknowledged only once it and its key are durable together (G1),
// and a failed write leaves no key behind (G4). Backends live in
// sub-packages (sqlite).
package inbox
