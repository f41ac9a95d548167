//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A permission error's hint says what that command must be allowed to
// read and write (the old hint listed add, remove, flush, retire and
// repair for every command), and backup's names DEST when DEST's
// directory is the one it may not write (the old code named FILE). The
// binary runs as an unprivileged user: root is never denied.
func TestPermissionHints(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534} // nobody
	}
	for _, p := range []string{filepath.Dir(filepath.Dir(bin)), filepath.Dir(bin), filepath.Dir(dir), dir} { // t.TempDir makes them 0700
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	good := filepath.Join(dir, "good.dbl")
	mustCreate(t, good, "--capacity", "100", "--error-rate", "0.01")
	if err := os.Chmod(good, 0o644); err != nil { // readable, not writable, by the user
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	shut := filepath.Join(dir, "shut")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{open, 0o777}, {shut, 0o555}} {
		if err := os.Mkdir(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d.path, d.mode) // past the umask
	}
	mine := filepath.Join(open, "mine.dbl") // the user may write it, not its directory's sibling shut/
	mustCreate(t, mine, "--capacity", "100", "--error-rate", "0.01")
	os.Chmod(mine, 0o666)

	runAs := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		code := 0
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return result{code: code, stdout: out.String(), stderr: errb.String()}
	}
	for _, c := range []struct {
		args       []string
		names      string // the file the message names
		hint, lack string
	}{
		{[]string{"add", good, "k"}, good, "add writes FILE: it needs read and write permission on FILE", "inspect"},
		{[]string{"create", filepath.Join(shut, "new.dbl"), "--capacity", "10", "--error-rate", "0.1"}, filepath.Join(shut, "new.dbl"), "create writes FILE: it needs write permission on FILE's directory", "retire"},
		{[]string{"backup", mine, filepath.Join(shut, "b.dbl")}, filepath.Join(shut, "b.dbl"), "backup opens FILE for writing", "retire"},
		{[]string{"compact", good, "--from", "-", "--capacity", "10"}, good, "compact writes the compacted file beside FILE", "retire"},
	} {
		r := runAs(c.args...)
		if r.code != exitFail || !strings.Contains(r.stderr, "permission denied on "+c.names+" ") ||
			!strings.Contains(r.stderr, "\ndabloomsctl: "+c.hint) || strings.Contains(r.stderr, c.lack) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant the error on %s and the hint %q", c.args, r.code, r.stderr, c.names, c.hint)
		}
	}
}
