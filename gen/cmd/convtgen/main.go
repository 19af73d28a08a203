// Command convtgen renders YAML specs of ConvTranspose3d problems into
// single-file PyTorch submissions (out/) and the GPU verifier's kernel
// registry; `convtgen -h` lists its commands. It is a thin layer over
// package gen: commands, flags, paths and messages.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"convtgen/gen/spec"
)

// Exit statuses, as the help text documents them.
const (
	exitOK      = 0
	exitProblem = 1 // invalid specs, refused problem files, stale or conflicting files, failed reads or writes
	exitUsage   = 2 // unknown command or flag, bad arguments, not inside the repository
)

func main() {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "convtgen:", err)
		os.Exit(exitProblem)
	}
	os.Exit(run(os.Args[1:], wd, os.Stdout, os.Stderr))
}

// env is what a command runs in: the folder it was started from (relative
// paths on the command line are relative to it) and its output.
type env struct {
	wd             string
	stdout, stderr io.Writer
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// errReported means the command printed its problems itself (check's stale
// files): exit status 1 with nothing more to say.
var errReported = errors.New("reported")

// command is one subcommand. define declares its flags on fs and returns
// what runs it with the remaining arguments.
type command struct {
	name     string
	args     string // what follows the flags in the usage line
	purpose  string // one line, for convtgen -h
	about    string // more, for convtgen help NAME
	examples []string
	define   func(fs *flag.FlagSet) func(e *env, args []string) error
}

var commands []*command

func init() {
	commands = []*command{cmdGenerate, cmdCheck, cmdImport, cmdConvert, cmdRandom, cmdTune, cmdApplyTune, cmdTuneNotes, cmdExplain, cmdHelp}
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// run is the whole command line; it returns the exit status.
func run(args []string, wd string, stdout, stderr io.Writer) int {
	e := &env{wd: wd, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		printUsage(stdout)
		return exitOK
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "convtgen: unknown command %q (convtgen -h lists the commands)\n", args[0])
		return exitUsage
	}
	fs := flag.NewFlagSet("convtgen "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are reported below, in one line
	runCmd := c.define(fs)
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		printHelp(stdout, c)
		return exitOK
	}
	if err != nil {
		err = usageError{err.Error()}
	} else {
		err = runCmd(e, pos)
	}
	return report(stderr, c, err)
}

// parseInterspersed parses flags before and after the positional
// arguments (convtgen generate specs/x.yaml -out build/x), up to "--".
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// report prints err, one line per problem, and returns the exit status.
// Spec diagnostics keep their file:line:col: form; everything else is
// prefixed with convtgen.
func report(w io.Writer, c *command, err error) int {
	var u usageError
	var errs spec.Errors
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u):
		fmt.Fprintf(w, "convtgen %s: %s (convtgen help %s)\n", c.name, u.msg, c.name)
		return exitUsage
	case errors.Is(err, errReported):
		return exitProblem
	case errors.As(err, &errs):
		files := map[string]bool{}
		for _, e := range errs {
			fmt.Fprintln(w, e.Error())
			files[e.File] = true
		}
		fmt.Fprintf(w, "convtgen: %s in %s; nothing written\n", plural(len(errs), "problem"), plural(len(files), "spec"))
		return exitProblem
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(w, "convtgen:", line)
	}
	return exitProblem
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

const intro = `convtgen renders YAML specs of ConvTranspose3d problems (specs/) into
single-file PyTorch submissions with hand-written kernels (out/) and the GPU
verifier's kernel registry (verify/kernels_gen.go).`

const trailer = `The repository is found from the current folder: it is the nearest folder,
the current one or above, whose go.mod declares module convtgen (-root DIR
names it instead). Paths on the command line are relative to the current
folder.

Exit status: 0 done (check: nothing stale); 1 problems found (invalid specs,
refused problem files, stale or conflicting files, failed reads or writes);
2 usage error (unknown command or flag, bad arguments, not inside the
repository).`

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "%s\n\nUsage: convtgen COMMAND [flags] [arguments]\n\nCommands:\n", intro)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.purpose)
	}
	fmt.Fprintln(w, "\nExamples:")
	for _, c := range commands {
		if len(c.examples) > 0 {
			fmt.Fprintf(w, "  %s\n", c.examples[0])
		}
	}
	fmt.Fprintf(w, "\nconvtgen help COMMAND shows a command's flags and more examples.\n\n%s\n", trailer)
}

func printHelp(w io.Writer, c *command) {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.define(fs)
	usage := "convtgen " + c.name
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		usage += " [flags]"
	}
	if c.args != "" {
		usage += " " + c.args
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n", usage, strings.ToUpper(c.purpose[:1])+c.purpose[1:])
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", c.about)
	}
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, ex := range c.examples {
			fmt.Fprintf(w, "  %s\n", ex)
		}
	}
	if c.name != "help" {
		fmt.Fprintf(w, "\n%s\n", trailer)
	}
}

var cmdHelp = &command{
	name:     "help",
	args:     "[COMMAND]",
	purpose:  "show the commands, or one command's flags and examples",
	examples: []string{"convtgen help generate"},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		return func(e *env, args []string) error {
			switch len(args) {
			case 0:
				printUsage(e.stdout)
				return nil
			case 1:
				if c := lookup(args[0]); c != nil {
					printHelp(e.stdout, c)
					return nil
				}
				return usagef("unknown command %q", args[0])
			}
			return usagef("one command at a time (got %d)", len(args))
		}
	},
}
