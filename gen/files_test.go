package gen

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"convtgen/gen/safeio"
)

// goodRepo is a temporary repository with one spec (l1_72_..., CUDA only).
func goodRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "specs/level1/72.yaml"), readSpec(t, "72_strided_padded_grouped.yaml"))
	return root
}

const name72 = "l1_72_strided_padded_grouped"

// generateWithin runs Generate with a generous bound, so a read that
// blocks fails the test instead of hanging it.
func generateWithin(t *testing.T, root string, check bool) ([]Change, error) {
	t.Helper()
	type result struct {
		c   []Change
		err error
	}
	done := make(chan result, 1)
	go func() { c, err := Generate(root, check); done <- result{c, err} }()
	select {
	case r := <-done:
		return r.c, r.err
	case <-time.After(time.Minute):
		t.Fatal("Generate still running after a minute")
		return nil, nil
	}
}

// TestInjectedSpecPath: the spec file name with a newline and
// Python code is refused, quoted in the error (no raw line break), and
// nothing is written.
func TestInjectedSpecPath(t *testing.T) {
	root := goodRepo(t)
	bad := "specs/x\n__import__(\"os\").system(\"touch pwned\")\n#.yaml"
	writeFile(t, filepath.Join(root, bad), strings.Replace(readSpec(t, "61_square_input_square_kernel.yaml"),
		"name: l1_61_square_input_square_kernel", "name: injected", 1))
	_, err := generateWithin(t, root, false)
	want := `"specs/x\n__import__(\"os\").system(\"touch pwned\")\n#.yaml":1:1: spec: file path may hold only ASCII letters, digits, '.', '_' and '-' between its slashes: it is printed into the generated files`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if _, err := os.Lstat(filepath.Join(root, OutDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused run wrote %s: %v", OutDir, err)
	}
}

// TestSpecsReadOnlyRegularFiles: a FIFO does not hang the run, a link to
// /dev/zero does not exhaust memory, a link to /etc/passwd is not echoed,
// a file over 1 MiB is refused, all reported at once by path and reason.
func TestSpecsReadOnlyRegularFiles(t *testing.T) {
	root := goodRepo(t)
	specs := filepath.Join(root, SpecDir)
	if err := syscall.Mkfifo(filepath.Join(specs, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"/dev/zero", "zero.yaml"}, {"/etc/passwd", "passwd.yaml"}} {
		if err := os.Symlink(l[0], filepath.Join(specs, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	big := readSpec(t, "61_square_input_square_kernel.yaml") + "#" + strings.Repeat(" ", safeio.MaxSpecSize) + "\n"
	writeFile(t, filepath.Join(specs, "big.yaml"), big)
	_, err := generateWithin(t, root, false)
	const why = "; a spec must be a regular file under specs/ of at most 1048576 bytes"
	want := strings.Join([]string{
		fmt.Sprintf("specs/big.yaml:1:1: spec: not read: larger than 1048576 bytes (got %d)", len(big)) + why,
		"specs/fifo.yaml:1:1: spec: not read: not a regular file (got a FIFO)" + why,
		"specs/passwd.yaml:1:1: spec: not read: not a regular file (got a symbolic link)" + why,
		"specs/zero.yaml:1:1: spec: not read: not a regular file (got a symbolic link)" + why,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	if passwd, _ := os.ReadFile("/etc/passwd"); len(passwd) > 0 {
		first, _, _ := strings.Cut(string(passwd), "\n")
		if strings.Contains(err.Error(), first) {
			t.Errorf("the error echoes /etc/passwd")
		}
	}
	if _, err := os.Lstat(filepath.Join(root, OutDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused run wrote %s: %v", OutDir, err)
	}

	// specs/ itself must be a real folder, not a link to one.
	root2 := t.TempDir()
	if err := os.Symlink(specs, filepath.Join(root2, SpecDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := generateWithin(t, root2, false); err == nil || err.Error() != "specs: is a symbolic link, not a folder: specs are read from a real folder" {
		t.Errorf("symlinked specs/: %v", err)
	}
}

// TestGenerateNeverWritesThroughLinks: a symbolic link for out/, for a
// spec's folder in it or for verify/ is refused, not followed; a file with
// no marker where a generated one goes is reported, not overwritten; a
// FIFO under out/ is neither read nor removed. Nothing is written by a
// refused run, and every conflict is named.
func TestGenerateNeverWritesThroughLinks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string)
		want  string
	}{
		{"symlinked spec folder", func(t *testing.T, root string) {
			mkdir(t, filepath.Join(root, "out"))
			symlink(t, "../elsewhere", filepath.Join(root, "out", name72))
		}, "out/" + name72 + ": is a symbolic link, not a folder: convtgen writes nothing through it (remove it)"},
		{"symlinked out", func(t *testing.T, root string) {
			symlink(t, "elsewhere", filepath.Join(root, "out"))
		}, "out: is a symbolic link, not a folder: convtgen writes nothing through it (remove it)"},
		{"symlinked verify", func(t *testing.T, root string) {
			symlink(t, "elsewhere", filepath.Join(root, "verify"))
		}, "verify: is a symbolic link, not a folder: convtgen writes nothing through it (remove it)"},
		{"symlinked generated file", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "elsewhere/x"), Marker+"\n")
			mkdir(t, filepath.Join(root, "out", name72))
			symlink(t, "../../elsewhere/x", filepath.Join(root, "out", name72, "cuda.sm80.py"))
		}, "out/" + name72 + "/cuda.sm80.py: is a symbolic link: convtgen replaces only its own regular files (remove it)"},
		{"hand-written file", func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, "out", name72, "cuda.sm80.py"), "# my own kernel\n")
			writeFile(t, filepath.Join(root, RegistryFile), "package verify\n")
		}, "out/" + name72 + "/cuda.sm80.py: has no convtgen marker on its first line, so it is not the generator's: it is left as it is (move it away to generate here)\n" +
			"verify/kernels_gen.go: has no convtgen marker on its first line, so it is not the generator's: it is left as it is (move it away to generate here)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := goodRepo(t)
			mkdir(t, filepath.Join(root, "elsewhere"))
			tc.setup(t, root)
			before := snapshotNoFollow(t, root)
			_, err := generateWithin(t, root, false)
			var cs safeio.Conflicts
			if !errors.As(err, &cs) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant\n%s", err, tc.want)
			}
			if after := snapshotNoFollow(t, root); !reflect.DeepEqual(after, before) {
				t.Errorf("a refused run changed the tree:\n%v\nwant\n%v", after, before)
			}
			// -check refuses the same way, and writes nothing either.
			if _, err := generateWithin(t, root, true); !errors.As(err, &cs) {
				t.Errorf("check: %v", err)
			}
		})
	}

	t.Run("fifo under out", func(t *testing.T) {
		root := goodRepo(t)
		mkdir(t, filepath.Join(root, "out", name72))
		if err := syscall.Mkfifo(filepath.Join(root, "out", name72, "stray.py"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := generateWithin(t, root, false); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(root, "out", name72, "stray.py")); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the FIFO was touched: %v, %v", fi, err)
		}
	})
}

