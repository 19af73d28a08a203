package plan

import (
	"fmt"
	"slices"
	"strings"

	"convtgen/gen/spec"
)

// The ops around the convolution as passes: each a straight kernel over
// one tensor, written by the template for its kind. Runs of pointwise and
// per-channel ops are one pass; reductions (statistics of a norm, a
// softmax's maximum and sum, pools, means) are their own passes whose
// results the next pointwise pass reads. Sums are double precision: a
// normalisation divides by a spread that can be far smaller than the
// values it was computed from.

// Pass is one kernel launch of the chain.
type Pass struct {
	Kind string // pointwise, stats, channel, reduce, pool
	Name string // the kernel's name
	// In and Out are the shapes read and written, always (N, C, D, H, W)
	// (a reduced axis has size 1).
	In, Out [5]int
	InLen   int
	OutLen  int
	InPlace bool // Out overwrites In (pointwise, the shapes equal)

	Ops []PointOp // pointwise

	// stats: per segment (see Segments) the double sums of x and x*x
	// (Moments) or the maximum then the sum of exp(x - max) (SoftMax).
	Seg   Segments
	Stat  string // moments or softmax
	Slot  int    // the stats buffer it fills
	Large bool   // a block per segment part with atomics (else a thread per segment)
	Split int    // Large: blocks per segment

	Reduce string // channel: softmax, logsumexp, sum, max; reduce: mean, sum, max
	Axes   [5]bool

	Window, Stride, Pad [3]int // pool
	Max                 bool   // pool: max (else average)
}

// Segments are the groups a stats pass sums over: segment s is Runs runs
// of RunLen contiguous elements, run r starting at
// (s / Inner) * Outer + (s % Inner) * RunLen + r * RunStride.
// An element at flat index i belongs to segment (i / Div) % Mod (Mod 0:
// no modulus).
type Segments struct {
	Count, Inner, Outer, RunLen, Runs, RunStride int
	Div, Mod                                     int
}

// Elements is the number of elements in a segment.
func (g Segments) Elements() int { return g.RunLen * g.Runs }

// PointOp is one pointwise op. Operands: a number (Num), a tensor
// argument (Arg: extras index) read per channel, as a scalar or per
// element, or the convolution's output (Conv).
type PointOp struct {
	Kind        string // add, sub, mul, div, clamp, relu, ..., norm, bn_update
	Num         float64
	Arg         int  // extras index of a tensor operand, -1 for none
	PerChannel  bool // Arg holds one value per channel (else one, or per element with Elementwise)
	Elementwise bool
	Conv        bool
	Min, Max    *float64 // clamp
	Slope       float64
	Shift, Div  float64
	// norm: (x - mean) * rstd * weight + bias from stats slot Slot over
	// segments Seg (the element's segment decoded from its index);
	// weight and bias per channel (or per last-axis position with
	// LastAxis), args Weight and Bias (-1: none).
	Slot         int
	Seg          Segments
	Eps          float64
	Weight, Bias int
	LastAxis     bool
	Softmax      bool // the slot holds (max, sum of exp): x -> exp(x - max) / sum
	SubMean      bool // x - mean only
}

// Extra is a tensor the submission's forward passes to the host function
// besides the input, the weight and the bias: a Python expression on self
// (or an input), in order.
type Extra struct {
	Expr string
	Len  int // its elements
}

// Int64 tells whether the extra is an int64 tensor (a BatchNorm's
// num_batches_tracked); the others are float32.
func (e Extra) Int64() bool { return strings.HasSuffix(e.Expr, ".num_batches_tracked") }

// BNUpdate is a training-mode BatchNorm's running statistics update:
// from stats slot Slot (Count elements a channel), momentum, into extras
// Mean, Var and Batches (running_mean, running_var, num_batches_tracked).
type BNUpdate struct {
	Name               string
	Slot, Channels     int
	Count              int
	Momentum           float64
	Mean, Var, Batches int
	BatchesInc         bool
}

// Chain is the model's ops as passes.
type Chain struct {
	Prologue []Pass
	Passes   []Pass
	Updates  []BNUpdate
	Extras   []Extra
	Slots    []int // stats buffer sizes, in doubles
	Final    []int // forward's output shape
	ConvKept bool  // the convolution's output is read after the first pass
	// Fused: the leading pointwise pass runs in the convolution's store
	// (Epilogue.Ops), so Passes start after it.
	Fused bool
}

// Any tells whether the model runs ops besides the convolution.
func (c *Chain) Any() bool { return c != nil && (len(c.Passes) > 0 || len(c.Prologue) > 0 || c.Fused) }

