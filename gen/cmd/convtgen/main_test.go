package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Two specs of the repository, copied into scratch repositories.
const (
	spec61 = "specs/level1/61_square_input_square_kernel.yaml"
	spec77 = "specs/level1/77_padded_dilated_strided.yaml"
	name61 = "l1_61_square_input_square_kernel"
	name77 = "l1_77_padded_dilated_strided"
)

// scratchRepo makes a repository of its own: go.mod declaring the module
// (how the command finds the root) and the two specs.
func scratchRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "go.mod"), "module convtgen\n\ngo 1.26\n")
	for _, p := range []string{spec61, spec77} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", p))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(root, p), string(data))
	}
	return root
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func runIn(dir string, args ...string) result {
	var out, errOut bytes.Buffer
	code := run(args, dir, &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// lines are the non-empty lines of s.
func lines(s string) []string {
	var ls []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// oneLine fails unless s is exactly one line starting with prefix.
func oneLine(t *testing.T, what, s, prefix string) {
	t.Helper()
	if ls := lines(s); len(ls) != 1 || !strings.HasPrefix(ls[0], prefix) {
		t.Errorf("%s: want one line starting %q, got %q", what, prefix, s)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestHelpListsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		r := runIn(t.TempDir(), args...)
		if r.code != exitOK || r.stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
		for _, c := range commands {
			if !strings.Contains(r.stdout, "  "+c.name+strings.Repeat(" ", 12-len(c.name))+c.purpose+"\n") {
				t.Errorf("%v: no line for %s with its purpose", args, c.name)
			}
		}
		for _, want := range []string{"Exit status: 0", "1 problems found", "2 usage error", "go.mod declares module convtgen"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v: help does not say %q", args, want)
			}
		}
	}
	// Without a command: the same text, as a usage error.
	if r := runIn(t.TempDir()); r.code != exitUsage || r.stdout != "" || !strings.Contains(r.stderr, "Commands:") {
		t.Errorf("no command: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestHelpOfEachCommand(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{{"help", c.name}, {c.name, "-h"}} {
			r := runIn(t.TempDir(), args...)
			if r.code != exitOK || r.stderr != "" || !strings.HasPrefix(r.stdout, "Usage: convtgen "+c.name) {
				t.Errorf("%v: exit %d, stderr %q, stdout %.60q", args, r.code, r.stderr, r.stdout)
			}
			for _, ex := range c.examples {
				if !strings.Contains(r.stdout, "\n  "+ex+"\n") {
					t.Errorf("%v: example %q missing", args, ex)
				}
			}
		}
	}
	r := runIn(t.TempDir(), "help", "generate")
	for _, want := range []string{"-out DIR", "-root DIR", "convtgen generate -out build/big verify/testdata/big"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help generate does not say %q", want)
		}
	}
}

// Every mistake on the command line is exit status 2 and one line on
// stderr that names the command's help.
func TestUsageErrors(t *testing.T) {
	root := scratchRepo(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frob"}, `convtgen: unknown command "frob" (convtgen -h lists the commands)`},
		{[]string{"-check"}, `convtgen: unknown command "-check"`},
		{[]string{"help", "frob"}, `convtgen help: unknown command "frob"`},
		{[]string{"generate", "-x"}, "convtgen generate: flag provided but not defined: -x (convtgen help generate)"},
		{[]string{"random", "-n", "ten"}, `convtgen random: invalid value "ten" for flag -n`},
		{[]string{"random", "-n", "0"}, "convtgen random: -n 0: must be at least 1"},
		{[]string{"tune", "extra"}, `convtgen tune: takes no arguments (got "extra")`},
		{[]string{"check", "go.mod"}, "convtgen check: go.mod: not under specs/"},
		{[]string{"generate", "specs/nothere.yaml"}, "convtgen generate: specs/nothere.yaml: no such file or folder"},
		{[]string{"generate", "-out", "out/x"}, "convtgen generate: -out out/x: inside out/"},
	} {
		r := runIn(root, tc.args...)
		if r.code != exitUsage || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q; want exit 2 and nothing on stdout", tc.args, r.code, r.stdout)
		}
		oneLine(t, strings.Join(tc.args, " "), r.stderr, tc.want)
	}
	if exists(filepath.Join(root, "out")) {
		t.Error("a usage error wrote out/")
	}
}

