package gen

import (
	"fmt"
	"testing"
	"time"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// extremeSpecs are valid specs at the limits of gen/spec/limits.go, for
// each kernel family: the most stride phases, the largest kernel, the
// most channels and the widest extents that fit the target's memory.
func extremeSpecs() map[string]string {
	one := [3]int{1, 1, 1}
	kernels := map[string]spec.Kernel{
		"ffma":      {Backends: []string{"cuda", "triton"}},
		"direct":    {Backends: []string{"cuda", "triton"}, CUDA: spec.CUDA{Family: spec.Direct{}}},
		"mma":       {Backends: []string{"cuda", "triton"}, CUDA: spec.CUDA{Family: spec.MMA{}}, Triton: spec.Triton{Precision: "3xtf32"}},
		"wgmma":     {Backends: []string{"cuda", "triton"}, CUDA: spec.CUDA{Family: spec.WGMMA{}}, Triton: spec.Triton{Precision: "3xtf32"}},
		"kw_in_n":   {Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: spec.WGMMA{KWInN: true, Slabs: 1}}},
		"triton_fw": {Backends: []string{"triton"}, Triton: spec.Triton{FuseW: true, FoldW: 8}},
		// Open choices: the chooser ranks every candidate of both backends.
		"open":   {Backends: []string{"cuda", "triton"}},
		"triton": {Backends: []string{"triton"}},
	}
	convs := map[string]geom.Conv{
		"phases": {Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, Kernel: [3]int{32, 32, 32}, In: [3]int{64, 64, 64},
			Stride: [3]int{16, 16, 16}, Dilation: [3]int{7, 5, 3}, OutputPadding: [3]int{6, 4, 2}},
		"kernel": {Batch: 1, InChannels: 4, OutChannels: 4, Groups: 1, Kernel: [3]int{32, 32, 32}, In: [3]int{8, 8, 8},
			Stride: one, Dilation: [3]int{1 << 10, 1 << 10, 1 << 10}},
		"channels": {Batch: 1, InChannels: 1 << 24, OutChannels: 1 << 24, Groups: 1 << 24, Kernel: one, In: one, Stride: one, Dilation: one},
		"extent":   {Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, Kernel: [3]int{1, 1, 3}, In: [3]int{1, 1 << 12, 1 << 20}, Stride: [3]int{1, 1, 4}, Dilation: one},
		"stride_w": {Batch: 1, InChannels: 16, OutChannels: 16, Groups: 1, Kernel: [3]int{1, 1, 32}, In: [3]int{2, 2, 1 << 16}, Stride: [3]int{1, 1, 16}, Dilation: [3]int{1, 1, 1 << 18}},
		"many_phases": {Batch: 2, InChannels: 24, OutChannels: 40, Groups: 1, Kernel: [3]int{5, 5, 5}, In: [3]int{64, 64, 64},
			Stride: [3]int{8, 8, 8}, Dilation: [3]int{3, 2, 1}, OutputPadding: [3]int{2, 1, 0}},
	}
	out := map[string]string{}
	for kn, k := range kernels {
		for cn, c := range convs {
			name := fmt.Sprintf("x_%s_%s", cn, kn)
			out[name] = spec.Generic(name, "extreme", c, "rand", k)
		}
	}
	return out
}

// TestExtremeSpecsPlanFast: a valid spec at the limits plans within the
// issue's 100 ms (the best of five runs, against a loaded machine's
// noise) and renders, or is refused with positioned errors.
func TestExtremeSpecsPlanFast(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range extremeSpecs() {
		t.Run(name, func(t *testing.T) {
			best := time.Hour
			var ps []*plan.Plan
			var errs spec.Errors
			for range 5 {
				start := time.Now()
				ps, errs = parseAndPlan("specs/x.yaml", []byte(src))
				best = min(best, time.Since(start))
			}
			if best > 100*time.Millisecond {
				t.Errorf("planned in %v, more than 100 ms", best)
			}
			if errs != nil {
				checkPositioned(t, errs)
				t.Logf("refused in %v: %v", best, errs)
				return
			}
			start := time.Now()
			if _, err := r.Render(ps, "specs/x.yaml"); err != nil {
				t.Fatal(err)
			}
			t.Logf("planned in %v, rendered in %v: %v phases, %v taps", best, time.Since(start), len(ps[0].Phases), len(ps[0].Taps))
		})
	}
}
