package gpu

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
	"convtgen/verify"
)

// Item is one (spec, backend, target) to verify.
type Item struct {
	Index     int
	Kernel    verify.Kernel // Kernel.File is relative to the root, or absolute (rendered into the work folder)
	InputDist string
	// A disposition decided before anything is compiled (invalid_spec,
	// not_supported, a stale registry entry), with its reason; "" to go on.
	Pre    Disposition
	Reason string
	// Mutation names the bug planted in a -mutate item (gen/mutate), ""
	// for a kernel as generated.
	Mutation string

	plan *plan.Plan // the kernel's plan, for -mutate; nil when it has none
}

// Result starts the item's result with what is known before running.
func (it *Item) Result() Result {
	k := it.Kernel
	return Result{
		Index: it.Index, Spec: k.Spec, SpecPath: k.SpecPath, File: k.File, Backend: "cuda", Target: k.Target,
		Disposition: it.Pre, Reason: it.Reason, Mutation: it.Mutation,
		FLOPs: k.FLOPs, MinBytes: k.MinBytes, Precision: k.Precision, Tile: k.Tile, Grid: k.Grid, Threads: k.Threads,
	}
}

// Seed is the seed of the item's inputs: the run's seed mixed with the
// spec's name, so every kernel sees different data and a rerun the same.
// A mutant sees its kernel's data.
func (it *Item) Seed(runSeed int64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(strings.TrimSuffix(it.Kernel.Spec, MutationSep+it.Mutation)))
	return h.Sum64() ^ uint64(runSeed)
}

// Items lists what a run verifies, in a fixed order (the sharding depends on
// it): the -specs entries (NAME or NAME@TARGET, a registered kernel or a
// spec file; default every registered kernel of every target, in registry
// order), then the -random configurations (one target each, drawn). Spec files and random
// configurations are rendered into work. An error here is a usage error
// (an unknown spec name); a bad spec becomes an invalid_spec item.
func Items(o *Options, registry []verify.Kernel, work string) ([]Item, error) {
	var items []Item
	add := func(it Item) {
		it.Index = len(items)
		items = append(items, it)
	}
	names := o.SpecList()
	if len(names) == 0 {
		for _, k := range registry {
			add(registered(o.Root, k))
		}
	}
	var renderer *gen.Renderer
	render := func(p *plan.Plan) (string, error) {
		want := gen.SubmissionFile("cuda", p.Target)
		if renderer == nil {
			r, err := gen.NewRenderer()
			if err != nil {
				return "", err
			}
			renderer = r
		}
		files, err := renderer.Render([]*plan.Plan{p}, p.Spec.Path)
		if err != nil {
			return "", err
		}
		var cuda string
		for _, f := range files {
			path := filepath.Join(work, "rendered", filepath.FromSlash(f.Path))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return "", err
			}
			if err := os.WriteFile(path, f.Data, 0o644); err != nil {
				return "", err
			}
			if strings.HasSuffix(f.Path, "/"+want) {
				cuda = path
			}
		}
		return cuda, nil
	}
	for _, entry := range names {
		name, targets, err := splitTarget(entry)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
			for _, t := range targets {
				add(specFile(o.Root, name, t, render))
			}
			continue
		}
		found := false
		for _, k := range registry {
			if k.Spec == name && slices.ContainsFunc(targets, func(t plan.Target) bool { return t.Name == k.Target }) {
				add(registered(o.Root, k))
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("-specs: no registered CUDA kernel named %q (names are the folders under out/; a spec file must end in .yaml)", entry)
		}
	}
	if o.Random > 0 {
		loaded, err := gen.Random(o.Random, o.Seed)
		if err != nil {
			return nil, err
		}
		for _, l := range loaded {
			for _, p := range l.Plans {
				add(planned(p, render))
			}
		}
	}
	if o.Mutate {
		return withMutations(items, work)
	}
	return items, nil
}

// splitTarget reads a -specs entry, NAME or NAME@TARGET: the spec and the
// targets it is verified for (every target without one).
func splitTarget(entry string) (string, []plan.Target, error) {
	name, tg, ok := strings.Cut(entry, "@")
	if !ok {
		return name, plan.Targets, nil
	}
	t, err := plan.TargetNamed(tg)
	if err != nil {
		return "", nil, fmt.Errorf("-specs %s: %w", entry, err)
	}
	return name, []plan.Target{t}, nil
}

// registered is a registry entry, checked against its spec: the spec gives
// the input distribution, and a registry that no longer matches the spec's
// plan would launch the kernel with the wrong grid.
func registered(root string, k verify.Kernel) Item {
	it := Item{Kernel: k}
	s, err := spec.Load(filepath.Join(root, filepath.FromSlash(k.SpecPath)))
	if err != nil {
		it.Pre, it.Reason = InvalidSpec, oneLine(err)
		return it
	}
	target, err := plan.TargetNamed(k.Target)
	if err != nil {
		it.Pre, it.Reason = Failed, oneLine(err)
		return it
	}
	p, err := gen.Plan(s, target) // as the generator plans it
	if err != nil {
		it.Pre, it.Reason = InvalidSpec, oneLine(err)
		return it
	}
	it.InputDist, it.plan = s.Problem.InputDist, p
	want := verify.KernelFromPlan(p, k.File)
	want.SpecPath = k.SpecPath // the spec was loaded through root
	if want != k {
		it.Pre, it.Reason = Failed, "verify/kernels_gen.go does not match the spec's plan: run go generate ./... and rebuild verify"
	}
	return it
}

// specFile is a spec file named on the command line: decoded, planned for
// target and rendered afresh.
func specFile(root, path string, target plan.Target, render func(*plan.Plan) (string, error)) Item {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !filepath.IsAbs(path) {
		path = filepath.Join(root, path) // relative to the root rather than the current folder
	}
	it := Item{Kernel: verify.Kernel{Spec: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), SpecPath: path, Target: target.Name}}
	s, err := spec.Load(path)
	if err != nil {
		it.Pre, it.Reason = InvalidSpec, oneLine(err)
		return it
	}
	it.Kernel.Spec = s.Name
	p, err := gen.Plan(s, target) // as the generator plans it
	if err != nil {
		it.Pre, it.Reason = InvalidSpec, oneLine(err)
		return it
	}
	return planned(p, render)
}

// planned is a planned spec rendered into the work folder.
func planned(p *plan.Plan, render func(*plan.Plan) (string, error)) Item {
	it := Item{Kernel: verify.KernelFromPlan(p, ""), InputDist: p.Spec.Problem.InputDist, plan: p}
	if !slices.Contains(p.Spec.Kernel.Backends, "cuda") {
		it.Pre, it.Reason = NotSupported, "the spec has no cuda backend"
		return it
	}
	file, err := render(p)
	if err == nil && file == "" {
		err = errors.New("rendering gave no " + gen.SubmissionFile("cuda", p.Target))
	}
	if err != nil {
		it.Pre, it.Reason = Failed, oneLine(err)
		return it
	}
	it.Kernel.File = file
	return it
}

// oneLine flattens a multi-line error (spec diagnostics) for the report.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