func TestNotInsideTheRepository(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module other\n")
	r := runIn(dir, "check")
	if r.code != exitUsage {
		t.Errorf("exit %d, want 2", r.code)
	}
	oneLine(t, "check outside", r.stderr, "convtgen check: "+dir+": not inside the convtgen repository")
	if !strings.Contains(r.stderr, "give -root DIR") {
		t.Errorf("check outside: %q does not say how to name the repository", r.stderr)
	}
}

// From a folder deep inside the repository the command finds the root by
// go.mod, generates there, and check then reports "stale" per file.
func TestGenerateAndCheckFromASubfolder(t *testing.T) {
	root := scratchRepo(t)
	sub := filepath.Join(root, "specs", "level1")
	r := runIn(sub, "generate")
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("generate: exit %d, stderr %q", r.code, r.stderr)
	}
	cuda := filepath.Join(root, "out", name61, "cuda.sm80.py")
	if !exists(cuda) || !exists(filepath.Join(root, "verify", "kernels_gen.go")) || exists(filepath.Join(sub, "out")) {
		t.Fatal("generate from specs/level1 did not write the root's out/ and registry")
	}
	if !strings.HasSuffix(r.stdout, " files changed\n") {
		t.Errorf("generate: no summary line: %q", r.stdout)
	}
	if r := runIn(sub, "check"); r.code != exitOK || r.stdout != "convtgen: out/ is up to date\n" {
		t.Errorf("check after generate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(cuda, []byte("# Code generated by convtgen, edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(root, "out", name77, "problem.py")
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	r = runIn(sub, "check")
	want := "stale  out/" + name61 + "/cuda.sm80.py\nstale  out/" + name77 + "/problem.py\n"
	if r.code != exitProblem || r.stdout != want {
		t.Errorf("check: exit %d, stdout %q; want 1 and %q", r.code, r.stdout, want)
	}
	oneLine(t, "check", r.stderr, "convtgen: 2 files stale; run make")
	if data, _ := os.ReadFile(cuda); !strings.Contains(string(data), "edited") || exists(gone) {
		t.Error("check wrote files")
	}
}

// generate PATH writes only that spec's files; the others stay as they are.
func TestGenerateOneSpec(t *testing.T) {
	root := scratchRepo(t)
	r := runIn(filepath.Join(root, "specs"), "generate", "level1/"+filepath.Base(spec77))
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !exists(filepath.Join(root, "out", name77, "cuda.sm80.py")) || exists(filepath.Join(root, "out", name61)) {
		t.Error("generate of one spec: want only its folder under out/")
	}
	// check of that spec passes, of all of them fails (the other is missing).
	if r := runIn(root, "check", spec77); r.code != exitOK {
		t.Errorf("check %s: exit %d, stdout %q", spec77, r.code, r.stdout)
	}
	if r := runIn(root, "check"); r.code != exitProblem || !strings.Contains(r.stdout, "stale  out/"+name61+"/") {
		t.Errorf("check: exit %d, stdout %q", r.code, r.stdout)
	}
}

// generate -out renders specs from anywhere into a scratch folder.
func TestGenerateInto(t *testing.T) {
	root := scratchRepo(t)
	ext := t.TempDir()
	data, err := os.ReadFile(filepath.Join(root, spec61))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ext, "mine.yaml"), string(data))
	dest := filepath.Join(root, "build", "x")
	r := runIn(root, "generate", "-out", dest, ext, spec77)
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r.stdout != "convtgen: 2 specs in build/x\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	for _, n := range []string{name61, name77} {
		if !exists(filepath.Join(dest, n, "problem.py")) {
			t.Errorf("%s not rendered into -out", n)
		}
	}
	if exists(filepath.Join(root, "out")) {
		t.Error("generate -out wrote out/")
	}
}

