package plan_test

import (
	"os"
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// TestTritonPipelinedTaplessPlanned: the case that came out wrong on the
// H200 while the Triton kernel derived its phase from the program id
// (channels-last input, three stages of pipelined loads, 26 of 27 stride
// phases without a tap; relative L2 0.47, fused 0.48) is a regression
// spec again, every option pinned at today's defaults, and it plans as
// it stands, fused, at the default stage count and under a target's
// section: the kernel now loads the phase's numbers from a table.
func TestTritonPipelinedTaplessPlanned(t *testing.T) {
	data, err := os.ReadFile("../../specs/regress/triton_tapless_phases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	const pinned = "triton: {precision: 3xtf32, channels_last: true, block_m: 128, block_n: 16, block_k: 16, warps: 4, stages: 3}"
	if !strings.Contains(src, pinned) {
		t.Fatalf("the regression spec no longer pins %s", pinned)
	}
	for _, c := range []struct{ name, src string }{
		{"as it came out wrong", src},
		{"default stages", strings.Replace(src, ", stages: 3", "", 1)},
		{"two stages", strings.Replace(src, "stages: 3", "stages: 2", 1)},
		{"fused W phases", strings.Replace(src, "stages: 3", "stages: 3, fuse_w: true", 1)},
		{"in the sm90 section", strings.Replace(src, "  triton: {", "  sm90:\n    triton: {", 1)},
	} {
		s, err := spec.Parse("regress.yaml", []byte(c.src))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if plan.TaplessAxis(s.Problem.Conv) != 0 {
			t.Fatalf("%s: no tap-less residue along depth", c.name)
		}
		if _, err := plan.New(s, plan.SM90); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestTaplessAxis: an axis has a residue no tap reaches where stride and
// dilation share a factor, or where the kernel is shorter than the stride.
func TestTaplessAxis(t *testing.T) {
	one := [3]int{1, 1, 1}
	conv := func(k, s, d [3]int) geom.Conv {
		return geom.Conv{Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, In: [3]int{4, 4, 4}, Kernel: k, Stride: s, Dilation: d}
	}
	for _, c := range []struct {
		conv geom.Conv
		want int
	}{
		{conv([3]int{3, 3, 3}, one, one), -1},
		{conv([3]int{3, 3, 3}, [3]int{2, 2, 2}, one), -1},
		{conv([3]int{3, 3, 3}, [3]int{3, 3, 3}, [3]int{3, 3, 3}), 0},
		{conv([3]int{3, 3, 3}, [3]int{1, 2, 2}, [3]int{1, 1, 2}), 2},
		{conv([3]int{3, 1, 3}, [3]int{1, 2, 1}, one), 1},
	} {
		if got := plan.TaplessAxis(c.conv); got != c.want {
			t.Errorf("kernel %v stride %v dilation %v: axis %d, want %d", c.conv.Kernel, c.conv.Stride, c.conv.Dilation, got, c.want)
		}
	}
}
