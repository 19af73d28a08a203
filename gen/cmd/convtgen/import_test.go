package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"convtgen/gen/spec"
)

const (
	problem61 = "../../importer/testdata/kernelbench/level1/61_conv_transposed_3D__square_input__square_kernel.py"
	problem15 = "../../importer/testdata/kernelbench/level2/15_ConvTranspose3d_BatchNorm_Subtract.py"
)

func TestImportToStdout(t *testing.T) {
	r := runIn(".", "import", "-name", name61, problem61)
	if r.code != exitOK || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	s, err := spec.Parse("stdout", []byte(r.stdout))
	if err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if s.Name != name61 || s.Title != "61_conv_transposed_3D__square_input__square_kernel" {
		t.Errorf("name %q, title %q", s.Name, s.Title)
	}
}

func TestImportToFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.yaml")
	r := runIn(".", "import", problem61, "-o", out)
	if r.code != exitOK || r.stdout != "" || r.stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse(out, data)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "p61_conv_transposed_3d_square_input_square_kernel" {
		t.Errorf("default name %q", s.Name)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the folder; want the spec alone", len(entries))
	}
}

func TestImportRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s.yaml")
	// Problem 15 with a layer and an op the spec does not describe.
	src, err := os.ReadFile(problem15)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "nn.BatchNorm3d(out_channels)", "nn.InstanceNorm3d(out_channels)", 1)
	bad = strings.Replace(bad, "x - torch.mean(", "x - torch.median(", 1)
	problem := filepath.Join(dir, "15.py")
	if err := os.WriteFile(problem, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runIn(".", "import", "-o", out, problem)
	if r.code != exitProblem || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q", r.code, r.stdout)
	}
	ls := lines(r.stderr)
	positioned := regexp.MustCompile(`^` + regexp.QuoteMeta(problem) + `:\d+:\d+: `)
	for _, l := range ls[:len(ls)-1] {
		if !positioned.MatchString(l) {
			t.Errorf("not a positioned refusal: %q", l)
		}
	}
	if last := ls[len(ls)-1]; !strings.HasPrefix(last, "convtgen: 2 problems in ") || !strings.HasSuffix(last, "nothing written") {
		t.Errorf("last line %q", last)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written for a refused file", out)
	}
}

func TestImportUsage(t *testing.T) {
	for _, args := range [][]string{{"import"}, {"import", problem61, problem15}, {"import", "-nope", problem61}} {
		if r := runIn(".", args...); r.code != exitUsage || len(lines(r.stderr)) != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line", args, r.code, r.stderr)
		}
	}
	if r := runIn(".", "import", "missing.py"); r.code != exitProblem || !strings.HasPrefix(r.stderr, "convtgen: missing.py: ") {
		t.Errorf("missing file: exit %d, stderr %q", r.code, r.stderr)
	}
	r := runIn(".", "help", "import")
	if r.code != exitOK || !strings.Contains(r.stdout, "Write a spec from a KernelBench-style problem file.") || !strings.Contains(r.stdout, "convtgen import -name") {
		t.Errorf("help import: exit %d\n%s", r.code, r.stdout)
	}
}

// TestConvert rewrites a version-1 spec in place into a valid version-2
// one that keeps its comments, leaves a version-2 spec alone, and refuses
// a file that is not a spec without touching it.
func TestConvert(t *testing.T) {
	dir := t.TempDir()
	v1, err := os.ReadFile("../../spec/testdata/v1/77_padded_dilated_strided.yaml")
	if err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.yaml")
	if err := os.WriteFile(old, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Parse(old, v1); err == nil {
		t.Fatal("the version-1 fixture parses as it is: nothing to convert")
	}
	r := runIn(".", "convert", old)
	if r.code != exitOK || r.stdout != "converted  "+old+"\n" || r.stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	got, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Parse(old, got); err != nil {
		t.Fatalf("converted spec: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), "# KernelBench level 1, problem 77.") {
		t.Errorf("the comments are gone:\n%s", got)
	}
	if r := runIn(".", "convert", old); r.code != exitOK || r.stdout != "" {
		t.Errorf("a version-2 spec again: exit %d, stdout %q", r.code, r.stdout)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("- a list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runIn(".", "convert", bad); r.code != exitProblem {
		t.Errorf("not a spec: exit %d, stderr %q", r.code, r.stderr)
	}
	if data, _ := os.ReadFile(bad); string(data) != "- a list\n" {
		t.Errorf("a refused file was changed: %q", data)
	}
}
