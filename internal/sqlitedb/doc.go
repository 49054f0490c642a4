// Package sqlitedb is the SQLite database that hookgate's two SQLite stores
// share: the public dedupe/sqlite key store and the inbox. It opens the file
// with the settings durability depends on, gives each process one turn to
// write, prepares statements once, runs the versioned migrations, and keeps
// the dedupe_keys table that both stores claim keys in.
//
// # Settings
//
// [Open] sets every connection to
//
//   - journal_mode=WAL, so readers and the one writer do not block each
//     other;
//   - synchronous=FULL, so every commit fsyncs the WAL before it returns: a
//     key reported committed is still there after a crash or power loss.
//     NORMAL would be faster but can lose the last commits on power loss,
//     which would let a provider's retry of an acknowledged event through
//     as new;
//   - busy_timeout of 10 s and BEGIN IMMEDIATE for every transaction, so a
//     transaction takes the write lock when it begins: concurrent writers,
//     in this process or another, wait their turn instead of failing when a
//     read lock cannot be upgraded;
//   - temp_store=MEMORY, so the statement journal of a many-row statement
//     stays in memory instead of spilling to a temporary file;
//   - foreign_keys=ON.
//
// Open reads journal_mode and synchronous back and fails with
// [ErrNotDurable] if SQLite did not take them. It creates the file 0600
// first, and SQLite gives the -wal and -shm files the same mode.
//
// # The write turn
//
// Within a process, write transactions queue on a channel ([DB.Lock]) before
// they take a connection, so waiting goroutines neither hold connections nor
// poll SQLite's lock; other processes on the same file queue on the busy
// timeout.
//
// # Migrations
//
// Each table set (the dedupe keys, the inbox) has a list of forward-only
// steps; the schema_versions table records how many of them a file has had.
// [Migrate] runs the missing ones in one write transaction, so processes
// that open a file at once run each step once: the first takes the write
// lock and migrates, the others wait for it and then find nothing to do.
package sqlitedb
