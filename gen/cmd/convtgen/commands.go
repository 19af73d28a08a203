package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"convtgen/gen"
)

var cmdGenerate = &command{
	name:    "generate",
	args:    "[PATH ...]",
	purpose: "render specs into out/ (default: all of specs/) or a scratch folder",
	about: `Each PATH is a spec file or a folder of them (searched recursively). Without
-out the PATHs must lie under specs/: every spec is still read and checked
(names are unique over all of them, and verify/kernels_gen.go lists them all),
but only the named specs' files under out/ are written, with the registry.
Nothing is written unless every spec is valid; files that are not the
generator's are never replaced. With -out DIR the specs (default: specs/), from
anywhere, are rendered as submissions into DIR, which must not be out/.`,
	examples: []string{
		"convtgen generate",
		"convtgen generate specs/level1/58_asymmetric_input_asymmetric_kernel.yaml",
		"convtgen generate -out build/big verify/testdata/big",
	},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		root := rootFlag(fs)
		out := fs.String("out", "", "render into the scratch folder `DIR` instead of out/")
		return func(e *env, args []string) error {
			r, err := root(e)
			if err != nil {
				return err
			}
			if *out != "" {
				return generateInto(e, r, *out, args)
			}
			only, err := specPaths(e, r, args)
			if err != nil {
				return err
			}
			changes, warnings, err := gen.GenerateWarn(r, false, only)
			for _, w := range warnings {
				fmt.Fprintln(e.stderr, w)
			}
			if err != nil {
				return err
			}
			for _, c := range changes {
				fmt.Fprintln(e.stdout, c)
			}
			if len(changes) == 0 {
				fmt.Fprintln(e.stdout, "convtgen: up to date, nothing written")
			} else {
				fmt.Fprintf(e.stdout, "convtgen: %s changed\n", plural(len(changes), "file"))
			}
			return nil
		}
	},
}

// generateInto renders specs from anywhere into a scratch folder.
func generateInto(e *env, root, out string, args []string) error {
	dir, err := e.scratchDir(root, out, "")
	if err != nil {
		return err
	}
	if len(args) == 0 {
		args = []string{filepath.Join(root, gen.SpecDir)}
	}
	var paths []string
	for _, a := range args {
		if _, err := os.Stat(e.abs(a)); err != nil {
			return usagef("%s: no such file or folder", a)
		}
		// Inside the repository a spec is named by its path from the
		// root, as the generated files print it.
		if rel, ok := e.inRoot(root, a); ok {
			paths = append(paths, rel)
		} else {
			paths = append(paths, e.abs(a))
		}
	}
	n, err := gen.WriteSpecs(root, paths, dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "convtgen: %s in %s\n", plural(n, "spec"), e.display(dir))
	return nil
}

// specPaths turns PATH arguments into spec paths under specs/, relative
// to root (nil for none: every spec).
func specPaths(e *env, root string, args []string) ([]string, error) {
	var only []string
	for _, a := range args {
		rel, ok := e.inRoot(root, a)
		if !ok || rel != gen.SpecDir && !strings.HasPrefix(rel, gen.SpecDir+"/") {
			return nil, usagef("%s: not under %s/; generate -out DIR renders specs from elsewhere", a, gen.SpecDir)
		}
		if _, err := os.Stat(e.abs(a)); err != nil {
			return nil, usagef("%s: no such file or folder", a)
		}
		only = append(only, rel)
	}
	return only, nil
}

var cmdCheck = &command{
	name:    "check",
	args:    "[PATH ...]",
	purpose: "list the stale files of out/ (exit 1 if any); write nothing",
	about: `A file is stale when the specs render it differently, when it is missing,
or when no spec renders it any more (generate removes it). PATHs limit the
check to those specs' files, as for generate.`,
	examples: []string{"convtgen check", "convtgen check specs/level1"},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		root := rootFlag(fs)
		return func(e *env, args []string) error {
			r, err := root(e)
			if err != nil {
				return err
			}
			only, err := specPaths(e, r, args)
			if err != nil {
				return err
			}
			changes, warnings, err := gen.GenerateWarn(r, true, only)
			for _, w := range warnings {
				fmt.Fprintln(e.stderr, w)
			}
			if err != nil {
				return err
			}
			for _, c := range changes {
				if c.Remove {
					fmt.Fprintf(e.stdout, "stale  %s (no spec renders it)\n", c.Path)
				} else {
					fmt.Fprintf(e.stdout, "stale  %s\n", c.Path)
				}
			}
			if len(changes) > 0 {
				fmt.Fprintf(e.stderr, "convtgen: %s stale; run make (convtgen generate)\n", plural(len(changes), "file"))
				return errReported
			}
			fmt.Fprintln(e.stdout, "convtgen: out/ is up to date")
			return nil
		}
	},
}

