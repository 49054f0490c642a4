package cli_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/hookgate/hookgate/internal/inbox"
)

// openPTY opens a pseudo-terminal in raw mode (no "\n" to "\r\n") and
// returns its two ends.
func openPTY(t *testing.T) (control, tty *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { control.Close() })
	fd := int(control.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	if _, err := term.MakeRaw(int(tty.Fd())); err != nil {
		t.Fatalf("raw mode: %v", err)
	}
	return control, tty
}

// TestReplayTerminalProgress: on a terminal, the count is redrawn in place
// after every page, then the final count ends the line.
func TestReplayTerminalProgress(t *testing.T) {
	t.Parallel()
	control, tty := openPTY(t)
	d := newOpsDB(t, time.Now())
	ids := d.accept("stripe", "acme", "1", "2", "3", "4", "5")
	d.finish(inbox.StatusDead, "gone", ids...)

	read := make(chan []byte, 1)
	go func() {
		// Reading the control end ends with EIO once the terminal end is
		// closed.
		b, err := io.ReadAll(control)
		if err != nil && !errors.Is(err, syscall.EIO) {
			t.Errorf("read pty: %v", err)
		}
		read <- b
	}()
	stderr, err := d.runTo(tty, "replay", "--dead", "--page", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	tty.Close()
	got := string(<-read)
	want := "\rreplayed 2 events\rreplayed 4 events\rreplayed 5 events\rreplayed 5 events\n"
	if got != want {
		t.Errorf("terminal output = %q, want %q", got, want)
	}
}
