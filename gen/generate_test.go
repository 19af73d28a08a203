package gen

import (
	"bytes"
	"errors"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"convtgen/gen/spec"
)

// repoRoot is the repository root seen from this package's folder.
const repoRoot = ".."

// TestCommittedUpToDate: the committed out/ and verify/kernels_gen.go are
// exactly what the specs render to (run go generate ./... when it fails).
func TestCommittedUpToDate(t *testing.T) {
	changes, err := Generate(repoRoot, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		t.Errorf("out of date: %v", c)
	}
}

// TestRenderDeterministic renders every spec twice, with separate
// renderers and loads, and expects the same bytes; every file is
// normalized and marked generated, and the registry is gofmt-clean.
func TestRenderDeterministic(t *testing.T) {
	render := func() map[string][]byte {
		specs, err := LoadAll(repoRoot)
		if err != nil {
			t.Fatal(err)
		}
		files, err := RenderAll(specs)
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	a, b := render(), render()
	if !reflect.DeepEqual(sortedPaths(a), sortedPaths(b)) {
		t.Fatalf("file sets differ:\n%v\n%v", sortedPaths(a), sortedPaths(b))
	}
	for path, data := range a {
		if !bytes.Equal(data, b[path]) {
			t.Errorf("%s: two renders differ", path)
		}
		if !bytes.Equal(normalize(data), data) {
			t.Errorf("%s: not normalized (trailing spaces or newlines)", path)
		}
		if strings.HasPrefix(path, OutDir+"/") && !bytes.HasPrefix(data, []byte(Marker)) {
			t.Errorf("%s: does not start with %q", path, Marker)
		}
	}
	reg, ok := a[RegistryFile]
	if !ok {
		t.Fatalf("no %s rendered", RegistryFile)
	}
	if formatted, err := format.Source(reg); err != nil || !bytes.Equal(formatted, reg) {
		t.Errorf("%s is not gofmt-clean (err %v)", RegistryFile, err)
	}
}

func sortedPaths(m map[string][]byte) []string {
	var ps []string
	for p := range m {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// snapshot reads every file under root (relative slash paths to bytes).
func snapshot(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readSpec reads a committed spec, pinned to the CUDA backend so the
// expected file lists below do not depend on which backends it lists.
func readSpec(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, SpecDir, "level1", name))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^  backends: .*$`).ReplaceAllString(string(b), "  backends: [cuda]")
}

func changeList(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// diffPaths lists the files added, removed or changed between snapshots.
func diffPaths(a, b map[string][]byte) []string {
	var d []string
	for p, x := range a {
		if y, ok := b[p]; !ok || !bytes.Equal(x, y) {
			d = append(d, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, p)
		}
	}
	sort.Strings(d)
	return d
}

// TestGenerateTree drives Generate on a temporary tree: first write,
// idempotence, an edited spec, a deleted spec, and bad specs that must
// leave every file as it was.
func TestGenerateTree(t *testing.T) {
	root := t.TempDir()
	specA := readSpec(t, "72_strided_padded_grouped.yaml") // l1_72_strided_padded_grouped
	specB := readSpec(t, "61_square_input_square_kernel.yaml")
	writeFile(t, filepath.Join(root, "specs/a/72.yaml"), specA)
	writeFile(t, filepath.Join(root, "specs/b/61.yaml"), specB)
	const (
		nameA = "l1_72_strided_padded_grouped"
		nameB = "l1_61_square_input_square_kernel"
	)
	outA := []string{"out/" + nameA + "/cuda.sm80.py", "out/" + nameA + "/problem.py"}
	outB := []string{"out/" + nameB + "/cuda.sm80.py", "out/" + nameB + "/problem.py"}

	// 1. First run writes everything, and what it writes is what renders.
	changes, err := Generate(root, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"write  " + outB[0], "write  " + outB[1], "write  " + outA[0], "write  " + outA[1], "write  " + RegistryFile}
	sort.Strings(want)
	if got := changeList(changes); !reflect.DeepEqual(got, want) {
		t.Fatalf("first run:\n%v\nwant\n%v", got, want)
	}
	snap := snapshot(t, root)
	specs, err := LoadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := RenderAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	for p, data := range rendered {
		if !bytes.Equal(snap[p], data) {
			t.Errorf("%s on disk differs from its render", p)
		}
	}

	// A hand-written file under out/ is never the generator's.
	writeFile(t, filepath.Join(root, "out/REPORT.md"), "# Report\nhand-written\n")
	writeFile(t, filepath.Join(root, "out/"+nameB+"/notes.txt"), "mine\n")

	// 2. Second run: nothing to do, nothing touched.
	old := time.Now().Add(-time.Hour)
	for p := range snapshot(t, root) {
		if err := os.Chtimes(filepath.Join(root, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, root)
	if changes, err := Generate(root, false); err != nil || len(changes) != 0 {
		t.Fatalf("second run: %v, %v; want no changes", changeList(changes), err)
	}
	if d := diffPaths(before, snapshot(t, root)); len(d) != 0 {
		t.Fatalf("second run changed %v", d)
	}
	untouched := func(paths ...string) {
		t.Helper()
		for _, p := range paths {
			fi, err := os.Stat(filepath.Join(root, p))
			if err != nil {
				t.Errorf("%s: %v", p, err)
			} else if !fi.ModTime().Equal(old) {
				t.Errorf("%s was rewritten", p)
			}
		}
	}
	untouched(append(append([]string{RegistryFile, "out/REPORT.md"}, outA...), outB...)...)

	// 3. Editing spec A rewrites A's files and the registry, nothing else.
	if !strings.Contains(specA, "  batch: 8\n") {
		t.Fatal("spec 72 no longer has batch 8")
	}
	writeFile(t, filepath.Join(root, "specs/a/72.yaml"), strings.Replace(specA, "  batch: 8\n", "  batch: 4\n", 1))
	if changes, err := Generate(root, true); err != nil || len(changes) != 3 {
		t.Fatalf("check after edit: %v, %v", changeList(changes), err)
	}
	if d := diffPaths(subtree(before, "out"), subtree(snapshot(t, root), "out")); len(d) != 0 {
		t.Fatalf("check mode wrote %v", d)
	}
	changes, err = Generate(root, false)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"write  " + outA[0], "write  " + outA[1], "write  " + RegistryFile}
	sort.Strings(want)
	if got := changeList(changes); !reflect.DeepEqual(got, want) {
		t.Errorf("after edit:\n%v\nwant\n%v", got, want)
	}
	after := snapshot(t, root)
	if d, w := diffPaths(before, after), append([]string{RegistryFile, "specs/a/72.yaml"}, outA...); !reflect.DeepEqual(d, sorted(w)) {
		t.Errorf("after edit, changed files %v, want %v", d, sorted(w))
	}
	if !bytes.Contains(after[outA[1]], []byte("torch.rand(4, 32, 12, 24, 48)")) {
		t.Errorf("%s does not have the new batch:\n%s", outA[1], after[outA[1]])
	}
	untouched(append([]string{"out/REPORT.md"}, outB...)...)

	// 4. Deleting spec B removes its generated files and folder, not the
	// hand-written ones.
	if err := os.Remove(filepath.Join(root, "specs/b/61.yaml")); err != nil {
		t.Fatal(err)
	}
	changes, err = Generate(root, false)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"remove " + outB[0], "remove " + outB[1], "write  " + RegistryFile}
	sort.Strings(want)
	if got := changeList(changes); !reflect.DeepEqual(got, want) {
		t.Errorf("after delete:\n%v\nwant\n%v", got, want)
	}
	now := snapshot(t, root)
	for _, p := range outB {
		if _, ok := now[p]; ok {
			t.Errorf("%s still there", p)
		}
	}
	if string(now["out/REPORT.md"]) != "# Report\nhand-written\n" || string(now["out/"+nameB+"/notes.txt"]) != "mine\n" {
		t.Errorf("hand-written files were touched")
	}
	if bytes.Contains(now[RegistryFile], []byte(nameB)) {
		t.Errorf("registry still lists %s", nameB)
	}
	// With only generated files in it, the folder goes too.
	writeFile(t, filepath.Join(root, "specs/b/61.yaml"), specB)
	if _, err := Generate(root, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "out/"+nameB+"/notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "specs/b/61.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(root, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "out", nameB)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("out/%s not removed: %v", nameB, err)
	}

	// 5. Bad specs among good ones: every error of every file, nothing
	// written (not even the good new spec's files).
	before = snapshot(t, root)
	writeFile(t, filepath.Join(root, "specs/b/61.yaml"), specB) // good, new
	// The kernel's CUDA choice, whatever tuning chose, becomes a family
	// that does not exist.
	badFamily := regexp.MustCompile(`(?m)^  cuda: .*$`)
	writeFile(t, filepath.Join(root, "specs/c/bad1.yaml"), badFamily.ReplaceAllString(strings.NewReplacer(
		"name: l1_72_strided_padded_grouped", "name: bad_one", "  batch: 8\n", "  batch: 0\n").Replace(specA), "  cuda: {fp16: {}}"))
	writeFile(t, filepath.Join(root, "specs/c/bad2.yaml"), "version: 2\nname: bad_two\n")
	writeFile(t, filepath.Join(root, "specs/c/dup.yaml"), specA) // same name as A
	_, err = Generate(root, false)
	var errs spec.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want spec.Errors, got %v", err)
	}
	files := map[string]int{}
	for _, e := range errs {
		files[e.File]++
	}
	// The duplicate name is both specs' problem, each told the other file.
	if want := map[string]int{"specs/a/72.yaml": 1, "specs/c/bad1.yaml": 2, "specs/c/bad2.yaml": 2, "specs/c/dup.yaml": 1}; !reflect.DeepEqual(files, want) {
		t.Errorf("errors per file %v, want %v:\n%v", files, want, err)
	}
	for _, want := range []string{
		"specs/a/72.yaml:3:7: name: also used by specs/c/dup.yaml: names must be unique, they name output folders (got l1_72_strided_padded_grouped)",
		"specs/c/dup.yaml:3:7: name: also used by specs/a/72.yaml: names must be unique, they name output folders (got l1_72_strided_padded_grouped)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("duplicate name not reported as %q:\n%v", want, err)
		}
	}
	for _, sub := range []string{"out", "verify"} {
		if d := diffPaths(subtree(before, sub), subtree(snapshot(t, root), sub)); len(d) != 0 {
			t.Errorf("a failed run changed %v", d)
		}
	}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// subtree keeps the snapshot entries under dir.
func subtree(m map[string][]byte, dir string) map[string][]byte {
	out := map[string][]byte{}
	for p, d := range m {
		if strings.HasPrefix(p, dir+"/") {
			out[p] = d
		}
	}
	return out
}

// TestRandomDeterministic: Random(n, seed) returns n planned specs, the
// same ones for the same seed, different ones for another seed.
func TestRandomDeterministic(t *testing.T) {
	const n = 40
	describe := func(seed int64) []string {
		specs, err := Random(n, seed)
		if err != nil {
			t.Fatal(err)
		}
		if len(specs) != n {
			t.Fatalf("Random(%d, %d) returned %d specs", n, seed, len(specs))
		}
		r, err := NewRenderer()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		names := map[string]bool{}
		for _, l := range specs {
			if len(l.Plans) != 1 || l.Spec() == nil {
				t.Fatalf("%s: %d plans, want one (a random target)", l.Path, len(l.Plans))
			}
			if names[l.Spec().Name] {
				t.Fatalf("name %s drawn twice", l.Spec().Name)
			}
			names[l.Spec().Name] = true
			files, err := r.Render(l.Plans, l.Path)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, l.Path, l.Plans[0].String())
			for _, f := range files {
				out = append(out, f.Path, string(f.Data))
			}
		}
		return out
	}
	a, b := describe(7), describe(7)
	if !reflect.DeepEqual(a, b) {
		t.Error("Random(n, 7) differs between two calls")
	}
	if reflect.DeepEqual(a, describe(8)) {
		t.Error("Random(n, 7) and Random(n, 8) are the same")
	}
}

// pyCompile runs python3 -m py_compile on files, with the bytecode cache
// kept out of the tree.
func pyCompile(t *testing.T, files []string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	cmd := exec.Command(python, append([]string{"-m", "py_compile"}, files...)...)
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("py_compile: %v\n%s", err, out)
	}
}

// TestPythonCompiles: every emitted .py file, for the committed specs and
// for random ones, is valid Python.
func TestPythonCompiles(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	specs, err := LoadAll(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files, err := RenderAll(specs)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p, data := range files {
		if strings.HasSuffix(p, ".py") {
			paths = append(paths, filepath.Join(dir, "repo", p))
			writeFile(t, paths[len(paths)-1], string(data))
		}
	}
	n, err := WriteRandom(filepath.Join(dir, "random"), 30, 11)
	if err != nil || n != 30 {
		t.Fatalf("WriteRandom: %d, %v", n, err)
	}
	random, err := filepath.Glob(filepath.Join(dir, "random", "*", "*.py"))
	if err != nil || len(random) < 60 {
		t.Fatalf("random files: %v, %v", random, err)
	}
	if len(paths) < 2*len(specs) {
		t.Fatalf("%d python files for %d specs", len(paths), len(specs))
	}
	pyCompile(t, append(paths, random...))
}

// TestPythonCompilesOddSpecs: specs with unusual text that the templates
// paste into Python must either be refused by validation or give valid
// Python.
func TestPythonCompilesOddSpecs(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	base := readSpec(t, "72_strided_padded_grouped.yaml")
	for _, tc := range []struct{ name, old, new string }{
		{"quotes and backslashes in the title", "title: 72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_",
			`title: 'say "hi" or ''hi'' \ ok'`},
		// The title goes into the docstrings of both files: a """ would end
		// them early, \N or \u are invalid escapes.
		{`title with """`, "title: 72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_",
			`title: 'a """ b'`},
		{`title with \N`, "title: 72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_",
			`title: 'C:\New'`},
		{"keyword arguments with spaces", "    - stride=stride\n", "    - stride = stride\n"},
		// strconv.Atoi accepts "05", Python 3 refuses leading zeros in
		// integer literals: the conv arguments must not be pasted verbatim.
		{"integer with a leading zero", "    - kernel_size\n", "    - (3, 05, 7)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Count(base, tc.old) != 1 {
				t.Fatalf("%q not found once in spec 72", tc.old)
			}
			src := strings.Replace(base, tc.old, tc.new, 1)
			ps, errs := parseAndPlan("specs/odd.yaml", []byte(src))
			if errs != nil {
				// Refusing the spec is a fine answer too; accepting it and
				// emitting broken Python is not.
				t.Logf("refused:\n%v", errs)
				return
			}
			r, err := NewRenderer()
			if err != nil {
				t.Fatal(err)
			}
			files, err := r.Render(ps, "specs/odd.yaml")
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			var paths []string
			for _, f := range files {
				paths = append(paths, filepath.Join(dir, f.Path))
				writeFile(t, paths[len(paths)-1], string(f.Data))
			}
			pyCompile(t, paths)
		})
	}
}

