package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/dablooms/dablooms/recover"
	"github.com/dablooms/dablooms/scaling"
	"github.com/spf13/cobra"
)

// Exit codes (documented in the root command's help, docs/CLI.md and the README).
const (
	exitOK      = 0
	exitFail    = 1
	exitUsage   = 2
	exitUnclean = 3
	// exitAnswerError is the code of an operational error of contains
	// --exit-code, whose 1 means "a key is absent" (grep's convention).
	exitAnswerError = 2
)

// exitError carries an exit code. A nil err with a code means the command
// already said everything it had to say (on stdout or stderr).
type exitError struct {
	code int
	err  error
	cmd  *cobra.Command // for usage errors: whose --help to point to
	// answer: the code is that of contains --exit-code, whose 1 means
	// "absent": an operational error exits 2 there, and is not a usage
	// error (no pointer to --help).
	answer bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// uncleanf returns exit code 3 with a message.
func uncleanf(format string, args ...any) error {
	return &exitError{code: exitUnclean, err: fmt.Errorf(format, args...)}
}

// answerError makes err, an error of contains --exit-code, exit with a
// code no answer has, as grep does: 2, or the error's own code if that is
// larger than 1.
func answerError(err error) error {
	var ee *exitError
	if errors.As(err, &ee) && ee.code > exitFail {
		return err
	}
	return &exitError{code: exitAnswerError, err: err, answer: true}
}

// silentExit returns an exit code whose reason the command already printed.
func silentExit(code int) error { return &exitError{code: code} }

// exitCode prints err (if any) to stderr and maps it to an exit code.
func (a *app) exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	code := exitFail
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		msg = "interrupted: " + msg
	}
	// A joined error (the run's and the flush's) spans several lines:
	// each gets the prefix.
	for _, line := range strings.Split(msg, "\n") {
		fmt.Fprintf(a.stderr, "dabloomsctl: %s\n", line)
	}
	if hint := hintFor(err, a.command); hint != "" {
		fmt.Fprintf(a.stderr, "dabloomsctl: %s\n", hint)
	}
	if code == exitUsage && (ee == nil || !ee.answer) {
		name := "dabloomsctl"
		if ee != nil && ee.cmd != nil {
			name = ee.cmd.CommandPath()
		}
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", name)
	}
	return code
}

// hintFor suggests what to do about well-known library errors of the
// command named command.
func hintFor(err error, command string) string {
	var se *scaling.StateError
	switch {
	case errors.As(err, &se) && se.Condition == scaling.Dirty:
		return "run 'dabloomsctl verify FILE' to see which filters, then 'dabloomsctl repair FILE --rebuild-from KEYS' (KEY<TAB>ID lines of every key) to rebuild them"
	case errors.As(err, &se):
		return "run 'dabloomsctl verify FILE' to see why, then 'dabloomsctl repair FILE'"
	case errors.Is(err, scaling.ErrLockTimeout):
		return "another process holds the lock; retry, or raise --lock-timeout"
	case errors.Is(err, scaling.ErrNoSlot):
		return "every writer slot is taken by a live process or holds a cut operation: run 'dabloomsctl verify FILE'"
	case errors.Is(err, recover.ErrBusy):
		return "another process has the file open (a file older than format 1.3 is rewritten only once every handle, readers included, has closed it): stop it, or raise --wait"
	case errors.Is(err, scaling.ErrExists):
		return "use --force to replace it"
	case errors.Is(err, fs.ErrPermission):
		return permissionHint[command]
	}
	return ""
}

// permissionHint says, per command, what it must be allowed to read and
// write.
var permissionHint = map[string]string{
	"create":          "create writes FILE: it needs write permission on FILE's directory (and on FILE, with --force)",
	"add":             "add writes FILE: it needs read and write permission on FILE",
	"remove":          "remove writes FILE: it needs read and write permission on FILE",
	"flush":           "flush writes FILE: it needs read and write permission on FILE",
	"retire":          "retire writes FILE: it needs read and write permission on FILE",
	"repair":          "repair writes the repaired file beside FILE (or --output) and its backup: it needs read permission on FILE and write permission on the directory it writes in",
	"upgrade":         "upgrade writes the new file beside FILE (or --output) and its backup: it needs read permission on FILE and write permission on the directory it writes in",
	"compact":         "compact writes the compacted file beside FILE and renames it over FILE: it needs read and write permission on FILE and write permission on FILE's directory",
	"backup":          "backup opens FILE for writing (to flush it, or hold its writers) and writes DEST: it needs read and write permission on FILE and write permission on DEST's directory",
	"restore":         "restore reads BACKUP and writes a copy beside FILE, renamed over FILE: it needs read permission on BACKUP and write permission on FILE's directory",
	"import-dablooms": "import-dablooms reads OLD and writes NEW: it needs read permission on OLD and write permission on NEW's directory",
	"inspect":         "inspect only reads FILE: it needs read permission on FILE (and search permission on its directories)",
	"verify":          "verify only reads FILE: it needs read permission on FILE (and search permission on its directories)",
	"contains":        "contains only reads FILE: it needs read permission on FILE (and search permission on its directories)",
}

// isCorruption reports whether err says the file's bytes are wrong (as
// opposed to an I/O problem or a file that is not a dablooms file at all).
func isCorruption(err error) bool {
	return errors.Is(err, scaling.ErrCorrupt) || errors.Is(err, scaling.ErrChecksum)
}
