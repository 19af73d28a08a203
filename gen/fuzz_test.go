package gen

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// Per-input bounds of FuzzPipeline: the planner plans any accepted spec in
// well under 100 ms (limits in gen/spec/limits.go), and rendering its
// files stays within these; a spec that would make the planner or a
// template loop or allocate without bound breaks them.
const (
	fuzzTimeBound  = time.Second
	fuzzAllocBound = 256 << 20 // bytes allocated for one input
)

// issueSpecs are the reproducers of the issue "No silently wrong kernel,
// no unsafe spec", as edits of the level-1 spec #72: each must now be
// refused quickly with positioned errors (or planned quickly).
var issueSpecs = []struct{ name, old, new string }{
	{"stride 100000", "  stride: [2, 2, 2]", "  stride: [100000, 2, 2]"},
	{"kernel_w 1e9", "  kernel: [3, 5, 7]", "  kernel: [3, 5, 1000000000]"},
	{"channels 2^62+1", "  in_channels: 32\n", "  in_channels: 4611686018427387905\n"},
	{"dilation near 2^62", "  groups: 4\n", "  groups: 4\n  dilation: [1, 1, 4611686018427387903]\n"},
	{"second document", "kernel:\n", "---\nkernel:\n"},
	{"bias !!bool yes", "  groups: 4\n", "  groups: 4\n  bias: !!bool yes\n"},
	{"name null", "name: l1_72_strided_padded_grouped", "name: null"},
	{"name gpu", "name: l1_72_strided_padded_grouped", "name: gpu"},
	{"attr to", "reference:\n", "reference:\n  attr: to\n"},
	{"title newline", "title: 72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_", "title: \"x\\n__import__('os').system('true')\\n#\""},
}

// FuzzPipeline takes spec bytes through the whole pipeline, parse,
// validate, plan and render, as LoadAll and RenderAll do: it never panics;
// a spec it refuses gets positioned errors; a spec it accepts plans and
// renders every file of its backends; and each input stays within the
// time and memory bounds above.
// Run with: go test -run='^$' -fuzz=FuzzPipeline -fuzztime=3000x ./gen
func FuzzPipeline(f *testing.F) {
	matches, err := filepath.Glob(filepath.Join("..", SpecDir, "level1", "*.yaml"))
	if err != nil || len(matches) == 0 {
		f.Fatalf("no level-1 specs: %v", err)
	}
	base := ""
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		if strings.Contains(m, "72_strided") {
			base = string(b)
		}
	}
	for _, c := range issueSpecs {
		if !strings.Contains(base, c.old) {
			f.Fatalf("%s: %q is not in spec #72", c.name, c.old)
		}
		f.Add([]byte(strings.Replace(base, c.old, c.new, 1)))
	}
	r, err := NewRenderer()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		ps, errs := parseAndPlan("specs/fuzz.yaml", data)
		if errs != nil {
			if ps != nil {
				t.Errorf("a plan along with errors")
			}
			for _, e := range errs {
				if e.File != "specs/fuzz.yaml" || e.Line < 1 || e.Col < 1 || e.Field == "" || e.Msg == "" {
					t.Errorf("error without a position or a field: %#v", e)
				}
			}
		} else {
			files, err := r.Render(ps, "specs/fuzz.yaml")
			if err != nil {
				t.Fatalf("accepted spec does not render: %v", err)
			}
			if want := 1 + len(ps)*len(ps[0].Spec.Kernel.Backends); len(ps) != len(plan.Targets) || len(files) != want {
				t.Errorf("rendered %d files for %d targets and backends %v, want %d", len(files), len(ps), ps[0].Spec.Kernel.Backends, want)
			}
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if elapsed > fuzzTimeBound {
			t.Errorf("took %v, more than %v", elapsed, fuzzTimeBound)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > fuzzAllocBound {
			t.Errorf("allocated %d MiB, more than %d", alloc>>20, fuzzAllocBound>>20)
		}
	})
}

// TestIssueSpecsRefused: every reproducer of the issue is refused, with
// the error on the field it broke.
func TestIssueSpecsRefused(t *testing.T) {
	base := readSpec(t, "72_strided_padded_grouped.yaml")
	want := map[string]string{
		"stride 100000":      "problem.stride: depth must be at most 16",
		"kernel_w 1e9":       "problem.kernel: width must be at most 32",
		"channels 2^62+1":    "problem.in_channels: must be at most 16777216",
		"dilation near 2^62": "problem.dilation: width must be at most 16777216",
		"second document":    "spec: a spec file holds one YAML document; a second one starts here",
		"bias !!bool yes":    "problem.bias: must be true or false (got yes)",
		"name null":          "name: must be a string (got null)",
		"name gpu":           `name: is reserved: out/gpu is the generator's or the report's own`,
		"attr to":            `reference.attr: is an attribute of torch.nn.Module, which the model would shadow (got "to")`,
		"title newline":      "title: contains the character U+000A at byte 1",
	}
	for _, c := range issueSpecs {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, errs := parseAndPlan("specs/x.yaml", []byte(strings.Replace(base, c.old, c.new, 1)))
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
			if !strings.Contains(errs.Error(), want[c.name]) {
				t.Errorf("errors:\n%v\nwant one with %q", errs, want[c.name])
			}
		})
	}
}

// TestKernelErrorsBesideProblemErrors: a refused problem field does not
// hide the plan's error about the tile (32 FFMA threads' worth of rows in
// a block of 2 threads), and a tile error that depends on the refused
// field is not made up from a stand-in.
func TestKernelErrorsBesideProblemErrors(t *testing.T) {
	base := readSpec(t, "72_strided_padded_grouped.yaml")
	src := strings.Replace(base, "  batch: 8\n", "  batch: 0\n", 1)
	src = cudaLine.ReplaceAllString(src, "  cuda: {ffma: {bm: 16, bn: 4, tm: 8, tn: 4}}")
	_, errs := parseAndPlan("specs/x.yaml", []byte(src))
	got := errs.Error()
	for _, w := range []string{"problem.batch: must be positive (got 0)", "kernel.cuda.ffma.bm: gives (bm/tm)*(bn/tn) = 2 threads"} {
		if !strings.Contains(got, w) {
			t.Errorf("errors:\n%s\nwant one with %q", got, w)
		}
	}
	// Winograd needs kernel_w 3: with the kernel refused, whether it holds
	// is unknown, and the stand-ins disagree.
	src = strings.Replace(base, "  kernel: [3, 5, 7]", "  kernel: [3, 5, 0]", 1)
	src = cudaLine.ReplaceAllString(src, "  cuda: {wgmma: {winograd: true}}")
	_, errs = parseAndPlan("specs/x.yaml", []byte(src))
	if got := errs.Error(); strings.Contains(got, "winograd") || !strings.Contains(got, "problem.kernel: width must be positive") {
		t.Errorf("errors:\n%s\nwant the kernel's error and none about winograd", got)
	}
	checkPositioned(t, errs)
}

// cudaLine is the kernel section's CUDA choice of a level-1 spec.
var cudaLine = regexp.MustCompile(`(?m)^  cuda: .*$`)

func checkPositioned(t *testing.T, errs spec.Errors) {
	t.Helper()
	for i, e := range errs {
		if e.Line < 1 || e.Col < 1 || e.Field == "" {
			t.Errorf("error %d has no position or field: %v", i, e)
		}
		if i > 0 && (errs[i-1].Line > e.Line || errs[i-1].Line == e.Line && errs[i-1].Col > e.Col) {
			t.Errorf("errors not sorted: %v before %v", errs[i-1], e)
		}
	}
}
