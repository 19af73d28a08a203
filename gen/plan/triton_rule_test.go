package plan_test

import (
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
)

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
