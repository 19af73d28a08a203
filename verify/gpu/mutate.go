package gpu

// Mutation runs (verify -mutate): the bugs of gen/mutate are planted in
// each selected kernel's plan, the mutants are rendered through the normal
// templates and run like any other item, and each must come out incorrect.
// A mutant that passes is a bug the verifier misses.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"convtgen/gen"
	"convtgen/gen/mutate"
)

// MutationSep joins a spec's name and a mutation's into a mutant item's
// name, "<spec>~<mutation>" (spec names are identifiers: no "~").
const MutationSep = "~"

// withMutations follows each item of base (the control: the kernel as
// generated) with one item per mutation that applies to its plan, and
// renumbers the list. Items decided before running (an invalid spec, a
// stale registry entry, no cuda backend) get no mutants.
func withMutations(base []Item, work string) ([]Item, error) {
	var r *gen.Renderer
	var out []Item
	for _, b := range base {
		out = append(out, b)
		if b.Pre != "" || b.plan == nil {
			continue
		}
		for _, m := range mutate.For(b.plan) {
			if r == nil {
				var err error
				if r, err = gen.NewRenderer(); err != nil {
					return nil, err
				}
			}
			out = append(out, mutant(b, m, r, work))
		}
	}
	for i := range out {
		out[i].Index = i
	}
	return out, nil
}

// mutant is base's kernel with m planted, rendered into
// work/mutants/<spec>~<mutation>/cuda.<target>.py. The problem (shapes, bias,
// inputs, reference, FLOPs) stays the original's: a mutation is a bug in
// the kernel, not a different problem. The launch (names, grid, threads)
// is the mutant's own.
func mutant(base Item, m mutate.Mutation, r *gen.Renderer, work string) Item {
	mp := m.On(base.plan)
	name := base.Kernel.Spec + MutationSep + m.Name
	k := base.Kernel
	l := mp.Launch("")
	k.Spec = name
	k.Function, k.Repack, k.Grid, k.Threads, k.SmemBytes, k.DynamicSmem, k.Precision = l.Function, l.Repack, l.Grid, l.Threads, l.SmemBytes, l.DynamicSmem, l.Precision
	it := Item{Kernel: k, InputDist: base.InputDist, Mutation: m.Name}
	data, err := mutate.RenderCUDA(r, mp, base.Kernel.SpecPath)
	if err == nil {
		path := filepath.Join(work, "mutants", name, gen.SubmissionFile("cuda", mp.Target))
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = os.WriteFile(path, data, 0o644)
		}
		it.Kernel.File = path
	}
	if err != nil {
		it.Pre, it.Reason = Failed, "rendering the mutant: "+oneLine(err)
	}
	return it
}

// MutationTally is how a report's mutants came out. Caught: incorrect,
// as planted. Missed: passed, a bug the verifier does not see. Crashed:
// failed (or invalid), which a mutation must never cause (each is built to
// stay in bounds and compile): the planting is broken. NotRun: not run or
// not supported here (no GPU build, -compile-only).
type MutationTally struct {
	Planted, Caught         int
	Missed, Crashed, NotRun []string // item names
}

// TallyMutations counts the mutant items of r (those with a mutation).
func TallyMutations(r *Report) MutationTally {
	var t MutationTally
	for _, res := range r.Results {
		if res.Mutation == "" {
			continue
		}
		t.Planted++
		switch res.Disposition {
		case Incorrect:
			t.Caught++
		case Passed:
			t.Missed = append(t.Missed, res.Spec)
		case NotRun, NotSupported:
			t.NotRun = append(t.NotRun, res.Spec)
		default:
			t.Crashed = append(t.Crashed, res.Spec)
		}
	}
	return t
}

// Bad reports whether a mutant passed or crashed.
func (t MutationTally) Bad() bool { return len(t.Missed) > 0 || len(t.Crashed) > 0 }

// String is the summary line, "caught N of M planted bugs", with the
// mutants that were not caught.
func (t MutationTally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mutations: caught %d of %d planted bugs", t.Caught, t.Planted)
	if len(t.Missed) > 0 {
		fmt.Fprintf(&b, "; MISSED (passed): %s", strings.Join(t.Missed, ", "))
	}
	if len(t.Crashed) > 0 {
		fmt.Fprintf(&b, "; failed instead of incorrect: %s", strings.Join(t.Crashed, ", "))
	}
	if len(t.NotRun) > 0 {
		fmt.Fprintf(&b, "; %d not run", len(t.NotRun))
	}
	return b.String()
}
