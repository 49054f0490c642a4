package spool

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned by Open when another process holds the spool: two
// nodes on one spool file would both drain it.
var ErrLocked = errors.New("spool in use by another process")

// lock takes the node's exclusive lock on the spool at path: a flock on
// path+".lock", which then holds this process's pid so that a second one
// can name the holder. The kernel releases the lock when the process ends,
// however it ends, so a node killed with SIGKILL does not keep it. The file
// is left in place: removing it could let a third process lock a new file
// while the holder still locks the old one.
func lock(path string) (*os.File, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := holderOf(f)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by %s (lock file %s); give each node a spool file of its own",
				ErrLocked, path, holder, name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}

// holderOf names the process whose pid the lock file holds.
func holderOf(f *os.File) string {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 32))
	if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
		return "pid " + strconv.Itoa(pid)
	}
	return "another process (pid not known yet)"
}
