package safeio

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

const mark = "# generated\n"

func owned(b []byte) bool { return bytes.HasPrefix(b, []byte(mark)) }

// tree writes files (slash paths to contents) under a new root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, data := range files {
		path := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// contents reads every file under root, links and all, by slash path.
func contents(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			out[filepath.ToSlash(rel)] = "-> " + target
			return err
		}
		if !d.Type().IsRegular() {
			out[filepath.ToSlash(rel)] = Kind(d.Type())
			return nil
		}
		data, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// previous is a generated set: two spec folders and a registry, beside a
// hand-written report.
var previous = map[string]string{
	"out/a/cuda.py":    mark + "a old\n",
	"out/a/problem.py": mark + "a problem old\n",
	"out/b/cuda.py":    mark + "b old\n",
	"out/REPORT.md":    "hand-written\n",
	"verify/gen.go":    mark + "registry old\n",
}

// next changes a's files and the registry, removes b, adds c.
func next() (map[string][]byte, []string) {
	return map[string][]byte{
		"out/a/cuda.py":    []byte(mark + "a new\n"),
		"out/a/problem.py": []byte(mark + "a problem new\n"),
		"out/c/cuda.py":    []byte(mark + "c new\n"),
		"verify/gen.go":    []byte(mark + "registry new\n"),
	}, []string{"out/b/cuda.py"}
}

func nextSet() map[string]string {
	want := map[string]string{"out/REPORT.md": "hand-written\n"}
	w, _ := next()
	for p, d := range w {
		want[p] = string(d)
	}
	return want
}

func withHook(t *testing.T, h func(op, path string) error) {
	t.Helper()
	testHook = h
	t.Cleanup(func() { testHook = nil })
}

// noStage fails unless out/ holds no stage folder (empty or not).
func noStage(t *testing.T, root string) {
	t.Helper()
	if s, err := Stages(root, "out"); err != nil || len(s) != 0 {
		t.Errorf("stage folders left: %v, %v", s, err)
	}
}

func TestCommitReplacesTheSet(t *testing.T) {
	root := tree(t, previous)
	w, r := next()
	if err := Commit(root, "out", w, r, owned); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, root); !reflect.DeepEqual(got, nextSet()) {
		t.Errorf("after commit:\n%v\nwant\n%v", got, nextSet())
	}
	if _, err := os.Lstat(filepath.Join(root, "out/b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("out/b, emptied, still there: %v", err)
	}
	noStage(t, root)
}

