package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"convtgen/gen/plan"
)

// The harness's TARGETS table states what gen/plan/target.go decides:
// every target, its compute capability, whether its CUDA file runs there
// alone, and its GPU.
func TestTargetsMatchPlan(t *testing.T) {
	re := regexp.MustCompile(`(?m)^    "(\w+)": \{"cc": \((\d+), (\d+)\), "exact": (True|False), "gpu": "([^"]+)"\},$`)
	got := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(script), -1) {
		got[m[1]] = fmt.Sprintf("%s.%s exact=%s %s", m[2], m[3], m[4], m[5])
	}
	if len(got) != len(plan.Targets) {
		t.Errorf("evaluate.py's TARGETS has %d entries %v, plan.Targets %d", len(got), got, len(plan.Targets))
	}
	for _, tg := range plan.Targets {
		want := fmt.Sprintf("%d.%d exact=%s %s", tg.Major, tg.Minor, map[bool]string{true: "True", false: "False"}[tg.Exact()], tg.GPU)
		if got[tg.Name] != want {
			t.Errorf("evaluate.py's TARGETS[%q] = %q, want %q", tg.Name, got[tg.Name], want)
		}
	}
}

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
