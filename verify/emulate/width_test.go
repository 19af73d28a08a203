package emulate_test

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/mutate"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
	"convtgen/verify"
	"convtgen/verify/emulate"
)

// wideFamilies are the CUDA kernel forms, as a spec's kernel section and
// the target it is planned for (the wgmma tile's products differ by
// target: mma.sync on sm80, warpgroup products on sm90).
var wideFamilies = []struct {
	name   string
	k      spec.Kernel
	target plan.Target
}{
	{"ffma", spec.Kernel{}, plan.SM80},
	{"mma", spec.Kernel{CUDA: spec.CUDA{Family: spec.MMA{}}}, plan.SM80},
	{"direct", spec.Kernel{CUDA: spec.CUDA{Family: spec.Direct{}}}, plan.SM80},
	{"window", spec.Kernel{CUDA: spec.CUDA{Family: spec.Direct{TW: 4}}}, plan.SM80},
	{"wgmma", spec.Kernel{CUDA: spec.CUDA{Family: spec.WGMMA{}}}, plan.SM80},
	{"wgmma_sm90", spec.Kernel{CUDA: spec.CUDA{Family: spec.WGMMA{}}}, plan.SM90},
}

// bigConfigs are the two reproducers (a 17 GB output; a 10 GB
// input whose gather ih * kInW passed int) and, drawn with a fixed seed,
// configurations with a tensor of 2^31 elements or more and little
// compute (kernel 1 to 3, few channels).
func bigConfigs() []geom.Conv {
	one := [3]int{1, 1, 1}
	cs := []geom.Conv{
		{Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, In: [3]int{1, 32768, 32768}, Kernel: one, Stride: [3]int{1, 1, 4}, Dilation: one},
		{Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, In: [3]int{1, 50000, 50000}, Kernel: one, Stride: one, Padding: [3]int{0, 0, 24000}, Dilation: one},
	}
	r := rand.New(rand.NewSource(25))
	for len(cs) < 4 {
		k := [3]int{1 + r.Intn(3), 1 + r.Intn(3), 1 + r.Intn(3)}
		s := [3]int{1 + r.Intn(2), 1 + r.Intn(2), 1 + r.Intn(3)}
		g := 1 + r.Intn(2)
		c := geom.Conv{Batch: 1 + r.Intn(2), InChannels: g * (1 + r.Intn(2)), OutChannels: g * (1 + r.Intn(3)), Groups: g,
			In: [3]int{1 + r.Intn(16), 512 + r.Intn(4096), 512 + r.Intn(4096)}, Kernel: k, Stride: s, Dilation: one, Bias: r.Intn(2) == 0}
		if n := max(c.InputLen(), c.OutputLen()); n >= 1<<31 && n < 1<<33 {
			cs = append(cs, c)
		}
	}
	return cs
}

// TestWideIndexing runs the emitted CUDA kernels of configurations with
// tensors of 2^31 elements and more, with their real constants, under
// UBSan: an index product computed in int overflows and aborts the run.
// Only a sample of each launch's blocks runs, on sparse memory, and each
// output they wrote is checked against a float64 direct sum (not for
// wgmma, whose main kernel reads a re-laid input that only sampled
// re-layout blocks wrote).
func TestWideIndexing(t *testing.T) {
	cxx := cxx(t)
	if testing.Short() {
		t.Skip("builds twenty kernels under UBSan")
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, c := range bigConfigs() {
		for _, f := range wideFamilies {
			k := f.k
			k.Backends = []string{"cuda"}
			name := fmt.Sprintf("big%d_%s", i, f.name)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s, err := spec.Parse(name+".yaml", []byte(spec.Generic(name, name, c, "rand", k)))
				if err != nil {
					t.Fatal(err)
				}
				p, err := plan.New(s, f.target)
				if err != nil {
					t.Skipf("not planned: %v", err) // e.g. a window tile the shape does not allow
				}
				if p.Index != "long long" {
					t.Fatalf("%v: a tensor of 2^31+ elements planned with %s offsets", c, p.Index)
				}
				src, err := mutate.RenderCUDA(r, p, name+".yaml")
				if err != nil {
					t.Fatal(err)
				}
				kernel, err := verify.KernelSource(src)
				if err != nil {
					t.Fatal(err)
				}
				check := p.Tile.WGMMA == nil
				got, err := emulate.RunSampled(context.Background(), cxx, dir, kernel, p.Launch(""), 4, int64(i), check)
				if err != nil {
					t.Fatalf("%v (grid %v): %v", c, p.Grid, err)
				}
				if check && got.Written == 0 {
					t.Fatalf("%v: the sampled blocks wrote no output", c)
				}
				t.Logf("%v: grid %v, %d sampled outputs, max error %.3g", c, p.Grid, got.Written, got.MaxErr)
			})
		}
	}
}

