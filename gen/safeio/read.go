// Package safeio is the generator's file access: it reads a file only when
// it is a small regular file reached through real folders, and replaces a
// set of generated files together through a stage folder, never through a
// symbolic link and never over a file the generator does not own.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MaxSpecSize bounds a spec file: specs are a few KiB, and a bound keeps a
// huge or endless file (a link to /dev/zero) from exhausting memory.
const MaxSpecSize = 1 << 20

// maxGeneratedSize bounds a generated file read back for comparison; the
// largest emitted submission is well under 1 MiB.
const maxGeneratedSize = 64 << 20

// ReadRegular reads path if it is a regular file of at most max bytes,
// opened without following a symbolic link or blocking on a FIFO. Its
// errors give only the reason, never the path's target or content.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := openRegular(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, reason(err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return data, nil
}

// Head reads at most the first n bytes of path, with ReadRegular's checks
// and no bound on the file's size.
func Head(path string, n int) ([]byte, error) {
	f, err := openRegular(path, -1)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(n)))
	return data, reason(err)
}

// openRegular opens a regular file of at most max bytes (max < 0: any).
func openRegular(path string, max int64) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, reason(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (got %s)", Kind(fi.Mode()))
	}
	if max >= 0 && fi.Size() > max {
		return nil, fmt.Errorf("larger than %d bytes (got %d)", max, fi.Size())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		return nil, reason(err)
	}
	// The name may have been swapped between the Lstat and the open.
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, reason(err)
	}
	if !st.Mode().IsRegular() || !os.SameFile(fi, st) {
		f.Close()
		return nil, errors.New("changed while being opened")
	}
	return f, nil
}

// reason strips the path an os error carries (the caller names the file
// in its own terms).
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Kind names a file mode's type for diagnostics.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
}

// Conflict is a path the generator must write or remove but may not.
type Conflict struct {
	Path   string // slash-separated, relative to the root
	Reason string
}

func (c Conflict) Error() string { return c.Path + ": " + c.Reason }

// Conflicts is every such path, so one run names them all.
type Conflicts []Conflict

func (cs Conflicts) Error() string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.Error()
	}
	return strings.Join(s, "\n")
}

// checkDirs verifies that every folder on the way from root to rel's file
// is a real folder or absent (then so is everything below it); it reports
// whether all of them exist.
func checkDirs(root, rel string) (bool, error) {
	parts := strings.Split(rel, "/")
	p := root
	for i, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, reason(err)
		}
		if !fi.IsDir() {
			return false, Conflict{strings.Join(parts[:i+1], "/"), fmt.Sprintf("is %s, not a folder: convtgen writes nothing through it (remove it)", Kind(fi.Mode()))}
		}
	}
	return true, nil
}

// ReadOwned reads a file the generator may replace: rel (slash-separated,
// under root) must be reached through real folders and be either absent
// (nil, false) or a regular file that owned accepts. Anything else is a
// Conflict.
func ReadOwned(root, rel string, owned func(data []byte) bool) ([]byte, bool, error) {
	if err := checkRel(rel); err != nil {
		return nil, false, err
	}
	exist, err := checkDirs(root, rel)
	if err != nil || !exist {
		return nil, false, err
	}
	path := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, reason(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, Conflict{rel, fmt.Sprintf("is %s: convtgen replaces only its own regular files (remove it)", Kind(fi.Mode()))}
	}
	data, err := ReadRegular(path, maxGeneratedSize)
	if err != nil {
		return nil, false, Conflict{rel, err.Error()}
	}
	if !owned(data) {
		return nil, false, Conflict{rel, "has no convtgen marker on its first line, so it is not the generator's: it is left as it is (move it away to generate here)"}
	}
	return data, true, nil
}

// checkRel refuses paths that could leave the root.
func checkRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "\\") {
		return fmt.Errorf("%q: not a relative slash-separated path", rel)
	}
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%q: not a clean relative path", rel)
		}
	}
	return nil
}
