// Package server assembles a running gateway from a configuration: the
// store, the sources, the intake handler and its group committer, the
// workers, the periodic sweep, the admin API and the metrics. `hookgate
// serve` runs one; end-to-end tests run one in process.
package server
