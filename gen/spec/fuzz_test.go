package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// fuzzFile is the path every fuzzed spec is parsed as.
const fuzzFile = "fuzz.yaml"

// FuzzParse: Parse never panics; an error is always a spec.Errors whose
// entries carry the file, a 1-based line and column and a field; a spec it
// accepts satisfies the validator's promises and plans without panicking.
// Run with: go test -run='^$' -fuzz=FuzzParse -fuzztime=1000000x ./gen/spec
// (more seeds are in testdata/fuzz/FuzzParse).
func FuzzParse(f *testing.F) {
	base, err := os.ReadFile(filepath.Join("testdata", "base.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(base)
	for _, e := range []edit{
		{"  kernel: [3, 5, 7]", "  kernel: 3"},
		{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {mma: {bm: 128, bn: 16, bk: 8, wm: 32, wn: 16}}"},
		{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {bm: 256, bn: 8, bk: 4, tm: 8, tn: 4}}"},
		{"    - kernel_size\n", "    - (kernel_size, (1, 2), -3)\n"},
		{"  batch: 8\n", "  batch: &b 8\n  bias: *b\n"},
		{"  groups: 4\n", "  groups: 0\n  dilation: [1, 0, 2]\n  input_dist: randn\n"},
		{"version: 2\n", ""},
	} {
		f.Add([]byte(strings.Replace(string(base), e.Old, e.New, 1)))
	}
	f.Add([]byte("version: 2\nname: x\nproblem: {batch: 1, in_channels: 1, out_channels: 1, kernel: 1, input: 1}\n" +
		"reference: {params: [{name: a, type: int}], conv: [a, a, a], init_inputs: [1]}\n"))
	f.Add([]byte("{version: 2, name: [a], problem: !!map {}, reference: ~}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := spec.Parse(fuzzFile, data)
		if err != nil {
			if s != nil {
				t.Errorf("Parse returned a spec with an error")
			}
			var errs spec.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, want spec.Errors: %v", err, err)
			}
			checkErrors(t, fuzzFile, errs)
			return
		}
		if s == nil {
			t.Fatal("Parse returned neither a spec nor an error")
		}
		checkValid(t, s)
		if small(s) {
			p, err := plan.New(s, plan.SM90)
			if err != nil {
				var errs spec.Errors
				if !errors.As(err, &errs) {
					t.Fatalf("plan error is %T, want spec.Errors: %v", err, err)
				}
				checkErrors(t, fuzzFile, errs)
			} else if p.Out != s.Problem.Out() {
				t.Errorf("plan output %v, spec output %v", p.Out, s.Problem.Out())
			}
		}
	})
}

// checkValid asserts what the validator promises about an accepted spec.
func checkValid(t *testing.T, s *spec.Spec) {
	t.Helper()
	p := s.Problem
	if s.Path != fuzzFile || s.Name == "" {
		t.Errorf("path %q, name %q", s.Path, s.Name)
	}
	if p.Batch < 1 || p.InChannels < 1 || p.OutChannels < 1 || p.Groups < 1 ||
		p.InChannels%p.Groups != 0 || p.OutChannels%p.Groups != 0 {
		t.Errorf("accepted channels/groups: %+v", p.Conv)
	}
	out := p.Out()
	for i := range 3 {
		if p.Kernel[i] < 1 || p.In[i] < 1 || p.Stride[i] < 1 || p.Dilation[i] < 1 || p.Padding[i] < 0 ||
			p.OutputPadding[i] < 0 || p.OutputPadding[i] >= max(p.Stride[i], p.Dilation[i]) || out[i] < 1 {
			t.Errorf("accepted dimension %d: %+v (output %v)", i, p.Conv, out)
		}
	}
	if p.Batch > spec.MaxCount || p.InChannels > spec.MaxCount || p.OutChannels > spec.MaxCount {
		t.Errorf("accepted counts past %d: %+v", spec.MaxCount, p.Conv)
	}
	for i := range 3 {
		if p.Kernel[i] > spec.MaxKernel || p.Stride[i] > spec.MaxStride || p.In[i] > spec.MaxExtent || out[i] > spec.MaxExtent ||
			p.Dilation[i] > spec.MaxExtent || p.Padding[i] > spec.MaxExtent {
			t.Errorf("accepted dimension %d past the limits: %+v (output %v)", i, p.Conv, out)
		}
	}
	if p.OutputLen() > spec.TargetMemoryBytes/4 || p.InputLen() > spec.TargetMemoryBytes/4 || p.WeightLen() > spec.TargetMemoryBytes/4 {
		t.Errorf("accepted tensors past the target's memory: %+v", p.Conv)
	}
	if p.InputDist != "rand" && p.InputDist != "randn" {
		t.Errorf("accepted input_dist %q", p.InputDist)
	}
	if len(s.Kernel.Backends) == 0 || s.Kernel.PrecisionFor("cuda") != "fp32" && s.Kernel.PrecisionFor("cuda") != "3xtf32" {
		t.Errorf("accepted kernel %+v", s.Kernel)
	}
}

// small tells whether a spec is cheap to plan: the plan enumerates
// stride^3 phases and their taps.
func small(s *spec.Spec) bool {
	c := s.Problem.Conv
	for i := range 3 {
		if c.Stride[i] > 16 || c.Kernel[i] > 64 || c.Dilation[i] > 1<<20 || c.In[i] > 1<<20 || c.Padding[i] > 1<<20 {
			return false
		}
	}
	return c.Batch <= 1<<20 && c.InChannels <= 1<<20 && c.OutChannels <= 1<<20
}