// TestWideIndexingCatchesIntProducts: the sampled run fails on the
// issue's first reproducer when the output row term is computed in int,
// as it was, so the test above can fail.
func TestWideIndexingCatchesIntProducts(t *testing.T) {
	cxx := cxx(t)
	one := [3]int{1, 1, 1}
	c := geom.Conv{Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, In: [3]int{1, 32768, 32768}, Kernel: one, Stride: [3]int{1, 1, 4}, Dilation: one}
	k := spec.Kernel{Backends: []string{"cuda"}}
	s, err := spec.Parse("planted.yaml", []byte(spec.Generic("planted", "planted", c, "rand", k)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(s, plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	src, err := mutate.RenderCUDA(r, p, "planted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := verify.KernelSource(src)
	if err != nil {
		t.Fatal(err)
	}
	const wide, narrow = "+ (idx_t)(P.r_h + kStrideH * qh) * kOutW", "+ (P.r_h + kStrideH * qh) * kOutW"
	planted := replaceOnce(t, kernel, wide, narrow)
	_, err = emulate.RunSampled(context.Background(), cxx, t.TempDir(), planted, p.Launch(""), 2, 1, true)
	if err == nil || !strings.Contains(err.Error(), "signed integer overflow") {
		t.Fatalf("the int row term: %v, want UBSan's signed integer overflow", err)
	}
	t.Logf("%v", err)
}

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("kernel has no %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

// TestFoldedGrid: groups 65536 and 2^24 output channels, whose grids the
// plan folds into x, run with sampled blocks (the first, the last, drawn
// ones): each block decodes its group and channel tile from blockIdx.x,
// and every output written is the direct sum of its own group's inputs.
func TestFoldedGrid(t *testing.T) {
	cxx := cxx(t)
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	one := [3]int{1, 1, 1}
	dir := t.TempDir()
	for i, c := range []geom.Conv{
		{Batch: 1, InChannels: 65536, OutChannels: 65536, Groups: 65536, In: [3]int{1, 2, 3}, Kernel: [3]int{1, 2, 2}, Stride: [3]int{1, 2, 1}, Dilation: one, Bias: true},
		{Batch: 1, InChannels: 1, OutChannels: 1 << 24, Groups: 1, In: one, Kernel: one, Stride: one, Dilation: one},
	} {
		for _, f := range wideFamilies {
			k := f.k
			k.Backends = []string{"cuda"}
			name := fmt.Sprintf("fold%d_%s", i, f.name)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s, err := spec.Parse(name+".yaml", []byte(spec.Generic(name, name, c, "rand", k)))
				if err != nil {
					t.Fatal(err)
				}
				p, err := plan.New(s, f.target)
				if err != nil {
					t.Skipf("not planned: %v", err)
				}
				if !p.Fold {
					t.Fatalf("blocks %v not folded", p.Blocks)
				}
				src, err := mutate.RenderCUDA(r, p, name+".yaml")
				if err != nil {
					t.Fatal(err)
				}
				kernel, err := verify.KernelSource(src)
				if err != nil {
					t.Fatal(err)
				}
				check := p.Tile.WGMMA == nil
				got, err := emulate.RunSampled(context.Background(), cxx, dir, kernel, p.Launch(""), 8, int64(i), check)
				if err != nil {
					t.Fatalf("blocks %v, grid %v: %v", p.Blocks, p.Grid, err)
				}
				if check && got.Written == 0 {
					t.Fatal("the sampled blocks wrote no output")
				}
				t.Logf("blocks %v as grid %v: %d sampled outputs, max error %.3g", p.Blocks, p.Grid, got.Written, got.MaxErr)
			})
		}
	}
}
