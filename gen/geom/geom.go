// Package geom holds the geometry of one nn.ConvTranspose3d call: the
// numbers every other package (spec, plan, reference, verifier) agrees on.
package geom

// Conv is a fully resolved ConvTranspose3d configuration. Per-dimension
// arrays are ordered (D, H, W), the way PyTorch reads them.
type Conv struct {
	Batch         int
	InChannels    int
	OutChannels   int
	In            [3]int // input depth, height, width
	Kernel        [3]int
	Stride        [3]int
	Padding       [3]int
	OutputPadding [3]int
	Dilation      [3]int
	Groups        int
	Bias          bool
}

// OutDim is PyTorch's output-size formula for one dimension.
func OutDim(in, kernel, stride, padding, outputPadding, dilation int) int {
	return (in-1)*stride - 2*padding + dilation*(kernel-1) + outputPadding + 1
}

// Out returns the output depth, height and width.
func (c Conv) Out() [3]int {
	var o [3]int
	for i := range o {
		o[i] = OutDim(c.In[i], c.Kernel[i], c.Stride[i], c.Padding[i], c.OutputPadding[i], c.Dilation[i])
	}
	return o
}

// InPerGroup and OutPerGroup are the channel counts one group sees.
func (c Conv) InPerGroup() int  { return c.InChannels / c.Groups }
func (c Conv) OutPerGroup() int { return c.OutChannels / c.Groups }

// Taps is the number of kernel positions.
func (c Conv) Taps() int { return c.Kernel[0] * c.Kernel[1] * c.Kernel[2] }

// InputLen, WeightLen and OutputLen are element counts of the three tensors.
func (c Conv) InputLen() int { return c.Batch * c.InChannels * c.In[0] * c.In[1] * c.In[2] }

// WeightLen follows PyTorch's weight layout (Cin, Cout/groups, kd, kh, kw).
func (c Conv) WeightLen() int { return c.InChannels * c.OutPerGroup() * c.Taps() }

func (c Conv) OutputLen() int {
	o := c.Out()
	return c.Batch * c.OutChannels * o[0] * o[1] * o[2]
}

// FLOPs counts the multiply-adds (times two) that a transposed convolution
// must do: every input element meets every tap of every output channel of
// its group.
func (c Conv) FLOPs() float64 {
	return 2 * float64(c.Batch) * float64(c.InChannels) * float64(c.OutPerGroup()) *
		float64(c.Taps()) * float64(c.In[0]*c.In[1]*c.In[2])
}

// MinBytes is the fewest bytes a kernel must move: each tensor once, fp32.
func (c Conv) MinBytes() float64 {
	b := c.InputLen() + c.WeightLen() + c.OutputLen()
	if c.Bias {
		b += c.OutChannels
	}
	return 4 * float64(b)
}

// Ceilings of the GPU the floors are stated for (NVIDIA H200): fp32 FFMA
// at 67 TFLOP/s, 3xTF32 at a third of the 495 TFLOP/s dense TF32 rate, and
// 4.3 TB/s of device memory, as measured for ../shared/problems.md.
const (
	FFMAFLOPS   = 67e12
	TF32x3FLOPS = 495e12 / 3
	MemoryBW    = 4.3e12
)

// FloorMS is the least time in milliseconds a kernel of the given
// precision can take: its FLOPs at the unit's peak or its minimum bytes at
// full bandwidth, whichever is larger.
func FloorMS(flops, minBytes float64, precision string) float64 {
	rate := FFMAFLOPS
	if precision == "3xtf32" {
		rate = TF32x3FLOPS
	}
	return 1e3 * max(flops/rate, minBytes/MemoryBW)
}

// FloorMS is the problem's floor for a precision mode.
func (c Conv) FloorMS(precision string) float64 {
	return FloorMS(c.FLOPs(), c.MinBytes(), precision)
}