// An invalid spec: every problem one line in file:line:col form, then one
// summary line, exit 1 and nothing written.
func TestInvalidSpecs(t *testing.T) {
	root := scratchRepo(t)
	path := filepath.Join(root, spec61)
	data, _ := os.ReadFile(path)
	bad := strings.Replace(strings.Replace(string(data), "version: 2", "version: 3", 1), "batch:", "batchh:", 1)
	write(t, path, bad)
	r := runIn(filepath.Join(root, "specs"), "generate")
	if r.code != exitProblem || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing on stdout", r.code, r.stdout)
	}
	ls := lines(r.stderr)
	diag := regexp.MustCompile(`^` + regexp.QuoteMeta(spec61) + `:\d+:\d+: [a-z_.]+: `)
	if len(ls) < 3 {
		t.Fatalf("want two problems and a summary, got %q", r.stderr)
	}
	for _, l := range ls[:len(ls)-1] {
		if !diag.MatchString(l) {
			t.Errorf("not a file:line:col diagnostic: %q", l)
		}
	}
	if want := "problems in 1 spec; nothing written"; !strings.HasSuffix(ls[len(ls)-1], want) {
		t.Errorf("last line %q, want the summary", ls[len(ls)-1])
	}
	if exists(filepath.Join(root, "out")) {
		t.Error("an invalid spec let generate write")
	}
}

// The built command's exit statuses are run's (main adds nothing), and
// its errors are its own lines.
func TestBinaryExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "convtgen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	root := scratchRepo(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"generate"}, 0},
		{[]string{"check"}, 0},
		{[]string{"frob"}, 2},
	} {
		cmd := exec.Command(bin, tc.args...)
		cmd.Dir = filepath.Join(root, "specs")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr.String())
		}
	}
	if err := os.Remove(filepath.Join(root, "out", name61, "cuda.sm80.py")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "check")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("check of a stale tree: %v, want exit status 1", err)
	}
	oneLine(t, "check", stderr.String(), "convtgen: 1 file stale")
}

// explain prints each target's ranking of an open choice and names a
// given one; generate warns on stderr at a tuned choice copied to another
// problem, and still writes.
func TestExplainAndTuneWarning(t *testing.T) {
	root := scratchRepo(t)
	open := filepath.Join(root, "specs", "open.yaml")
	src := readFile(t, filepath.Join(root, spec77))
	i := strings.Index(src, "\nkernel:\n")
	write(t, open, strings.Replace(src[:i+1], "name: "+name77, "name: open77", 1))
	r := runIn(root, "explain", "-top", "2", "specs/open.yaml")
	if r.code != exitOK || strings.Count(r.stdout, "candidates, cheapest first") != 4 || !strings.Contains(r.stdout, " 2. ") || strings.Contains(r.stdout, " 3. ") {
		t.Errorf("explain of an open spec: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runIn(root, "explain", spec77); r.code != exitOK || strings.Count(r.stdout, "the spec's choice") != 4 {
		t.Errorf("explain of a tuned spec: exit %d, stdout %q", r.code, r.stdout)
	}
	copied := strings.Replace(strings.Replace(src, "name: "+name77, "name: copy77", 1), "  batch: 16\n", "  batch: 4\n", 1)
	write(t, filepath.Join(root, "specs", "copy.yaml"), copied)
	r = runIn(root, "generate")
	if r.code != exitOK || !strings.Contains(r.stderr, "specs/copy.yaml:") || !strings.Contains(r.stderr, "kernel.sm90.cuda: warning: tuned for another problem") {
		t.Errorf("generate with a copied tuning: exit %d, stderr %q", r.code, r.stderr)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