// fuse takes the first pass out of the chain when it is pointwise and
// none of its ops needs statistics (a norm keeps its pass): the store
// applies its ops, so the convolution's output crosses memory once less.
// Besides numbers and the convolution's own value, the store reads the
// ops' tensors: a per-channel one at the output's channel, a 0-dim one,
// and a second input of the output's shape at the output's own index. It
// takes at most MaxStoreExtras of them (each a kernel parameter and, per
// channel, a register for each channel a thread stores); a pass that
// reads more keeps its kernel. It returns the ops and the tensors they
// read.
func (c *Chain) fuse() ([]PointOp, []StoreExtra) {
	if len(c.Passes) == 0 || c.Passes[0].Kind != "pointwise" {
		return nil, nil
	}
	var extras []StoreExtra
	for _, op := range c.Passes[0].Ops {
		if op.Kind == "norm" {
			return nil, nil
		}
		if op.Arg < 0 || slices.ContainsFunc(extras, func(e StoreExtra) bool { return e.Arg == op.Arg }) {
			continue
		}
		read := StoreScalar
		switch {
		case op.PerChannel:
			read = StoreChannel
		case op.Elementwise:
			read = StoreElement
		}
		extras = append(extras, StoreExtra{Arg: op.Arg, Read: read})
	}
	if len(extras) > MaxStoreExtras {
		return nil, nil
	}
	slices.SortFunc(extras, func(a, b StoreExtra) int { return a.Arg - b.Arg })
	ops := c.Passes[0].Ops
	c.Passes, c.Fused = c.Passes[1:], true
	return ops, extras
}

// The forms the Triton backend has kernels for (gen/triton_chain.go, one
// per pass kind; a pointwise op is a statement in a pointwise pass or in
// the convolution's store): a chain with any other is not expressed in
// Triton (TritonRefusal).
var (
	tritonPassKinds = []string{"pointwise", "stats", "channel", "reduce", "pool"}
	tritonPointOps  = []string{"add", "sub", "mul", "div", "clamp", "relu", "gelu", "sigmoid", "tanh", "swish", "hardswish",
		"mul_hardswish", "leaky_relu", "sigmoid_gate", "norm"}
)

// TritonMaxLen bounds the tensors of the Triton chain kernels: they index
// in 32 bits, a program's block past the last element included (4096 is
// the largest block).
const TritonMaxLen = 1<<31 - 1 - 4096

// TritonRefusal says what of the chain (with the ops fused into the
// convolution's store) the Triton backend has no kernel for, or "" when it
// expresses all of it.
func (c *Chain) TritonRefusal(fused []PointOp) string {
	ops := slices.Clone(fused)
	for _, p := range append(slices.Clone(c.Prologue), c.Passes...) {
		if !slices.Contains(tritonPassKinds, p.Kind) {
			return fmt.Sprintf("no Triton kernel for a %s step", p.Kind)
		}
		if n := max(p.InLen, p.OutLen); n > TritonMaxLen {
			return fmt.Sprintf("a %s step over %d elements: the Triton kernels after the convolution index in 32 bits, at most %d", p.Kind, n, TritonMaxLen)
		}
		ops = append(ops, p.Ops...)
	}
	stats := 0
	for _, n := range c.Slots {
		stats += n
	}
	if stats > TritonMaxLen {
		return fmt.Sprintf("statistics of %d float64: the Triton kernels index them in 32 bits, at most %d", stats, TritonMaxLen)
	}
	for _, op := range ops {
		if !slices.Contains(tritonPointOps, op.Kind) {
			return fmt.Sprintf("no Triton statement for the pointwise op %s", op.Kind)
		}
	}
	return ""
}

// MaxStoreExtras is the most tensors the convolution's store reads for
// the ops it applies.
const MaxStoreExtras = 4

// StoreExtra is a tensor the fused ops read in the convolution's store:
// Chain.Extras index Arg, read as Read says.
type StoreExtra struct {
	Arg  int
	Read string // StoreChannel, StoreScalar or StoreElement
}

// How the store reads a fused op's tensor: at the output's channel, its
// one value (a 0-dim parameter), or at the output's own flat index (a
// second input of the output's shape).
const (
	StoreChannel = "channel"
	StoreScalar  = "scalar"
	StoreElement = "element"
)

