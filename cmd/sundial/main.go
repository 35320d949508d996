// Command sundial is Sundial's single binary:
//
//   - server: a scheduler node with the REST API; it migrates its database on start;
//   - executor: a stand-alone executor with the built-in http and shell handlers;
//   - job, trigger, exec, app, calendar, node, token: the CLI over the REST API;
//   - schedule: previews a schedule's fire times, and answers Quartz oracle cases (--batch);
//   - bench: the performance scenarios.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sundial-scheduler/sundial/internal/version"
)

// usageError marks bad input from the user: the command exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "sundial",
		Short:         "Sundial is a distributed, persistent job scheduler",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Version(),
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// A flag the command does not know is bad input, like any other.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(append([]*cobra.Command{newScheduleCmd(), newBenchCmd(), newServerCmd(), newExecutorCmd(), newMigrateCmd(), newImportCmd(), newClusterKeyCmd()}, newAPICommands()...)...)
	return root
}

// run executes the command line and returns the process exit status: 0 on success, 2 for
// bad input, 1 for any other failure. Errors are printed as one line.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "sundial: %s\n", termSafe(err.Error()))
	var ue usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		return 2
	}
	return 1
}

// isCobraUsageError recognises cobra's own complaints (unknown command, bad arguments),
// which it returns as plain errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires ", "invalid argument"} {
		if len(msg) >= len(prefix) && msg[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
