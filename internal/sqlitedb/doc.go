// Package sqlitedb is the SQLite database that hookgate's two SQLite stores
// share: the public dedupe/sqlite key store and the inbox. It opens the file
// with the settings durability depends on, gives each process one turn to
// write, prepares statements once, runs the versioned migrations,
// checkpoints the write-ahead log in the background, and keeps the
// dedupe_keys table that both stores claim keys in.
//
// # Settings
//
// [Open] sets every connection to
//
//   - journal_mode=WAL, so readers and the one writer do not block each
//     other;
//   - synchronous=NORMAL: a commit writes its WAL frames and returns
//     without an fsync; [DB.Write] makes it durable itself (see
//     Durability);
//   - busy_timeout of 10 s and BEGIN IMMEDIATE for every transaction, so a
//     transaction takes the write lock when it begins: concurrent writers,
//     in this process or another, wait their turn instead of failing when a
//     read lock cannot be upgraded;
//   - temp_store=MEMORY, so the statement journal of a many-row statement
//     stays in memory instead of spilling to a temporary file;
//   - foreign_keys=ON;
//   - wal_autocheckpoint=0: a commit never copies the WAL back into the
//     database file. [DB] does that on a connection of its own instead (see
//     Checkpoints), so the writer that holds the write turn never pays for
//     one.
//
// Open reads journal_mode and synchronous back and fails with
// [ErrNotDurable] if SQLite did not take them. It creates the file 0600
// first, and SQLite gives the -wal and -shm files the same mode.
//
// # Durability
//
// A commit that [DB.Write] returns from is on disk: a key reported
// committed is still there after a crash or power loss, or a provider's
// retry of an acknowledged event would get through as new. SQLite's own
// way to do that, synchronous=FULL, fsyncs the WAL inside the commit, while
// the transaction still holds the write lock, so every writer behind it
// waits for the disk too. Write instead commits with synchronous=NORMAL,
// gives the write turn back, then fsyncs the WAL file itself and returns:
// the next transaction (a worker's lease, a lane's dispatch) runs while
// the disk flushes, and one fsync covers every commit made before it
// began, so the commits that wait while one runs share the next. The WAL
// is appended in order, so a commit that an fsync covers is recovered with
// everything before it; the file fsynced is the WAL of the moment, the one
// SQLite creates again after every connection has closed included.
// [DB.WriteLazy] does not wait for the fsync at all.
// An fsync that fails ends durable writes ([ErrSyncFailed]) until the
// database is opened again: the kernel may have dropped the pages it could
// not write, so a later fsync that succeeds proves nothing. A database of
// the caller's ([Wrap]) keeps its synchronous=FULL, and each commit there
// fsyncs itself.
//
// # Checkpoints
//
// A goroutine started by Open runs a PASSIVE checkpoint every
// [CheckpointInterval]: it copies what it can of the WAL into the database
// file and fsyncs it while writers go on appending. A passive checkpoint
// cannot restart the WAL while readers or writers use it, so the file can
// grow under steady load; once it holds more than [CheckpointRestartPages]
// pages the goroutine takes the write turn and runs a RESTART checkpoint,
// which copies the rest and lets the next writer overwrite the WAL from
// its start. It waits for the readers still using the WAL at most
// [CheckpointWait] and gives the turn back either way, trying again at the
// next interval: writers wait for a restart about as long as for a commit.
// Before it takes the turn it holds back the chunks of sweeps ([DB.Sweep])
// and runs a second passive checkpoint, so that what the restart copies
// and fsyncs in the turn is only what other writers appended meanwhile,
// not the thousands of scattered pages a sweep writes in a second.
// The WAL file keeps its size (truncating it took tens of milliseconds in
// which nobody could write); Close runs a TRUNCATE checkpoint, so a file
// left by a clean shutdown has an empty WAL.
//
// # The write turn
//
// Within a process, write transactions queue on a channel (the write turn)
// before they take a connection, so waiting goroutines neither hold connections nor
// poll SQLite's lock; other processes on the same file queue on the busy
// timeout. [DB.Write] returns once its commit is durable; [DB.WriteLazy]
// commits without waiting for that, for transactions a crash may lose
// because they are redone and nothing outside has seen them: they become
// durable with the next fsync of the WAL or checkpoint.
//
// # Migrations
//
// Each table set (the dedupe keys, the inbox) has a list of forward-only
// steps; the schema_versions table records how many of them a file has had.
// [Migrate] runs the missing ones in one write transaction, so processes
// that open a file at once run each step once: the first takes the write
// lock and migrates, the others wait for it and then find nothing to do.
package sqlitedb