// name names the passes and updates after the kernel.
func (c *Chain) name(kernel string) {
	for i := range c.Passes {
		c.Passes[i].Name = fmt.Sprintf("%s_epi%d", kernel, i)
	}
	for i := range c.Prologue {
		c.Prologue[i].Name = fmt.Sprintf("%s_pro%d", kernel, i)
	}
	for i := range c.Updates {
		c.Updates[i].Name = fmt.Sprintf("%s_bn%d", kernel, i)
	}
}

// planChain lays out the passes of a spec's prologue and forward and
// returns the ops fused into the convolution's store and the tensors
// they read.
func planChain(s *spec.Spec, out [3]int, kernel string) (*Chain, []PointOp, []StoreExtra, error) {
	c, err := layChain(s, out)
	if err != nil {
		return nil, nil, nil, err
	}
	ops, extras := c.fuse()
	c.name(kernel)
	return c, ops, extras, nil
}

func layChain(s *spec.Spec, out [3]int) (*Chain, error) {
	r := &s.Reference
	if len(r.Forward) == 0 && len(r.Prologue) == 0 {
		return &Chain{}, nil
	}
	p := s.Problem
	b := &chainBuilder{r: r, c: &Chain{}}
	in := r.Inputs[0].Shape
	shape := [5]int{in[0], in[1], in[2], in[3], in[4]}
	for _, op := range r.Prologue {
		l := r.Layer(op.Attr)
		shape = b.pool(l, shape)
	}
	b.c.Prologue, b.passes = b.passes, nil
	shape = [5]int{p.Batch, p.OutChannels, out[0], out[1], out[2]}
	final := shape[:]
	squeeze := -1
	for _, op := range r.Forward {
		var err error
		shape, err = b.op(op, shape)
		if err != nil {
			return nil, err
		}
		if (op.Name == "max" || op.Name == "logsumexp" || op.Name == "mean" || op.Name == "sum") && !op.Keepdim {
			if squeeze >= 0 || len(op.Dims) != 1 {
				return nil, fmt.Errorf("one reduction without keepdim, of one axis, is planned")
			}
			squeeze = op.Dims[0]
		}
	}
	b.flush()
	if b.err != nil {
		return nil, b.err
	}
	final = nil
	for k, v := range shape {
		if k != squeeze {
			final = append(final, v)
		}
	}
	b.c.Passes, b.c.Final = b.passes, final
	return b.c, nil
}

type chainBuilder struct {
	r      *spec.Reference
	c      *Chain
	passes []Pass
	cur    *Pass // the open pointwise pass
	err    error
}

func numel(s [5]int) int { return s[0] * s[1] * s[2] * s[3] * s[4] }

func (b *chainBuilder) extra(expr string, n int) int {
	for i, e := range b.c.Extras {
		if e.Expr == expr {
			return i
		}
	}
	b.c.Extras = append(b.c.Extras, Extra{Expr: expr, Len: n})
	return len(b.c.Extras) - 1
}

func (b *chainBuilder) flush() {
	if b.cur != nil {
		b.passes = append(b.passes, *b.cur)
		b.cur = nil
	}
}

func (b *chainBuilder) push(p Pass) {
	b.flush()
	p.InLen, p.OutLen = numel(p.In), numel(p.Out)
	b.passes = append(b.passes, p)
}

// point adds a pointwise op to the open pass (opening one).
func (b *chainBuilder) point(op PointOp, shape [5]int) {
	if b.cur == nil {
		b.cur = &Pass{Kind: "pointwise", In: shape, Out: shape, InLen: numel(shape), OutLen: numel(shape), InPlace: true}
	}
	b.cur.Ops = append(b.cur.Ops, op)
}

func (b *chainBuilder) slot(n int) int {
	b.c.Slots = append(b.c.Slots, n)
	return len(b.c.Slots) - 1
}

// stats plans a stats pass over segments and returns its slot.
func (b *chainBuilder) stats(g Segments, kind string, shape [5]int) int {
	slot := b.slot(2 * g.Count)
	p := Pass{Kind: "stats", In: shape, Out: shape, Seg: g, Stat: kind, Slot: slot}
	if kind == "softmax" {
		p.Large, p.Split = true, 1 // a block per segment: its maximum, then its sum
	} else if g.Elements() > 4096 {
		p.Large = true
		// About 4 blocks an SM of the 132 of an H200, at least 16 Ki
		// elements a block.
		p.Split = max(1, min(528/max(1, g.Count)+1, g.Elements()/16384))
	}
	b.push(p)
	return slot
}