var cmdRandom = &command{
	name:    "random",
	purpose: "render random valid configurations into a scratch folder",
	about: `For end-to-end sweeps on a GPU host (the kernel verifier draws its own
with -random). The same -n and -seed render the same configurations.`,
	examples: []string{"convtgen random -n 60 -seed 1 -out build/random"},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		root := rootFlag(fs)
		n := fs.Int("n", 60, "`N` configurations")
		seed := fs.Int64("seed", 1, "`SEED` of the draw")
		out := fs.String("out", "", "`DIR` to render into (default: build/random)")
		return func(e *env, args []string) error {
			if len(args) > 0 {
				return usagef("takes no arguments (got %q)", args[0])
			}
			if *n < 1 {
				return usagef("-n %d: must be at least 1", *n)
			}
			r, err := root(e)
			if err != nil {
				return err
			}
			dir, err := e.scratchDir(r, *out, "build/random")
			if err != nil {
				return err
			}
			count, err := gen.WriteRandom(dir, *n, *seed)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "convtgen: %d random configurations in %s\n", count, e.display(dir))
			return nil
		}
	},
}

var cmdTune = &command{
	name:    "tune",
	purpose: "render every spec's tuning candidates, for timing on a GPU",
	about: `Writes one problem folder per candidate, the CUDA candidates as spec files
(DIR/specs) and the candidate list (DIR/manifest.json) that apply-tune reads.
A label numbers a backend's candidate list (t: CUDA, x: Triton), so it names
the same choice in every spec.`,
	examples: []string{"convtgen tune", "convtgen tune -only x17,t8", "convtgen tune -under specs/zoo/ -top 4"},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		root := rootFlag(fs)
		out := fs.String("out", "", "`DIR` to render into (default: build/tune)")
		only := fs.String("only", "", "only these candidates (`LABELS`, comma-separated) beside the specs' own choices")
		top := fs.Int("top", 0, "where the chooser ranks a backend's candidates, only its `N` cheapest estimates (0: all)")
		under := fs.String("under", "", "only the specs whose path (from the root, slash-separated) starts with `PREFIX`")
		return func(e *env, args []string) error {
			if len(args) > 0 {
				return usagef("takes no arguments (got %q)", args[0])
			}
			r, err := root(e)
			if err != nil {
				return err
			}
			dir, err := e.scratchDir(r, *out, "build/tune")
			if err != nil {
				return err
			}
			o := gen.TuneOptions{Top: *top, Under: *under}
			if *only != "" {
				o.Only = strings.Split(*only, ",")
			}
			if o.Top < 0 {
				return usagef("-top: want 0 or more (got %d)", o.Top)
			}
			n, err := gen.WriteTune(r, dir, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "convtgen: %d tuning candidates in %s\n", n, e.display(dir))
			return nil
		}
	},
}

var cmdApplyTune = &command{
	name:    "apply-tune",
	args:    "[RESULTS.json ...]",
	purpose: "write the fastest correct candidates into the specs, regenerate",
	about: `RESULTS are the GPU run's result documents (comma-separated lists too): the
run over out/ and the tuning runs (default: build/gpu/kernels.json,
build/gpu/tune-kernels.json, build/gpu/tune-triton.json; a missing one is
skipped). A candidate wins with error at most half the 1e-5 gate and more
than 3% faster than the spec's current choice; where that choice failed
(a spill, a crash) or was incorrect in the runs, the fastest such candidate
replaces it, and its note says what it replaced.`,
	examples: []string{"convtgen apply-tune", "convtgen apply-tune build/gpu/e2e.json build/gpu/tune-triton.json"},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		root := rootFlag(fs)
		manifest := fs.String("manifest", "", "the tuning run's candidate list `FILE` (default: build/tune/"+gen.ManifestFile+")")
		return func(e *env, args []string) error {
			r, err := root(e)
			if err != nil {
				return err
			}
			man := filepath.Join(r, "build", "tune", gen.ManifestFile)
			if *manifest != "" {
				man = e.abs(*manifest)
			}
			var results []string
			for _, a := range args {
				for _, p := range strings.Split(a, ",") {
					if p != "" {
						results = append(results, e.abs(p))
					}
				}
			}
			if len(results) == 0 {
				for _, f := range []string{"kernels.json", "tune-kernels.json", "tune-triton.json"} {
					results = append(results, filepath.Join(r, "build", "gpu", f))
				}
			}
			return applyTuning(e, r, results, man)
		}
	},
}

