//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of cols columns: its master and its
// slave.
func openPTY(t *testing.T, cols uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// On a terminal of 0 columns (one whose size was never set) the progress
// bar, redrawn in place, printed only "\r" (the old code: "\r\r\r\n" then
// the summary); it prints lines instead. The binary runs with the
// terminal as its controlling terminal and stderr, as in a shell; on an
// 80-column one it still draws the bar.
func TestProgressZeroColumnTerminal(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "p.dbl")
	mustCreate(t, path, "--capacity", "100000", "--error-rate", "0.01")
	keys, _ := numberedKeys(t, 5000)
	for _, cols := range []uint16{0, 80} {
		m, s := openPTY(t, cols)
		cmd := exec.Command(bin, "add", path, "--from", keys)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s.Close()
		var out []byte
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			out = append(out, buf[:n]...)
			if err != nil { // EIO once the child has gone
				break
			}
		}
		m.Close()
		var ee *exec.ExitError
		if err := cmd.Wait(); err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		got := string(out)
		switch cols {
		case 0:
			if cmd.ProcessState.ExitCode() != 0 || strings.Contains(got, "\r\r") || !strings.HasPrefix(got, "add: ") ||
				!strings.Contains(got, "add: 5000 keys, ") || !strings.Contains(got, "100.00% read\r\n") {
				t.Errorf("add on a terminal of 0 columns: exit %d, %q", cmd.ProcessState.ExitCode(), got)
			}
		default:
			if cmd.ProcessState.ExitCode() != 0 || !strings.Contains(got, "] 100.00%") {
				t.Errorf("add on a terminal of %d columns: no bar: %q", cols, got)
			}
		}
	}
}
