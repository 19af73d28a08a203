package gpu

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"convtgen/gen/mutate"
	"convtgen/gen/plan"
	"convtgen/verify"
)

// mutateItems is the -mutate item list of the last registered kernel and
// two random configurations.
func mutateItems(t *testing.T, work string) (*Options, []Item) {
	t.Helper()
	if len(verify.Kernels) == 0 {
		t.Skip("no registered kernels")
	}
	last := verify.Kernels[len(verify.Kernels)-1]
	o := &Options{Root: root, Specs: last.Spec + "@" + last.Target, Random: 2, Seed: 5, Mutate: true}
	items, err := Items(o, verify.Kernels, work)
	if err != nil {
		t.Fatal(err)
	}
	return o, items
}

// Each kernel is followed by its applicable mutants: same problem and
// inputs, own rendering and launch.
func TestItemsMutate(t *testing.T) {
	_, items := mutateItems(t, t.TempDir())
	var control *Item
	var want []string
	controls, mutants := 0, 0
	for i := range items {
		it := &items[i]
		if it.Index != i {
			t.Errorf("item %d has index %d", i, it.Index)
		}
		if it.Pre != "" {
			t.Errorf("%s: %s %q", it.Kernel.Spec, it.Pre, it.Reason)
		}
		if it.Mutation == "" {
			if len(want) != 0 {
				t.Errorf("%s: mutants %v missing", control.Kernel.Spec, want)
			}
			controls++
			control = it
			for _, m := range mutate.For(it.plan) {
				want = append(want, m.Name)
			}
			continue
		}
		mutants++
		if len(want) == 0 || it.Mutation != want[0] {
			t.Fatalf("item %d: mutation %q, want the next of %v", i, it.Mutation, want)
		}
		want = want[1:]
		k, c := it.Kernel, control.Kernel
		if k.Spec != c.Spec+"~"+it.Mutation || it.Result().Mutation != it.Mutation {
			t.Errorf("mutant named %q (result %q) after %q", k.Spec, it.Result().Mutation, c.Spec)
		}
		if k.Conv != c.Conv || k.Out != c.Out || k.FLOPs != c.FLOPs || k.SpecPath != c.SpecPath || it.InputDist != control.InputDist {
			t.Errorf("%s: the problem differs from the control's:\n%+v\n%+v", k.Spec, k, c)
		}
		if k.Function != c.Function || k.Repack != c.Repack || k.Threads != c.Threads {
			t.Errorf("%s: launch %+v, control %+v", k.Spec, k, c)
		}
		drops := it.Mutation == "drop-last-tile" || it.Mutation == "drop-last-split"
		if drops != (k.Grid != c.Grid) {
			t.Errorf("%s: grid %v, control %v", k.Spec, k.Grid, c.Grid)
		}
		for d := range 3 {
			if k.Grid[d] > c.Grid[d] || k.Grid[d] < 1 {
				t.Errorf("%s: grid %v, control %v", k.Spec, k.Grid, c.Grid)
			}
		}
		if it.Seed(3) != control.Seed(3) {
			t.Errorf("%s: other inputs than its control", k.Spec)
		}
		src, err := os.ReadFile(k.File)
		if err != nil {
			t.Fatal(err)
		}
		cfile := c.File
		if !filepath.IsAbs(cfile) {
			cfile = filepath.Join(root, cfile)
		}
		orig, err := os.ReadFile(cfile)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(src, orig) || !filepath.IsAbs(k.File) || !strings.Contains(k.File, k.Spec) {
			t.Errorf("%s: file %s is the control's or misplaced", k.Spec, k.File)
		}
		if _, err := verify.KernelSource(src); err != nil {
			t.Errorf("%s: %v", k.Spec, err)
		}
	}
	if len(want) != 0 {
		t.Errorf("%s: mutants %v missing", control.Kernel.Spec, want)
	}
	if controls != 3 || mutants < 3*3 {
		t.Errorf("%d controls and %d mutants, want 3 and several each", controls, mutants)
	}

	// A kernel decided before running gets no mutants.
	stale := append([]verify.Kernel(nil), verify.Kernels[0])
	stale[0].Grid[0]++
	items, err := Items(&Options{Root: root, Mutate: true}, stale, t.TempDir())
	if err != nil || len(items) != 1 || items[0].Pre != Failed {
		t.Errorf("stale entry: %+v %v", items, err)
	}
}

func TestOptionsMutate(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	if err := fs.Parse([]string{"-mutate", "-random", "3"}); err != nil {
		t.Fatal(err)
	}
	if !o.Mutate || o.Random != 3 {
		t.Errorf("mutate %v, random %d", o.Mutate, o.Random)
	}
	var back Options
	fs2 := flag.NewFlagSet("t", flag.ContinueOnError)
	back.Register(fs2)
	child := o.ShardOptions(1, 2, "s.json", "w")
	if err := fs2.Parse(child.Args()); err != nil || !reflect.DeepEqual(back, child) {
		t.Errorf("Args round trip: %v\n%+v\n%+v", err, back, child)
	}
}

