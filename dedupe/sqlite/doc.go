// Package sqlite is a [dedupe.Store] kept in a SQLite database file.
package sqlite