// TestCommitFailureKeepsPrevious: a write or a rename that fails at any
// step leaves the previous set exactly, and no stage or temporary file.
func TestCommitFailureKeepsPrevious(t *testing.T) {
	for _, op := range []string{"write", "rename"} {
		for fail := 1; fail <= 8; fail++ {
			root := tree(t, previous)
			n := 0
			withHook(t, func(o, path string) error {
				if o == op {
					if n++; n == fail {
						return errors.New("disk full (injected)")
					}
				}
				return nil
			})
			w, r := next()
			err := Commit(root, "out", w, r, owned)
			if n < fail {
				// Fewer steps than that: the commit went through.
				if err != nil {
					t.Fatalf("%s %d: %v", op, fail, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("%s %d: want the injected error, got %v", op, fail, err)
			}
			if got := contents(t, root); !reflect.DeepEqual(got, previous) {
				t.Errorf("%s %d fails: tree\n%v\nwant the previous\n%v", op, fail, got, previous)
			}
			noStage(t, root)
		}
	}
}

// TestKilledCommitRecovers: a run killed after any rename leaves every
// file whole; the next run's Recover brings back the previous set and
// removes the stage.
func TestKilledCommitRecovers(t *testing.T) {
	for kill := 1; ; kill++ {
		root := tree(t, previous)
		n := 0
		withHook(t, func(op, path string) error {
			if op == "rename" && !strings.HasSuffix(path, journalName) {
				if n++; n == kill {
					return errKilled
				}
			}
			return nil
		})
		w, r := next()
		err := Commit(root, "out", w, r, owned)
		if n < kill {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if !errors.Is(err, errKilled) {
			t.Fatalf("kill at %d: %v", kill, err)
		}
		stages, err := Stages(root, "out")
		if err != nil || len(stages) != 1 {
			t.Fatalf("kill at %d: stages %v, %v; want the killed run's", kill, stages, err)
		}
		// Every file is whole: its old or its new bytes (or absent).
		newSet := nextSet()
		for p, d := range contents(t, root) {
			if strings.HasPrefix(p, stages[0]+"/") {
				continue
			}
			if d != previous[p] && d != newSet[p] {
				t.Errorf("kill at %d: %s is %q, neither old nor new", kill, p, d)
			}
		}
		testHook = nil
		if err := Recover(root, "out", owned); err != nil {
			t.Fatalf("kill at %d: recover: %v", kill, err)
		}
		if got := contents(t, root); !reflect.DeepEqual(got, previous) {
			t.Errorf("kill at %d, recovered:\n%v\nwant the previous\n%v", kill, got, previous)
		}
		if _, err := os.Lstat(filepath.Join(root, "out/c")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("kill at %d: out/c, made by the killed run, still there", kill)
		}
		noStage(t, root)
	}
}

// TestKilledWhileStaging: a stage without a journal (killed before the
// first rename) is litter: Recover removes it and touches nothing else.
func TestKilledWhileStaging(t *testing.T) {
	root := tree(t, previous)
	withHook(t, func(op, path string) error {
		if op == "write" {
			return errKilled
		}
		return nil
	})
	w, r := next()
	if err := Commit(root, "out", w, r, owned); !errors.Is(err, errKilled) {
		t.Fatal(err)
	}
	testHook = nil
	if err := Recover(root, "out", owned); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, root); !reflect.DeepEqual(got, previous) {
		t.Errorf("recovered:\n%v\nwant\n%v", got, previous)
	}
	noStage(t, root)
}

// TestCommitConflicts: files without the marker, symbolic links and
// irregular files are never written, removed or written through; every
// one is named, and nothing is written.
func TestCommitConflicts(t *testing.T) {
	root := tree(t, map[string]string{
		"out/a/cuda.py":      "hand-written, no marker\n",
		"elsewhere/keep.txt": "outside\n",
		"out/d/problem.py":   mark,
	})
	if err := os.Symlink("../elsewhere", filepath.Join(root, "out/b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../elsewhere/keep.txt", filepath.Join(root, "out/d/cuda.py")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "out/d/triton.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := contents(t, root)
	w := map[string][]byte{
		"out/a/cuda.py": []byte(mark), "out/b/cuda.py": []byte(mark), "out/d/cuda.py": []byte(mark),
		"out/d/triton.py": []byte(mark), "out/e/cuda.py": []byte(mark),
	}
	err := Commit(root, "out", w, nil, owned)
	var cs Conflicts
	if !errors.As(err, &cs) {
		t.Fatalf("want Conflicts, got %v", err)
	}
	var paths []string
	for _, c := range cs {
		paths = append(paths, c.Path)
	}
	sort.Strings(paths)
	if want := []string{"out/a/cuda.py", "out/b", "out/d/cuda.py", "out/d/triton.py"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("conflicts %v, want %v:\n%v", paths, want, err)
	}
	if got := contents(t, root); !reflect.DeepEqual(got, before) {
		t.Errorf("a refused commit changed the tree:\n%v\nwant\n%v", got, before)
	}
	// The stage's own folder is made the same careful way.
	root2 := t.TempDir()
	if err := os.Mkdir(filepath.Join(root2, "elsewhere"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(root2, "out")); err != nil {
		t.Fatal(err)
	}
	if err := Commit(root2, "out", map[string][]byte{"out/a/cuda.py": []byte(mark)}, nil, owned); !errors.As(err, &cs) || cs[0].Path != "out" {
		t.Errorf("symlinked out/: want a conflict at out, got %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root2, "elsewhere")); len(ents) != 0 {
		t.Errorf("wrote through the symlinked out/: %v", ents)
	}
}

// TestReadRegular: only regular files are read, within the bound, and an
// error never carries a link target's content.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"/dev/zero", "zero.yaml"}, {"/etc/passwd", "passwd.yaml"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, MaxSpecSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(ok, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	firstLine, _, _ := strings.Cut(string(passwd), "\n")
	for _, tc := range []struct{ path, want string }{
		{fifo, "not a regular file (got a FIFO)"},
		{filepath.Join(dir, "zero.yaml"), "not a regular file (got a symbolic link)"},
		{filepath.Join(dir, "passwd.yaml"), "not a regular file (got a symbolic link)"},
		{big, "larger than 1048576 bytes (got 1048577)"},
		{filepath.Join(dir, "absent.yaml"), "no such file or directory"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(tc.path, MaxSpecSize); done <- err }()
		select {
		case err := <-done:
			if err == nil || err.Error() != tc.want {
				t.Errorf("%s: got %v, want %q", filepath.Base(tc.path), err, tc.want)
			}
			if err != nil && firstLine != "" && strings.Contains(err.Error(), firstLine) {
				t.Errorf("%s: the error shows /etc/passwd", filepath.Base(tc.path))
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s: still reading after a minute", filepath.Base(tc.path))
		}
	}
	if data, err := ReadRegular(ok, MaxSpecSize); err != nil || string(data) != "name: x\n" {
		t.Errorf("ok.yaml: %q, %v", data, err)
	}
}

// TestWriteWhole: the file holds exactly the bytes written, its folder is
// made, and no temporary file stays beside it; an unwritable folder is an
// error that leaves nothing.
func TestWriteWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "f.txt")
	for _, data := range []string{"first", "second, longer"} {
		if err := WriteWhole(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Errorf("folder holds %v (%v), want only f.txt", entries, err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root writes anywhere
		if err := WriteWhole(filepath.Join(ro, "f"), []byte("x")); err == nil {
			t.Error("wrote into a read-only folder")
		}
	}
}
