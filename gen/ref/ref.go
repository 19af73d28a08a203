// Package ref is a float64 reference for PyTorch's nn.ConvTranspose3d
// forward pass, written straight from the definition so that generated
// kernels can be checked against something with no tiling or tricks.
//
// Layouts are PyTorch's, flat and contiguous: x (N, Cin, Di, Hi, Wi),
// weight (Cin, Cout/groups, kd, kh, kw), bias (Cout) or nil, and
// output (N, Cout, Do, Ho, Wo).
//
// Forward and At add the terms of each output in the same order (bias
// first, then by input channel, kd, kh, kw). Products of two fp32 values
// are exact in float64, so the two agree bit for bit.
package ref

import (
	"fmt"
	"math"

	"convtgen/gen/geom"
)

// Forward computes every output in float64 from fp32 inputs (the values the
// GPU saw). It scatters each input element into the outputs it touches:
// x[n,ci,id,ih,iw] adds x*w[ci,co,kd,kh,kw] to y[n, g*CoutG+co,
// id*s-p+kd*dil, ...] when that index is inside the output.
func Forward(c geom.Conv, x, w, b []float32) []float64 {
	check(c, x, w, b)
	o := c.Out()
	in := c.In
	k := c.Kernel
	s := c.Stride
	inSp := in[0] * in[1] * in[2]
	outSp := o[0] * o[1] * o[2]
	taps := c.Taps()
	cinG, coutG := c.InPerGroup(), c.OutPerGroup()

	y := make([]float64, c.OutputLen())
	if c.Bias {
		for n := 0; n < c.Batch; n++ {
			for co := 0; co < c.OutChannels; co++ {
				yc := y[(n*c.OutChannels+co)*outSp:][:outSp]
				for i := range yc {
					yc[i] = float64(b[co])
				}
			}
		}
	}

	for n := 0; n < c.Batch; n++ {
		for g := 0; g < c.Groups; g++ {
			for cil := 0; cil < cinG; cil++ {
				ci := g*cinG + cil
				xc := x[(n*c.InChannels+ci)*inSp:][:inSp]
				for col := 0; col < coutG; col++ {
					co := g*coutG + col
					yc := y[(n*c.OutChannels+co)*outSp:][:outSp]
					wc := w[(ci*coutG+col)*taps:][:taps]
					for kd := 0; kd < k[0]; kd++ {
						offD := kd*c.Dilation[0] - c.Padding[0]
						loD, hiD := span(in[0], o[0], s[0], offD)
						for kh := 0; kh < k[1]; kh++ {
							offH := kh*c.Dilation[1] - c.Padding[1]
							loH, hiH := span(in[1], o[1], s[1], offH)
							for kw := 0; kw < k[2]; kw++ {
								offW := kw*c.Dilation[2] - c.Padding[2]
								loW, hiW := span(in[2], o[2], s[2], offW)
								if loW >= hiW {
									continue
								}
								wv := float64(wc[(kd*k[1]+kh)*k[2]+kw])
								for id := loD; id < hiD; id++ {
									od := id*s[0] + offD
									for ih := loH; ih < hiH; ih++ {
										oh := ih*s[1] + offH
										xr := xc[(id*in[1]+ih)*in[2]:][:in[2]]
										yr := yc[(od*o[1]+oh)*o[2]:][:o[2]]
										// Innermost loop walks the input row contiguously;
										// the output is written with stride s[2].
										for iw := loW; iw < hiW; iw++ {
											yr[iw*s[2]+offW] += float64(xr[iw]) * wv
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return y
}

// span returns the input range [lo, hi) whose outputs i*s+off fall inside
// [0, out), clipped to [0, in).
func span(in, out, s, off int) (lo, hi int) {
	lo = max(0, ceilDiv(-off, s))
	hi = min(in, floorDiv(out-1-off, s)+1)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

// At computes one output element exactly, in gather form (for sampled checks
// of large shapes); index is the flat output index.
func At(c geom.Conv, x, w, b []float32, index int) float64 {
	check(c, x, w, b)
	if index < 0 || index >= c.OutputLen() {
		panic(fmt.Sprintf("ref: output index %d out of range [0, %d)", index, c.OutputLen()))
	}
	o := c.Out()
	in := c.In
	k := c.Kernel
	ow := index % o[2]
	oh := index / o[2] % o[1]
	od := index / (o[2] * o[1]) % o[0]
	co := index / (o[2] * o[1] * o[0]) % c.OutChannels
	n := index / (o[2] * o[1] * o[0] * c.OutChannels)
	cinG, coutG := c.InPerGroup(), c.OutPerGroup()
	g, col := co/coutG, co%coutG

	var acc float64
	if c.Bias {
		acc = float64(b[co])
	}
	for cil := 0; cil < cinG; cil++ {
		ci := g*cinG + cil
		for kd := 0; kd < k[0]; kd++ {
			id, ok := source(od, kd, c.Stride[0], c.Padding[0], c.Dilation[0], in[0])
			if !ok {
				continue
			}
			for kh := 0; kh < k[1]; kh++ {
				ih, ok := source(oh, kh, c.Stride[1], c.Padding[1], c.Dilation[1], in[1])
				if !ok {
					continue
				}
				for kw := 0; kw < k[2]; kw++ {
					iw, ok := source(ow, kw, c.Stride[2], c.Padding[2], c.Dilation[2], in[2])
					if !ok {
						continue
					}
					xi := (((n*c.InChannels+ci)*in[0]+id)*in[1]+ih)*in[2] + iw
					wi := (((ci*coutG+col)*k[0]+kd)*k[1]+kh)*k[2] + kw
					acc += float64(x[xi]) * float64(w[wi])
				}
			}
		}
	}
	return acc
}

// source inverts o = i*s - p + k*dil: it returns the input index i that tap
// k maps onto output o, and whether such an i exists in [0, in).
func source(o, k, s, p, dil, in int) (int, bool) {
	t := o + p - k*dil
	if t < 0 || t%s != 0 {
		return 0, false
	}
	i := t / s
	return i, i < in
}

// RelL2 returns ||got-want||_2 / ||want||_2 (NaN in got gives +Inf; want
// all-zero: returns ||got||).
func RelL2(got []float32, want []float64) float64 {
	if len(got) != len(want) {
		panic(fmt.Sprintf("ref: RelL2 length mismatch: got %d, want %d", len(got), len(want)))
	}
	var num, den float64
	for i, g := range got {
		gv := float64(g)
		if math.IsNaN(gv) {
			// NaN would otherwise poison the ratio into NaN, which compares
			// false against any tolerance and could pass a "> tol" check.
			return math.Inf(1)
		}
		d := gv - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num) / math.Sqrt(den)
}

// check panics with a clear message when the configuration or any tensor
// length is inconsistent, so a bad call fails loudly instead of reading
// past a slice or silently using the wrong layout.
func check(c geom.Conv, x, w, b []float32) {
	if c.Batch < 0 || c.InChannels <= 0 || c.OutChannels <= 0 || c.Groups <= 0 {
		panic(fmt.Sprintf("ref: bad sizes: batch %d, in %d, out %d, groups %d",
			c.Batch, c.InChannels, c.OutChannels, c.Groups))
	}
	if c.InChannels%c.Groups != 0 || c.OutChannels%c.Groups != 0 {
		panic(fmt.Sprintf("ref: channels %d/%d not divisible by groups %d",
			c.InChannels, c.OutChannels, c.Groups))
	}
	o := c.Out()
	for i := range 3 {
		if c.In[i] <= 0 || c.Kernel[i] <= 0 || c.Stride[i] <= 0 || c.Dilation[i] <= 0 ||
			c.Padding[i] < 0 || c.OutputPadding[i] < 0 {
			panic(fmt.Sprintf("ref: bad geometry in dim %d: %+v", i, c))
		}
		if o[i] <= 0 {
			panic(fmt.Sprintf("ref: output size %v is not positive for %+v", o, c))
		}
	}
	if len(x) != c.InputLen() {
		panic(fmt.Sprintf("ref: input length %d, want %d", len(x), c.InputLen()))
	}
	if len(w) != c.WeightLen() {
		panic(fmt.Sprintf("ref: weight length %d, want %d", len(w), c.WeightLen()))
	}
	switch {
	case c.Bias && len(b) != c.OutChannels:
		panic(fmt.Sprintf("ref: bias length %d, want %d", len(b), c.OutChannels))
	case !c.Bias && len(b) != 0:
		panic(fmt.Sprintf("ref: bias given (length %d) but Conv.Bias is false", len(b)))
	}
}