func (b *chainBuilder) operand(o spec.Operand, shape [5]int) (PointOp, error) {
	op := PointOp{Arg: -1, Weight: -1, Bias: -1}
	switch {
	case o.Name == "":
		op.Num = o.Num
	case o.Name == "conv":
		op.Conv = true
		b.c.ConvKept = true
	default:
		if l := b.r.Layer(o.Name); l != nil {
			if l.Kind == "value" {
				op.Num = l.Num
				break
			}
			n := 1
			for _, d := range l.Dims {
				n *= d
			}
			op.Arg = b.extra("self."+o.Name, n)
			op.PerChannel = n > 1
			if n > 1 && n != shape[1] {
				return op, fmt.Errorf("operand %s: %d values for %d channels", o.Name, n, shape[1])
			}
			break
		}
		for _, in := range b.r.Inputs[1:] {
			if in.Name == o.Name {
				op.Arg = b.extra(in.Name, numel(shape))
				op.Elementwise = true
			}
		}
		if op.Arg < 0 {
			return op, fmt.Errorf("operand %s is neither a layer nor an input", o.Name)
		}
	}
	return op, nil
}

func (b *chainBuilder) op(o spec.Op, x [5]int) ([5]int, error) {
	switch o.Name {
	case "add", "sub", "mul", "div":
		op, err := b.operand(o.Operand, x)
		if err != nil {
			return x, err
		}
		if op.Conv && len(b.passes) > 0 {
			return x, fmt.Errorf("the convolution's output is read after a reduction")
		}
		op.Kind = o.Name
		b.point(op, x)
	case "clamp":
		op := PointOp{Kind: "clamp", Arg: -1}
		for i, bound := range []*spec.Operand{o.Min, o.Max} {
			if bound == nil {
				continue
			}
			v := bound.Num
			if bound.Name != "" {
				v = b.r.Layer(bound.Name).Num
			}
			if i == 0 {
				op.Min = &v
			} else {
				op.Max = &v
			}
		}
		b.point(op, x)
	case "relu", "gelu", "sigmoid", "tanh", "swish", "hardswish", "mul_hardswish":
		b.point(PointOp{Kind: o.Name, Arg: -1}, x)
	case "leaky_relu":
		b.point(PointOp{Kind: "leaky_relu", Arg: -1, Slope: o.Slope}, x)
	case "sigmoid_gate":
		b.point(PointOp{Kind: "sigmoid_gate", Arg: -1, Shift: o.Shift, Div: o.Divisor}, x)
	case "softmax":
		if len(o.Dims) == 1 && o.Dims[0] == 1 {
			b.push(Pass{Kind: "channel", Reduce: "softmax", In: x, Out: x})
			return x, nil
		}
		if len(o.Dims) == 1 {
			return x, fmt.Errorf("softmax over axis %d is not planned", o.Dims[0])
		}
		g := perChannel(x)
		slot := b.stats(g, "softmax", x)
		b.point(PointOp{Kind: "norm", Arg: -1, Slot: slot, Seg: g, Softmax: true, Weight: -1, Bias: -1}, x)
	case "logsumexp", "sum", "max", "mean":
		out := x
		for _, d := range o.Dims {
			out[d] = 1
		}
		if slices.Equal(o.Dims, []int{1}) && o.Name != "mean" {
			b.push(Pass{Kind: "channel", Reduce: o.Name, In: x, Out: out})
			return out, nil
		}
		if o.Name == "logsumexp" {
			return x, fmt.Errorf("logsumexp over axes %v is not planned", o.Dims)
		}
		p := Pass{Kind: "reduce", Reduce: o.Name, In: x, Out: out}
		for _, d := range o.Dims {
			p.Axes[d] = true
		}
		b.push(p)
		return out, nil
	case "sub_mean":
		if !slices.Equal(o.Dims, []int{2, 3, 4}) {
			return x, fmt.Errorf("x - mean over %v is not planned (over the spatial axes it is)", o.Dims)
		}
		g := perChannel(x)
		slot := b.stats(g, "moments", x)
		b.point(PointOp{Kind: "norm", Arg: -1, Slot: slot, Seg: g, SubMean: true, Weight: -1, Bias: -1}, x)
	case "apply":
		return b.apply(b.r.Layer(o.Attr), x)
	default:
		return x, fmt.Errorf("op %s is not planned", o.Name)
	}
	return x, nil
}

// perChannel are the segments of one (sample, channel) each.
func perChannel(x [5]int) Segments {
	dhw := x[2] * x[3] * x[4]
	return Segments{Count: x[0] * x[1], Inner: 1, Outer: dhw, RunLen: dhw, Runs: 1, RunStride: dhw, Div: dhw}
}

func num(v spec.Value) float64 {
	f, _ := v.Number()
	return f
}

