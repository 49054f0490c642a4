// Package sqlite keeps the inbox in the same SQLite file as the dedupe keys,
// so one transaction (one fsync) claims, stores and commits a whole batch.
package sqlite
