package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dablooms/dablooms/internal/testknobs"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// app holds what every command shares: the streams and the global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	json        bool
	quiet       bool
	progress    string
	lockTimeout time.Duration
	bootID      string
	start       time.Time // when the command started: --lock-timeout bounds its waits together
	command     string    // the name of the command that ran, for the hints after an error
}

// lockWait is what is left of --lock-timeout since the command started: the
// LockTimeout of the next handle it opens, so that every wait of the
// command for a lock adds up to at most --lock-timeout. (A handle waits
// its own LockTimeout at each step; after a step timed out, a command does
// not start another step that would wait for the same lock.)
func (a *app) lockWait() time.Duration {
	if a.lockTimeout == 0 {
		return 0 // the library's default
	}
	return max(a.lockTimeout-time.Since(a.start), time.Millisecond)
}

// withBootID attaches the hidden --boot-id, if given, to the options o (of
// scaling or recover) and returns o. The library takes it only through
// internal/testknobs: it is for testing crash handling, not an option.
func withBootID[T any](o *T, id string) *T {
	if id != "" {
		testknobs.Set(o, &testknobs.Knobs{BootID: id})
	}
	return o
}

const exitCodesHelp = `Exit codes:
  0  success; for verify, inspect and repair: the file is clean (or unflushed:
     changed since the last flush by a process that is gone or still running,
     on this boot, so every completed change is in the page cache)
  1  operational error: I/O, lock timeout, no free writer slot, not a dablooms
     file, unsupported version, interrupted by a signal, a key to remove was
     not present or ambiguous, the file needs repair before it can be written;
     contains --exit-code: a key is absent (and nothing on stderr)
  2  usage error: unknown command or flag, wrong number of arguments, bad value;
     contains --exit-code: any error (as grep: 1 is only "absent")
  3  verify or inspect found the file interrupted, dirty, damaged or corrupt
     (a dablooms file cut short included), or repair could not make it clean`

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "dabloomsctl",
		Short: "Create, fill, query, inspect, verify and repair dablooms files",
		Long: `dabloomsctl works on dablooms files: memory-mapped, persistent, scaling
counting Bloom filters that several processes can share.

Every key is added with an id (a row id, a timestamp): ids route a later
remove to the filter that holds the key, and let repair rebuild a damaged
filter from the source of truth by id range.

Results go to stdout; logs, warnings and progress bars go to stderr. With
--json, stdout carries exactly one JSON document whose schema is documented
in docs/CLI.md (and "go doc ./cmd/dabloomsctl"); each carries a "schema" field
naming its version.

Shell completion (commands, flags, --layout and --progress values, files):
  source <(dabloomsctl completion bash)     # or zsh, fish, powershell
'dabloomsctl completion bash --help' says how to install it for good.

Each command's --help starts with its usage and ends with the exit codes.

` + exitCodesHelp,
		Example: `  dabloomsctl create spam.dbl --capacity 1000000 --error-rate 0.001
  dabloomsctl add spam.dbl --from links.tsv       # KEY<TAB>ID per line
  dabloomsctl contains spam.dbl http://example.com/x
  dabloomsctl inspect spam.dbl
  dabloomsctl verify spam.dbl || dabloomsctl repair spam.dbl --rebuild-from links.tsv`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
					return usageErrorf("unknown command %q; did you mean %s?", args[0], strings.Join(s, " or "))
				}
				return usageErrorf("unknown command %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(a.stderr)
			cmd.Help()
			return usageErrorf("a command is required")
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err, cmd: cmd}
	})
	pf := root.PersistentFlags()
	pf.BoolVar(&a.json, "json", false, "write one JSON document to stdout (schema in docs/CLI.md); no progress bar")
	pf.BoolVarP(&a.quiet, "quiet", "q", false, "no progress bar and no summary on stderr")
	pf.StringVar(&a.progress, "progress", "auto", "progress bar on stderr for bulk work: auto (when stderr is a terminal), always, never")
	pf.DurationVar(&a.lockTimeout, "lock-timeout", 10*time.Second, "longest the command waits, in all, for locks other processes hold")
	pf.StringVar(&a.bootID, "boot-id", "", "pretend the machine's boot id is this (testing crash handling)")
	pf.MarkHidden("boot-id")
	root.SuggestionsMinimumDistance = 2
	root.RegisterFlagCompletionFunc("progress", cobra.FixedCompletions([]string{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(
		newCreateCmd(a),
		newAddCmd(a),
		newRemoveCmd(a),
		newContainsCmd(a),
		newInspectCmd(a),
		newVerifyCmd(a),
		newRepairCmd(a),
		newFlushCmd(a),
		newRetireCmd(a),
		newBackupCmd(a),
		newRestoreCmd(a),
		newBenchCmd(a),
		newImportCmd(a),
		newCompactCmd(a),
		newUpgradeCmd(a),
		newVersionCmd(a),
	)
	setVersionFlag(root)
	for _, c := range root.Commands() {
		c.SilenceErrors, c.SilenceUsage = true, true
		if c.Long != "" {
			c.SetHelpTemplate(subHelpTemplate)
		}
	}
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		switch a.progress {
		case "auto", "always", "never":
		default:
			return usageErrorf("--progress must be auto, always or never, not %q", a.progress)
		}
		if a.lockTimeout < 0 {
			return usageErrorf("--lock-timeout must not be negative")
		}
		return nil
	}
	return root
}

// subHelpTemplate is a command's --help: its usage first, then what it
// does, examples, flags, and the exit codes at the end.
const subHelpTemplate = `Usage:
  {{.UseLine}}

{{.Long | trimTrailingWhitespaces}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}

` + exitCodesHelp + "\n"

// exactArgs and minArgs are cobra's validators, returning usage errors.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %d argument(s), got %d", cmd.Name(), n, len(args))
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usageErrorf("%s takes at least %d argument(s), got %d", cmd.Name(), n, len(args))
		}
		return nil
	}
}

// logf writes a log line to stderr unless --quiet.
func (a *app) logf(format string, args ...any) {
	if a.quiet {
		return
	}
	fmt.Fprintf(a.stderr, format+"\n", args...)
}

// warnf writes a warning to stderr even with --quiet.
func (a *app) warnf(format string, args ...any) {
	fmt.Fprintf(a.stderr, "dabloomsctl: "+format+"\n", args...)
}

func flagChanged(fs *pflag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	return f != nil && f.Changed
}