// TestGenerateClearsStaleStage: a stage folder left by a killed run makes
// -check refuse to judge the tree; the next run clears it and leaves no
// stage behind.
func TestGenerateClearsStaleStage(t *testing.T) {
	root := goodRepo(t)
	if _, err := Generate(root, false); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, root)
	stale := "out/" + safeio.StagePrefix + "123"
	writeFile(t, filepath.Join(root, stale, "new/out", name72, "cuda.sm80.py"), Marker+" half\n")
	if _, err := Generate(root, true); err == nil || !strings.Contains(err.Error(), stale+": left by an interrupted run") {
		t.Errorf("check with a stale stage: %v", err)
	}
	if changes, err := Generate(root, false); err != nil || len(changes) != 0 {
		t.Fatalf("%v, %v", changeList(changes), err)
	}
	if got := snapshot(t, root); !reflect.DeepEqual(sortedPaths(got), sortedPaths(want)) {
		t.Errorf("after the run: %v, want %v", sortedPaths(got), sortedPaths(want))
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// snapshotNoFollow lists every entry under root with its type and, for
// regular files, contents; links and FIFOs are not opened.
func snapshotNoFollow(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			out[rel] = string(data)
			return err
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			out[rel] = "-> " + target
			return err
		}
		out[rel] = d.Type().String()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyTuneWritesOnlySpecs: a results file's spec path outside specs/
// or a linked spec is refused, and the link's target is not touched.
func TestApplyTuneWritesOnlySpecs(t *testing.T) {
	root := goodRepo(t)
	writeFile(t, filepath.Join(root, "elsewhere/x.yaml"), "mine\n")
	symlink(t, "../elsewhere/x.yaml", filepath.Join(root, "specs/linked.yaml"))
	for path, want := range map[string]string{
		"specs/../elsewhere/x.yaml": `"specs/../elsewhere/x.yaml": not a spec path under specs/`,
		"elsewhere/x.yaml":          `"elsewhere/x.yaml": not a spec path under specs/`,
		"specs/linked.yaml":         "specs/linked.yaml: not a regular file (got a symbolic link)",
	} {
		err := ApplyTune(root, []Winner{{Candidate: Candidate{Backend: "cuda", SpecPath: path}}}, "H200", "2026-01-01")
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", path, err, want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(root, "elsewhere/x.yaml")); string(data) != "mine\n" {
		t.Errorf("the link's target was written: %q", data)
	}
}
