package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"convtgen/gen/spec"
)

// TestLevel2TritonBackend: every level-2 problem gets both backends (its
// spec names none, and the Triton backend expresses every chain); and a
// chain the Triton backend cannot express is left out of the default
// backends with the reason, or refused at kernel.backends where the spec
// asks for Triton: tensors past the 32-bit indices of the Triton chain
// kernels (#74 at batch 512), and a step kind without a Triton kernel
// (pools, taken out of the Triton kinds for the test).
func TestLevel2TritonBackend(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "specs", "level2", "*.yaml"))
	if err != nil || len(paths) != 19 {
		t.Fatalf("%d level-2 specs: %v", len(paths), err)
	}
	for _, path := range paths {
		s, err := spec.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range Targets {
			p, err := New(s, target)
			if err != nil {
				t.Fatalf("%s for %s: %v", s.Name, target.Name, err)
			}
			if !slices.Equal(p.Spec.Kernel.Backends, []string{"cuda", "triton"}) || p.TritonLeftOut != "" {
				t.Errorf("%s for %s: backends %v (left out: %q), want both", s.Name, target.Name, p.Spec.Kernel.Backends, p.TritonLeftOut)
			}
		}
	}

	src, err := os.ReadFile(filepath.Join("..", "..", "specs", "level2", "74_leakyrelu_multiply_leakyrelu_max.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Replace(string(src), "  batch: 16\n", "  batch: 512\n", 1)
	if big == string(src) {
		t.Fatal("no batch: 16 in the spec")
	}
	pool, err := os.ReadFile(filepath.Join("..", "..", "specs", "level2", "74_leakyrelu_multiply_leakyrelu_max.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, yaml, why string
		noPools         bool
	}{
		{"32-bit indices", big, "a pool step over 2147483648 elements: the Triton kernels after the convolution index in 32 bits", false},
		{"no pool kernel", string(pool), "no Triton kernel for a pool step", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.noPools {
				kinds := tritonPassKinds
				tritonPassKinds = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == "pool" })
				defer func() { tritonPassKinds = kinds }()
			}
			s, err := spec.Parse("given.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			p, err := New(s, SM90)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Spec.Kernel.Backends, []string{"cuda"}) || !strings.Contains(p.TritonLeftOut, c.why) {
				t.Errorf("backends %v, left out: %q; want cuda alone, saying %q", p.Spec.Kernel.Backends, p.TritonLeftOut, c.why)
			}
			if !slices.Equal(s.Kernel.Backends, []string{"cuda", "triton"}) {
				t.Errorf("the spec's own backends became %v", s.Kernel.Backends)
			}
			asked, err := spec.Parse("asked.yaml", []byte(c.yaml+"kernel:\n  backends: [cuda, triton]\n"))
			if err != nil {
				t.Fatal(err)
			}
			line := strings.Count(c.yaml, "\n") + 2
			_, err = New(asked, SM90)
			want := "asked.yaml:" + strconv.Itoa(line) + ":13: kernel.backends: the Triton backend cannot express this forward yet: " + c.why
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("asked for Triton: %v, want %s...", err, want)
			}
		})
	}
}
