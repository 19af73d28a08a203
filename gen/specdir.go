package gen

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"convtgen/gen/safeio"
	"convtgen/gen/spec"
)

// WriteSpecs renders spec files, and the specs of folders (searched
// recursively), into outDir as submissions, like WriteRandom: for running
// end to end (test data such as verify/testdata/big, a spec being tried),
// never part of out/. Paths are relative to root, or absolute; they are
// printed into the generated files and diagnostics as given. Every spec's
// errors are reported together and nothing is written then.
func WriteSpecs(root string, paths []string, outDir string) (int, error) {
	at := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(at(p))
		if err != nil {
			return 0, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		before := len(files)
		err = filepath.WalkDir(at(p), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				if !filepath.IsAbs(p) {
					path, _ = filepath.Rel(root, path)
				}
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			return 0, err
		}
		if len(files) == before {
			return 0, fmt.Errorf("%s: no .yaml or .yml specs", p)
		}
	}
	sort.Strings(files)
	files = slices.Compact(files) // a file named twice, or inside a folder also named, renders once
	var all spec.Errors
	var loaded []Loaded
	byName := map[string]string{}
	for _, f := range files {
		path := filepath.ToSlash(filepath.Clean(f))
		if !specPathRe.MatchString(strings.TrimPrefix(path, "/")) {
			all = append(all, spec.Error{File: strconv.QuoteToASCII(path), Line: 1, Col: 1, Field: "spec",
				Msg: "file path may hold only ASCII letters, digits, '.', '_' and '-' between its slashes: it is printed into the generated files"})
			continue
		}
		data, err := safeio.ReadRegular(at(f), safeio.MaxSpecSize)
		if err != nil {
			all = append(all, spec.Error{File: path, Line: 1, Col: 1, Field: "spec",
				Msg: fmt.Sprintf("not read: %v; a spec must be a regular file of at most %d bytes", err, safeio.MaxSpecSize)})
			continue
		}
		ps, errs := parseAndPlan(path, data)
		if errs != nil {
			all = append(all, errs...)
			continue
		}
		l := Loaded{Path: path, Plans: ps, Warnings: TuneWarnings(path, data, ps[0].Spec)}
		if other, ok := byName[l.Spec().Name]; ok {
			all = append(all, l.Spec().Errorf("name", l.Spec().Name, "also used by %s: names must be unique, they name output folders", other))
			continue
		}
		byName[l.Spec().Name] = path
		loaded = append(loaded, l)
	}
	if len(all) > 0 {
		return 0, all
	}
	r, err := NewRenderer()
	if err != nil {
		return 0, err
	}
	for _, l := range loaded {
		files, err := r.Render(l.Plans, l.Path)
		if err != nil {
			return 0, err
		}
		for _, f := range files {
			if err := safeio.WriteWhole(filepath.Join(outDir, f.Path), f.Data); err != nil {
				return 0, err
			}
		}
	}
	return len(loaded), nil
}
