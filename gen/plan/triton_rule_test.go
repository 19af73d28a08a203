package plan_test

import (
	"os"
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// TestTritonPipeliningRefused holds the case that came out wrong on the
// H200 (Triton 3.6, relative L2 0.47): channels-last input and three stages
// of pipelined loads on a problem where 26 of 27 stride phases have no tap,
// with the W phases one a program or fused (0.48). It is refused at
// kernel.triton.channels_last, under a target's section too; the two ways
// out its error names are planned.
func TestTritonPipeliningRefused(t *testing.T) {
	data, err := os.ReadFile("../../specs/regress/triton_tapless_phases.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pinned := strings.Replace(string(data), "stages: 1", "stages: 3", 1)
	if pinned == string(data) {
		t.Fatal("the regression spec no longer pins stages: 1")
	}
	for _, c := range []struct {
		name, src, want string
	}{
		{"as it came out wrong", pinned, "kernel.triton.channels_last: with loads pipelined over 3 stages is miscompiled by Triton 3.6 where a stride phase has no tap (here along depth)"},
		{"default stages", strings.Replace(pinned, ", stages: 3", "", 1), "pipelined over the default 3 stages"},
		{"fused W phases", strings.Replace(pinned, "stages: 3", "stages: 3, fuse_w: true", 1), "kernel.triton.channels_last: with loads pipelined over 3 stages"},
		{"in the sm90 section", strings.Replace(pinned, "  triton: {", "  sm90:\n    triton: {", 1), "kernel.sm90.triton.channels_last: with loads pipelined over 3 stages"},
		{"one stage", string(data), ""},
		{"channels first", strings.Replace(pinned, "channels_last: true", "channels_last: false", 1), ""},
	} {
		s, err := spec.Parse("regress.yaml", []byte(c.src))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = plan.New(s, plan.SM90)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
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
