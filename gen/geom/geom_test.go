package geom

import (
	"math"
	"testing"
)

// TestCheckedSizes: the output-size formula and the tensor sizes refuse
// what overflows int instead of wrapping (a dilation near 2^62 made the
// formula wrap to a small positive output, which was accepted).
func TestCheckedSizes(t *testing.T) {
	if _, ok := OutDimChecked(8, 3, 1, 0, 0, 1<<62-1); ok {
		t.Errorf("dilation 2^62-1 with kernel 3: accepted")
	}
	if _, ok := OutDimChecked(math.MaxInt/2, 1, 3, 0, 0, 1); ok {
		t.Errorf("(in-1)*stride past MaxInt: accepted")
	}
	if o, ok := OutDimChecked(12, 3, 2, 1, 1, 1); !ok || o != OutDim(12, 3, 2, 1, 1, 1) {
		t.Errorf("OutDimChecked(12, 3, 2, 1, 1, 1) = %d, %v; want %d", o, ok, OutDim(12, 3, 2, 1, 1, 1))
	}
	one := [3]int{1, 1, 1}
	c := Conv{Batch: 1 << 20, InChannels: 1 << 20, OutChannels: 1 << 20, Groups: 1, Kernel: one, In: [3]int{1 << 10, 1 << 10, 1 << 10}, Stride: one, Dilation: one}
	if _, _, _, ok := c.LensChecked(); ok {
		t.Errorf("2^60-element input: sizes accepted")
	}
	c = Conv{Batch: 2, InChannels: 4, OutChannels: 6, Groups: 2, Kernel: [3]int{3, 3, 3}, In: [3]int{5, 5, 5}, Stride: one, Dilation: one}
	if in, w, out, ok := c.LensChecked(); !ok || in != c.InputLen() || w != c.WeightLen() || out != c.OutputLen() {
		t.Errorf("LensChecked = %d, %d, %d, %v; want %d, %d, %d", in, w, out, ok, c.InputLen(), c.WeightLen(), c.OutputLen())
	}
	if _, ok := MulAll(1<<31, 1<<31, 4); ok {
		t.Errorf("2^64: accepted")
	}
}
