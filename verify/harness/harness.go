// Package harness embeds the evaluator-style harness (evaluate.py) so the
// verifier binary carries it to a GPU host, and runs it there.
package harness

import (
	"context"
	_ "embed"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed evaluate.py
var script []byte

// Run writes the harness into dir and runs it with python over the spec
// folders in dirs (time: the evaluator's timing too; jsonPath: where it
// writes its results, "" for none). The harness must run from a file: it
// re-runs itself in child processes.
func Run(ctx context.Context, python, dir string, time bool, jsonPath string, dirs []string, stdout, stderr io.Writer) error {
	path := filepath.Join(dir, "evaluate.py")
	if err := os.WriteFile(path, script, 0o644); err != nil {
		return err
	}
	args := []string{path}
	if time {
		args = append(args, "--time")
	}
	if jsonPath != "" {
		args = append(args, "--json", jsonPath)
	}
	cmd := exec.CommandContext(ctx, python, append(args, dirs...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	return cmd.Run()
}
