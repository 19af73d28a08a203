package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"

	"convtgen/gen"
)

// rootFlag declares -root; the returned function resolves the repository
// root: the flag's folder, or the one found from the current folder.
func rootFlag(fs *flag.FlagSet) func(e *env) (string, error) {
	dir := fs.String("root", "", "repository root `DIR` (default: found from the current folder)")
	return func(e *env) (string, error) {
		if *dir != "" {
			root := e.abs(*dir)
			if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
				return "", usagef("-root %s: not a folder", *dir)
			}
			return root, nil
		}
		root, err := gen.FindRoot(e.wd)
		if err != nil {
			return "", usageError{err.Error() + "; run from inside it or give -root DIR"}
		}
		return root, nil
	}
}

// abs makes a command-line path absolute against the current folder.
func (e *env) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(e.wd, p)
}

// inRoot returns a command-line path relative to root, slash-separated,
// and whether it lies inside root at all.
func (e *env) inRoot(root, p string) (string, bool) {
	rel, err := filepath.Rel(root, e.abs(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// scratchDir resolves an -out folder (default: def under root) and
// refuses out/ itself: the committed submissions are written only by
// generate without -out, which keeps their safety rules.
func (e *env) scratchDir(root, out, def string) (string, error) {
	dir := filepath.Join(root, filepath.FromSlash(def))
	if out != "" {
		dir = e.abs(out)
	}
	if rel, ok := e.inRoot(root, dir); ok && (rel == gen.OutDir || strings.HasPrefix(rel, gen.OutDir+"/")) {
		return "", usagef("-out %s: inside %s/, which only generate without -out writes", out, gen.OutDir)
	}
	return dir, nil
}

// display is a path as messages show it: relative to the current folder
// when it lies below it, else as it is.
func (e *env) display(p string) string {
	if rel, err := filepath.Rel(e.wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}