func TestMutationVerdict(t *testing.T) {
	res := func(spec, mutation string, d Disposition) Result {
		return Result{Spec: spec, Mutation: mutation, Disposition: d, Backend: "cuda"}
	}
	cases := []struct {
		name    string
		results []Result
		bad     bool
		line    string
	}{
		{"all caught", []Result{res("a", "", Passed), res("a~x", "x", Incorrect), res("a~y", "y", Incorrect)}, false,
			"mutations: caught 2 of 2 planted bugs\n"},
		{"missed", []Result{res("a", "", Passed), res("a~x", "x", Passed), res("a~y", "y", Incorrect)}, true,
			"mutations: caught 1 of 2 planted bugs; MISSED (passed): a~x\n"},
		{"crashed", []Result{res("a", "", Passed), res("a~x", "x", Failed)}, true,
			"mutations: caught 0 of 1 planted bugs; failed instead of incorrect: a~x\n"},
		{"no gpu", []Result{res("a", "", NotRun), res("a~x", "x", NotRun)}, false,
			"mutations: caught 0 of 1 planted bugs; 1 not run\n"},
		{"control wrong", []Result{res("a", "", Incorrect), res("a~x", "x", Incorrect)}, true,
			"mutations: caught 1 of 1 planted bugs\n"},
		{"no mutants", []Result{res("a", "", Passed)}, false, ""},
	}
	for _, c := range cases {
		r := &Report{Results: c.results}
		if r.Bad() != c.bad {
			t.Errorf("%s: bad %v, want %v", c.name, r.Bad(), c.bad)
		}
		var b bytes.Buffer
		WriteSummary(&b, r)
		out := b.String()
		line := out[strings.LastIndex(out[:len(out)-1], "\n")+1:]
		if !strings.HasPrefix(line, "mutations:") {
			line = ""
		}
		if line != c.line {
			t.Errorf("%s: summary ends %q, want %q", c.name, line, c.line)
		}
	}
}

// A -mutate run through the runner (hooks faked): mutants run with their
// control's inputs and problem, and their results carry the mutation into
// the JSON report.
func TestRunnerMutate(t *testing.T) {
	work := t.TempDir()
	o, items := mutateItems(t, work)
	o.Shard, o.Jobs, o.Timeout, o.Tol, o.Runs = "0/1", 2, time.Minute, Tolerance, 1
	answers := map[string]RunOutput{}
	for _, it := range items {
		a := RunOutput{RelL2: 1e-7, Compared: &Compared{10, "all"}, Outputs: 10}
		if it.Mutation != "" {
			a.RelL2 = 0.5
		}
		answers[it.Kernel.Spec] = a
	}
	r, ran, _ := fakeRunner(t, o, answers)
	seeds := map[string]uint64{}
	exec := r.Exec
	r.Exec = func(ctx context.Context, j *Job) (RunOutput, error) {
		seeds[j.Kernel.Spec] = j.Seed
		return exec(ctx, j)
	}
	rep := &Report{Results: r.Run(context.Background(), items)}
	if len(*ran) != len(items) {
		t.Fatalf("ran %d of %d items", len(*ran), len(items))
	}
	for _, res := range rep.Results {
		base, _, _ := strings.Cut(res.Spec, "~")
		if seeds[res.Spec] != seeds[base] {
			t.Errorf("%s: seed %d, its kernel's %d", res.Spec, seeds[res.Spec], seeds[base])
		}
		if want := map[bool]Disposition{true: Passed, false: Incorrect}[res.Mutation == ""]; res.Disposition != want || len(res.Arch) != 1 {
			t.Errorf("%s: %s %q, archs %v", res.Spec, res.Disposition, res.Reason, res.Arch)
		}
	}
	if rep.Bad() {
		t.Error("every mutant caught, yet the run is bad")
	}
	path := filepath.Join(work, "r.json")
	if err := WriteReport(path, rep); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	back, err := ReadReport(path)
	if err != nil || !reflect.DeepEqual(back.Results, rep.Results) || !bytes.Contains(data, []byte(`"mutation": "wrong-tap-weight"`)) {
		t.Errorf("JSON round trip: %v", err)
	}
	var b bytes.Buffer
	WriteSummary(&b, rep)
	n := len(items) - 3
	if want := "mutations: caught " + strconv.Itoa(n) + " of " + strconv.Itoa(n) + " planted bugs"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// With nvcc on PATH: every mutant of two random configurations compiles
// (-compile-only, the real hooks).
func TestMutantsCompile(t *testing.T) {
	if _, err := exec.LookPath("nvcc"); err != nil {
		t.Skip("no nvcc")
	}
	if testing.Short() {
		t.Skip("compiles a dozen kernels")
	}
	work := t.TempDir()
	o := &Options{Root: root, Random: 6, Seed: 5, Mutate: true, NVCC: "nvcc", Shard: "0/1", Jobs: 8, CompileOnly: true}
	all, err := Items(o, nil, work) // no registry: the random configurations only
	if err != nil {
		t.Fatal(err)
	}
	// Each target's that this nvcc builds (sm_90a needs CUDA 12.0).
	var items []Item
	for _, it := range all {
		if tg, _ := plan.TargetNamed(it.Kernel.Target); verify.NVCCKnows("nvcc", tg.Arch) {
			it.Index = len(items)
			items = append(items, it)
		}
	}
	if len(items) < len(all) {
		t.Logf("%d of %d items left out: nvcc cannot build sm_90a", len(all)-len(items), len(all))
	}
	var log bytes.Buffer
	res := NewRunner(o, work, "", &log).Run(context.Background(), items)
	mutants := 0
	for _, r := range res {
		// Each compiled for its own target's cubin (random draws pick one).
		tg, _ := plan.TargetNamed(r.Target)
		if r.Disposition != NotRun || len(r.Arch) != 1 || r.Arch[tg.Arch].Registers == 0 {
			t.Errorf("%s: %s %q %v", r.Spec, r.Disposition, r.Reason, r.Arch)
		}
		if r.Mutation != "" {
			mutants++
		}
	}
	if mutants < 4 {
		t.Errorf("only %d mutants", mutants)
	}
}