func (b *chainBuilder) apply(l *spec.Layer, x [5]int) ([5]int, error) {
	dhw := x[2] * x[3] * x[4]
	self := "self." + l.Attr
	switch l.Module {
	case "ReLU":
		b.point(PointOp{Kind: "relu", Arg: -1}, x)
	case "GELU":
		b.point(PointOp{Kind: "gelu", Arg: -1}, x)
	case "Sigmoid":
		b.point(PointOp{Kind: "sigmoid", Arg: -1}, x)
	case "LeakyReLU":
		b.point(PointOp{Kind: "leaky_relu", Arg: -1, Slope: num(l.Built["negative_slope"])}, x)
	case "Softmax":
		b.push(Pass{Kind: "channel", Reduce: "softmax", In: x, Out: x})
	case "BatchNorm3d":
		// Training mode: statistics of the batch per channel (biased
		// variance normalises; the running variance takes the unbiased).
		g := Segments{Count: x[1], Inner: x[1], Outer: 0, RunLen: dhw, Runs: x[0], RunStride: x[1] * dhw, Div: dhw, Mod: x[1]}
		slot := b.stats(g, "moments", x)
		w, bias := b.extra(self+".weight", x[1]), b.extra(self+".bias", x[1])
		b.point(PointOp{Kind: "norm", Arg: -1, Slot: slot, Seg: g, Eps: num(l.Built["eps"]), Weight: w, Bias: bias}, x)
		b.c.Updates = append(b.c.Updates, BNUpdate{Slot: slot, Channels: x[1], Count: g.Elements(), Momentum: num(l.Built["momentum"]),
			Mean: b.extra(self+".running_mean", x[1]), Var: b.extra(self+".running_var", x[1]), Batches: b.extra(self+".num_batches_tracked", 1)})
	case "GroupNorm":
		groups := l.Built["num_groups"].Int
		cg := x[1] / groups
		g := Segments{Count: x[0] * groups, Inner: 1, Outer: cg * dhw, RunLen: cg * dhw, Runs: 1, RunStride: cg * dhw, Div: cg * dhw}
		slot := b.stats(g, "moments", x)
		w, bias := b.extra(self+".weight", x[1]), b.extra(self+".bias", x[1])
		b.point(PointOp{Kind: "norm", Arg: -1, Slot: slot, Seg: g, Eps: num(l.Built["eps"]), Weight: w, Bias: bias}, x)
	case "LayerNorm":
		g := Segments{Count: numel(x) / x[4], Inner: 1, Outer: x[4], RunLen: x[4], Runs: 1, RunStride: x[4], Div: x[4]}
		slot := b.stats(g, "moments", x)
		w, bias := b.extra(self+".weight", x[4]), b.extra(self+".bias", x[4])
		b.point(PointOp{Kind: "norm", Arg: -1, Slot: slot, Seg: g, Eps: num(l.Built["eps"]), Weight: w, Bias: bias, LastAxis: true}, x)
	case "AvgPool3d", "MaxPool3d":
		return b.pool(l, x), nil
	case "AdaptiveAvgPool3d":
		out := [5]int{x[0], x[1], 1, 1, 1}
		b.push(Pass{Kind: "reduce", Reduce: "mean", In: x, Out: out, Axes: [5]bool{2: true, 3: true, 4: true}})
		return out, nil
	default:
		return x, fmt.Errorf("layer nn.%s is not planned", l.Module)
	}
	return x, nil
}

func (b *chainBuilder) pool(l *spec.Layer, x [5]int) [5]int {
	k := triple(l.Built["kernel_size"])
	s := k
	if v, ok := l.Built["stride"]; ok {
		s = triple(v)
	}
	pd := triple(l.Built["padding"])
	out := x
	for i := 0; i < 3; i++ {
		out[2+i] = (x[2+i]+2*pd[i]-k[i])/s[i] + 1
	}
	b.push(Pass{Kind: "pool", In: x, Out: out, Window: k, Stride: s, Pad: pd, Max: l.Module == "MaxPool3d"})
	if l.Module == "AvgPool3d" && pd != [3]int{} {
		b.err = fmt.Errorf("nn.AvgPool3d with padding is not planned (its divisor at the borders)")
	}
	return out
}

func triple(v spec.Value) [3]int {
	if v.Kind == spec.TupleValue && len(v.Tuple) == 3 {
		return [3]int{v.Tuple[0], v.Tuple[1], v.Tuple[2]}
	}
	return [3]int{v.Int, v.Int, v.Int}
}
