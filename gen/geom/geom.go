// Package geom holds the geometry of one nn.ConvTranspose3d call: the
// numbers every other package (spec, plan, reference, verifier) agrees on.
package geom

import (
	"math"
	"strings"
)

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

// Mul is a*b for non-negative a and b, and false where the product
// overflows int (every size in a spec is checked this way before it is
// used: a dilation near 2^62 must be refused, not wrap).
func Mul(a, b int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > math.MaxInt/b {
		return 0, false
	}
	return a * b, true
}

// MulAll is the product of non-negative factors, false on overflow.
func MulAll(xs ...int) (int, bool) {
	p := 1
	for _, x := range xs {
		var ok bool
		if p, ok = Mul(p, x); !ok {
			return 0, false
		}
	}
	return p, true
}

// OutDimChecked is OutDim for non-negative fields, false where a term
// overflows int (the result itself may be zero or negative: no output).
func OutDimChecked(in, kernel, stride, padding, outputPadding, dilation int) (int, bool) {
	if in < 1 || kernel < 1 || padding < 0 || outputPadding < 0 {
		return 0, false
	}
	a, ok1 := Mul(in-1, stride)
	b, ok2 := Mul(dilation, kernel-1)
	p2, ok3 := Mul(2, padding)
	if !ok1 || !ok2 || !ok3 || a > math.MaxInt/4 || b > math.MaxInt/4 || outputPadding > math.MaxInt/4 {
		return 0, false
	}
	return a - p2 + b + outputPadding + 1, true
}

// OutChecked is Out, false where the formula overflows along a dimension.
func (c Conv) OutChecked() ([3]int, bool) {
	var o [3]int
	for i := range o {
		var ok bool
		if o[i], ok = OutDimChecked(c.In[i], c.Kernel[i], c.Stride[i], c.Padding[i], c.OutputPadding[i], c.Dilation[i]); !ok {
			return o, false
		}
	}
	return o, true
}

