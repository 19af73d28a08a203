package plan

import (
	"slices"

	"convtgen/gen/geom"
	"convtgen/gen/spec"
)

// A mean (or sum) over depth right after the convolution moves in front
// of it.
// Output depth o of a transposed convolution adds, for every depth tap k,
// the (h, w) transposed convolution of input depth d with the weight's
// slice k wherever o = d*stride_d - padding_d + k*dilation_d. The mean over
// o therefore adds, for each tap k, the products of slice k with the sum
// of x over the input depths whose tap-k outputs fall inside the output
// (one contiguous range a tap), divided by the output depth. A sum is
// the output depth times that mean (the bias counted once a depth), so it
// folds as the mean followed by that product. So the
// forward sums x over each tap's range first (a pass of its own, in
// double), and the kernel computes a transposed convolution with one depth
// position, kernel depth 1 and in_channels x taps input channels: channel
// ci*T + j holds input channel ci summed over the range of the j-th tap
// whose range is not empty (a group's channels stay contiguous), and the
// weight is re-laid to match. Exact in real arithmetic; the convolution
// does about one output depth's share of the products. Taps whose range is
// empty (no output they reach) drop out.

// DepthFold is a depth mean or sum moved in front of the convolution;
// the plan's Conv is then the folded convolution.
type DepthFold struct {
	// Op is the forward's reduction, "mean" or "sum".
	Op string
	// Problem is the spec's convolution, the one the reference computes.
	Problem geom.Conv
	// Taps are the depth taps that reach the output, in order: folded
	// channel ci*len(Taps) + j sums input channel ci over Taps[j]'s range.
	Taps []DepthTap
}

// DepthTap is depth tap K, whose outputs inside the output come from the
// input depths Lo to Hi-1.
type DepthTap struct{ K, Lo, Hi int }

// WeightFold is the launch of the kernel that re-lays a fold's weight
// (Cin, CoutG, KD, KH, KW) as the folded convolution's (Cin*len(Taps),
// CoutG, 1, KH, KW): a thread an element of the folded weight.
type WeightFold struct {
	Name            string
	Len             int // the folded weight's elements
	Threads, Blocks int
}

// planDepthFold is the fold of spec s's forward, or nil where it does not
// apply: the forward's first op is not a mean over exactly the depth
// axis, a later op reads the convolution's output, or no depth tap
// reaches the output (every output is the bias; the plain convolution
// handles that).
func planDepthFold(s *spec.Spec) *DepthFold {
	fwd := s.Reference.Forward
	if len(fwd) == 0 || fwd[0].Name != "mean" && fwd[0].Name != "sum" || !slices.Equal(fwd[0].Dims, []int{2}) {
		return nil
	}
	for _, op := range fwd[1:] {
		for _, o := range []*spec.Operand{&op.Operand, op.Min, op.Max} {
			if o != nil && o.Name == "conv" {
				return nil
			}
		}
	}
	c := s.Problem.Conv
	f := &DepthFold{Op: fwd[0].Name, Problem: c, Taps: depthTaps(c)}
	if len(f.Taps) == 0 || c.InChannels*len(f.Taps) > spec.MaxCount {
		return nil
	}
	return f
}

// depthTaps are the depth taps of c whose outputs reach its output depth,
// each with its range of input depths.
func depthTaps(c geom.Conv) []DepthTap {
	outD, s := c.Out()[0], c.Stride[0]
	var taps []DepthTap
	for k := range c.Kernel[0] {
		off := k*c.Dilation[0] - c.Padding[0] // input depth d reaches output d*s + off
		lo := max(0, -floorDiv(off, s))       // the least d with d*s + off >= 0
		hi := min(c.In[0], floorDiv(outD-1-off, s)+1)
		if lo < hi {
			taps = append(taps, DepthTap{K: k, Lo: lo, Hi: hi})
		}
	}
	return taps
}

// Conv is the folded convolution: one depth position of depth kernel 1,
// in_channels x taps input channels, the rest as the problem's.
func (f *DepthFold) Conv() geom.Conv {
	c := f.Problem
	c.InChannels *= len(f.Taps)
	c.In[0], c.Kernel[0], c.Stride[0], c.Padding[0], c.OutputPadding[0], c.Dilation[0] = 1, 1, 1, 0, 0, 1
	return c
}

// OutDepth is the problem's output depth: the mean's divisor, and a
// sum's factor over the mean.
func (f *DepthFold) OutDepth() int { return f.Problem.Out()[0] }

// pass is the forward's pass that sums the convolution's input x (shape
// in) over each tap's range: a thread a (sample, channel, h, w) column,
// reading x once.
func (f *DepthFold) pass(in [5]int) Pass {
	out := [5]int{in[0], in[1] * len(f.Taps), 1, in[3], in[4]}
	return Pass{Kind: "depthsum", Reduce: f.Op, In: in, Out: out, Sums: f.Taps, OutDepth: f.OutDepth()}
}

// weightFold lays out the weight re-layout's launch, named after kernel.
func (f *DepthFold) weightFold(kernel string) WeightFold {
	n := f.Conv().WeightLen()
	return WeightFold{Name: kernel + "_fold_weight", Len: n, Threads: passThreads, Blocks: ceilDiv(n, passThreads)}
}
