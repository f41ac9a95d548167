package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	// Ctrl-C and SIGTERM cancel the context; commands stop between two
	// operations, flush and close, so the file stays consistent.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code. It is what
// the tests drive: nothing in the commands calls os.Exit.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, start: time.Now()}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitUsage && ee.cmd == nil {
		ee.cmd = cmd
	}
	if cmd != nil {
		a.command = cmd.Name()
	}
	return a.exitCode(err)
}