// LensChecked returns the element counts of the input, the weight and the
// output, false where one overflows int or the configuration has no
// positive groups or output.
func (c Conv) LensChecked() (in, weight, out int, ok bool) {
	o, ok := c.OutChecked()
	if !ok || c.Groups < 1 || o[0] < 1 || o[1] < 1 || o[2] < 1 {
		return 0, 0, 0, false
	}
	in, ok1 := MulAll(c.Batch, c.InChannels, c.In[0], c.In[1], c.In[2])
	weight, ok2 := MulAll(c.InChannels, c.OutPerGroup(), c.Kernel[0], c.Kernel[1], c.Kernel[2])
	out, ok3 := MulAll(c.Batch, c.OutChannels, o[0], o[1], o[2])
	return in, weight, out, ok1 && ok2 && ok3
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
// OnePositionStrides is c with the stride of every axis along which the
// input has one position raised to the kernel's dilated extent (never
// lowered), and which axes changed. That position reaches output
// k*dilation - padding through tap k whatever the stride, so the output
// is the same (its size does not depend on the stride there, and output
// padding stays below the stride); at the new stride each stride phase
// holds at most one tap, so a kernel computes no products of taps that
// read outside the input.
func (c Conv) OnePositionStrides() (Conv, [3]bool) {
	var changed [3]bool
	for a := range 3 {
		if s := c.Dilation[a]*(c.Kernel[a]-1) + 1; c.In[a] == 1 && c.Stride[a] < s {
			c.Stride[a], changed[a] = s, true
		}
	}
	return c, changed
}

// FoldOnePositionTaps is c with its leading spatial axes folded into the
// output channels, and how many it folded (0: none, c itself). An axis
// folds where the input has one position, no padding crops the output
// and no dilation spreads it (padding and output padding 0, dilation 1 or
// a kernel of 1): its output position o then comes from tap o alone, and
// output (n, c, o, ...) and weight (ci, co, o, ...) are, in memory,
// element (n, c*K + o, 0, ...) and (ci, co*K + o, 0, ...) of a
// convolution with K times the output channels and kernel 1 there. Only
// leading axes fold (depth, then height if depth did, then width), so
// that both tensors keep their memory; a group's channels stay
// contiguous. A one-position input (a GAN's first layer) becomes a GEMM
// of batch rows by out_channels x taps columns. A bias stays the
// module's: folded channel c reads bias c / K (BiasEvery).
func (c Conv) FoldOnePositionTaps() (Conv, int) {
	folded, factor := 0, 1
	for a := range 3 {
		if c.In[a] != 1 || c.Padding[a] != 0 || c.OutputPadding[a] != 0 || c.Dilation[a] != 1 && c.Kernel[a] != 1 {
			break
		}
		factor *= c.Kernel[a]
		folded++
	}
	if factor == 1 {
		return c, 0
	}
	f := c
	f.OutChannels *= factor
	for a := range folded {
		f.Kernel[a], f.Stride[a], f.Dilation[a] = 1, 1, 1
	}
	return f, folded
}

// SharedBias is the bias of a convolution whose every consecutive run of
// every output channels shares one value of b (a tap fold's channels,
// FoldOnePositionTaps), one value a channel; nil without a bias.
func SharedBias(b []float32, every int) []float32 {
	if b == nil {
		return nil
	}
	out := make([]float32, len(b)*every)
	for c := range out {
		out[c] = b[c/every]
	}
	return out
}

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

// MMASyncTF32 is dense TF32 by mma.sync (m16n8k8) on an H200: 305
// TFLOP/s back to back from registers at 32 warps an SM
// (docs/perf/probes/mmarate.cu, PERF.md v35), the tensor rate of the code
// an sm80 CUDA file runs on Hopper, which has no wgmma there. The H100 SXM
// has the same multiprocessors and clocks.
const MMASyncTF32 = 305e12

// Ceilings are a GPU's rates that floors are stated against.
type Ceilings struct {
	FFMA, TF32x3 float64 // FLOP/s: fp32 FFMA, and 3xTF32 (a third of dense TF32)
	BW           float64 // bytes/s of device memory, read plus written
}

// MMASync are g's ceilings for code whose tensor products are mma.sync:
// 3xTF32 at a third of MMASyncTF32.
func (g Ceilings) MMASync() Ceilings {
	g.TF32x3 = MMASyncTF32 / 3
	return g
}

var (
	// H200 is the GPU the floors are stated for by default.
	H200 = Ceilings{FFMA: FFMAFLOPS, TF32x3: TF32x3FLOPS, BW: MemoryBW}
	// H100 (SXM, 80 GB) has the H200's arithmetic and a device-to-device
	// copy of about 3.0 TB/s on the machines the runs use.
	H100 = Ceilings{FFMA: FFMAFLOPS, TF32x3: TF32x3FLOPS, BW: 3.0e12}
)

// CeilingsOf are the ceilings of the GPU a run names (nvidia-smi's name):
// an H100's, else the H200's.
func CeilingsOf(gpu string) Ceilings {
	if strings.Contains(gpu, "H100") {
		return H100
	}
	return H200
}

// FloorMS is the least time in milliseconds a kernel of the given
// precision can take on the GPU: its FLOPs at the unit's peak or its
// minimum bytes at full bandwidth, whichever is larger.
func (g Ceilings) FloorMS(flops, minBytes float64, precision string) float64 {
	rate := g.FFMA
	if precision == "3xtf32" {
		rate = g.TF32x3
	}
	return 1e3 * max(flops/rate, minBytes/g.BW)
}

// FloorMS is the floor on the H200 (Ceilings.FloorMS).
func FloorMS(flops, minBytes float64, precision string) float64 {
	return H200.FloorMS(flops, minBytes, precision)
}

// FloorMS is the problem's floor for a precision mode.
func (c Conv) FloorMS(precision string) float64 {
	return FloorMS(c.FLOPs(), c.MinBytes(), precision)
}