// launchRe matches a kernel launch in a host wrapper: its grid (a block
// count or dim3(x, y, z)) and block size.
var launchRe = regexp.MustCompile(`(\w+)<<<(?:dim3\((\d+), (\d+), (\d+)\)|(\d+)), (\d+)`)

// TestLaunchesHaveBlocks: every launch of every rendered CUDA submission
// of random configurations has at least one block in every grid
// dimension and at least one thread: the GPU refuses a grid of none (a
// configuration whose phases have no taps at all had an empty weight
// image and launched its repack with no blocks).
func TestLaunchesHaveBlocks(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	launches := 0
	for _, seed := range []int64{5, 21} {
		specs, err := Random(300, seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range specs {
			files, err := r.Render(l.Plans, l.Path)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if !strings.HasSuffix(f.Path, "/cuda.sm80.py") {
					continue
				}
				for _, m := range launchRe.FindAllStringSubmatch(string(f.Data), -1) {
					launches++
					for _, n := range m[2:] {
						if n == "0" {
							t.Errorf("%s: %s launched as %q: a grid or block of none", f.Path, m[1], m[0])
						}
					}
				}
			}
		}
	}
	if launches < 600 {
		t.Errorf("found %d launches in 600 configurations' CUDA submissions, want at least one each", launches)
	}
}
