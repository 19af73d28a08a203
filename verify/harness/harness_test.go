package harness

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEmbeddedScriptIsTheFile(t *testing.T) {
	disk, err := os.ReadFile("evaluate.py")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, script) {
		t.Fatal("embedded harness differs from evaluate.py")
	}
}

// TestRunPassesArguments runs the harness through a stand-in python that
// records how it was called.
func TestRunPassesArguments(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "python")
	record := filepath.Join(dir, "args")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > "+record+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(context.Background(), fake, dir, true, "r.json", []string{"out", "more"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "evaluate.py") + " --time --json r.json out more"
	if strings.TrimSpace(string(got)) != want {
		t.Fatalf("python called with %q, want %q", got, want)
	}
	if written, _ := os.ReadFile(filepath.Join(dir, "evaluate.py")); !bytes.Equal(written, script) {
		t.Fatal("the harness was not written beside the run")
	}
}

func TestRunReportsFailure(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "python")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), fake, dir, false, "", []string{"out"}, os.Stderr, os.Stderr); err == nil {
		t.Fatal("a failing harness must return an error")
	}
}
