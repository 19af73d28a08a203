package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"convtgen/gen/spec"
)

// WriteSpecDir renders the specs of one folder outside specs/ (test data,
// such as verify/testdata/big) into outDir as submissions, like
// WriteRandom: for running end to end, never part of out/. Every spec's
// errors are reported together and nothing is written then.
func WriteSpecDir(specDir, outDir string) (int, error) {
	entries, err := os.ReadDir(specDir)
	if err != nil {
		return 0, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".yaml") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var all spec.Errors
	var loaded []Loaded
	for _, n := range names {
		path := filepath.ToSlash(filepath.Join(specDir, n))
		data, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		p, errs := parseAndPlan(path, data)
		if errs != nil {
			all = append(all, errs...)
			continue
		}
		loaded = append(loaded, Loaded{Path: path, Plan: p})
	}
	if len(all) > 0 {
		return 0, all
	}
	if len(loaded) == 0 {
		return 0, fmt.Errorf("%s: no .yaml specs", specDir)
	}
	r, err := NewRenderer()
	if err != nil {
		return 0, err
	}
	for _, l := range loaded {
		files, err := r.Render(l.Plan, l.Path)
		if err != nil {
			return 0, err
		}
		for _, f := range files {
			if err := writeAtomic(filepath.Join(outDir, f.Path), f.Data); err != nil {
				return 0, err
			}
		}
	}
	return len(loaded), nil
}
