package gpu

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Merge combines shard reports into one. An item present in two reports is
// a conflict (the shards overlapped, or the same file was given twice), as
// is one index naming two different items (the shards were run over
// different item lists: other specs, seeds or -random counts). Top-level
// fields that differ between shards are joined ("H200, H100").
func Merge(reports []*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("merge: no reports")
	}
	out := &Report{Seed: reports[0].Seed, Random: reports[0].Random, Driver: reports[0].Driver, Timed: true}
	var gpus, ccs, dates, commits, hosts []string
	seen := map[string]int{}    // item key -> report it came from
	byIndex := map[int]string{} // index -> item key
	for i, r := range reports {
		if r.Seed != out.Seed || r.Random != out.Random {
			return nil, fmt.Errorf("merge: report %d has -seed %d -random %d, report 0 has -seed %d -random %d",
				i, r.Seed, r.Random, out.Seed, out.Random)
		}
		gpus, ccs, dates = addUnique(gpus, r.GPU), addUnique(ccs, r.CC), addUnique(dates, r.Date)
		commits, hosts = addUnique(commits, r.Commit), addUnique(hosts, r.Host)
		if r.Driver > out.Driver {
			out.Driver = r.Driver
		}
		out.Timed = out.Timed && r.Timed
		switch {
		case r.Shard != "":
			out.Shards = append(out.Shards, r.Shard)
		default:
			out.Shards = append(out.Shards, r.Shards...)
		}
		for _, res := range r.Results {
			k := res.Key()
			if j, dup := seen[k]; dup {
				return nil, fmt.Errorf("merge: %s is in report %d and report %d", k, j, i)
			}
			if other, clash := byIndex[res.Index]; clash {
				return nil, fmt.Errorf("merge: item %d is %s in one report and %s in another: the reports cover different item lists", res.Index, other, k)
			}
			seen[k], byIndex[res.Index] = i, k
			out.Results = append(out.Results, res)
		}
	}
	sort.Strings(dates)
	out.GPU, out.CC, out.Commit = strings.Join(gpus, ", "), strings.Join(ccs, ", "), strings.Join(commits, ", ")
	out.Host = strings.Join(hosts, ", ")
	if len(dates) > 0 {
		out.Date = dates[0] // the earliest shard's start
	}
	sort.Strings(out.Shards)
	sort.SliceStable(out.Results, func(a, b int) bool { return out.Results[a].Index < out.Results[b].Index })
	return out, nil
}

func addUnique(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// ReadReport loads a report written by WriteReport.
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteReport writes a report as indented JSON (through a temporary file,
// so a reader never sees half of it).
func WriteReport(path string, r *Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