// applyTuning reads the tuning manifest and the harness results, writes
// each spec's winner into it and regenerates.
func applyTuning(e *env, root string, resultPaths []string, manifestPath string) error {
	cands, err := gen.ReadManifest(manifestPath)
	if err != nil {
		return err
	}
	var runs []gen.HarnessResults
	for _, path := range resultPaths {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			// A tuning run may time one backend only (TUNE=cuda or triton).
			fmt.Fprintf(e.stderr, "convtgen: %s: not there, skipped\n", e.display(path))
			continue
		}
		if err != nil {
			return err
		}
		var res gen.HarnessResults
		if err := json.Unmarshal(data, &res); err != nil {
			return fmt.Errorf("%s: %w", e.display(path), err)
		}
		runs = append(runs, res)
	}
	if len(runs) == 0 {
		return fmt.Errorf("no results among %d files", len(resultPaths))
	}
	// A spec whose current choice stays is left as it is: its note
	// still tells the tuning that chose it.
	var winners []gen.Winner
	for _, w := range gen.PickWinners(cands, runs...) {
		verdict := "new"
		if w.Current {
			verdict = "kept"
		} else {
			winners = append(winners, w)
		}
		fmt.Fprintf(e.stdout, "%-44s %-6s %-4s %s  %.3f ms (of %d)\n", w.Spec, w.Backend, verdict, w.Choice(), w.MeanMS, w.Tried)
		if w.Replaced != "" {
			fmt.Fprintf(e.stdout, "    replaces a choice that %s\n", w.Replaced)
		}
	}
	date := runs[0].Date
	if len(date) >= 10 {
		date = date[:10]
	}
	if err := gen.ApplyTune(root, winners, runs[0].GPU, date); err != nil {
		return err
	}
	changes, err := gen.Generate(root, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "convtgen: %s updated, %s regenerated\n", plural(len(winners), "choice"), plural(len(changes), "file"))
	return nil
}

var cmdExplain = &command{
	name:    "explain",
	args:    "SPEC",
	purpose: "print the chooser's ranking of a spec's kernel candidates",
	about: `For each target and backend whose kernel choice the spec leaves open, the
cheapest candidates by the cost model (gen/choose; docs/perf/calibration.md)
with their estimated times and terms: the bound that decides (compute,
memory or serial), launches, the rate and share of the machine the tile
gets, its padding, and the serial steps. A backend whose choice the spec
gives is named as such.`,
	examples: []string{"convtgen explain specs/zoo/tiny_k2.yaml", "convtgen explain -top 3 specs/zoo/vae_up_144.yaml"},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		top := fs.Int("top", 8, "show the `N` cheapest candidates")
		return func(e *env, args []string) error {
			if len(args) != 1 {
				return usagef("takes one spec file")
			}
			return gen.Explain(e.stdout, e.abs(args[0]), args[0], *top)
		}
	},
}

var cmdTuneNotes = &command{
	name:    "tune-notes",
	args:    "[PATH ...]",
	purpose: "end the specs' tuning notes with the hash of their problem",
	about: `Each note above a kernel.<target>.cuda or .triton choice comes to end with
"problem <hash>", the hash of the decoded problem and target it was measured
on (apply-tune writes it so); the generator warns where a note's hash is not
its spec's own. PATHs are spec files or folders under specs/ (default: all).
Run it only on notes that were measured on the problem as it is.`,
	examples: []string{"convtgen tune-notes specs/level1"},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		root := rootFlag(fs)
		return func(e *env, args []string) error {
			r, err := root(e)
			if err != nil {
				return err
			}
			only, err := specPaths(e, r, args)
			if err != nil {
				return err
			}
			n, err := gen.StampAll(r, only)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "convtgen: %s rewritten\n", plural(n, "spec"))
			return nil
		}
	},
}
