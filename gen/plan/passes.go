package plan

import (
	"fmt"
	"slices"
	"strings"

	"convtgen/gen/spec"
)

// The ops around the convolution as passes: each a straight kernel over
// one tensor, written by the template for its kind. Runs of pointwise and
// per-channel ops are one pass, and the pointwise ops right after a pass
// that writes a tensor of its own (a norm, a reduction, a pool) are
// applied by that pass before it writes, so they cost no launch and no
// round trip through memory. A norm whose segment is one short contiguous
// row runs whole in one kernel (rownorm); a longer segment's statistics
// are partial sums of blocks (stats) that the normalising pass turns into
// each segment's scale and shift once per block (normalise). Sums are
// double precision: a normalisation divides by a spread that can be far
// smaller than the values it was computed from. (A row kernel adds each
// thread's few values in float, relative to one of them or to the mean,
// so that their error is relative to the spread, and the threads' shares
// in double.)

// Pass is one kernel launch of the chain.
type Pass struct {
	Kind string // pointwise, stats, normalise, rownorm, channel, reduce, pool, depthsum
	Name string // the kernel's name
	// In and Out are the shapes read and written, always (N, C, D, H, W)
	// (a reduced axis has size 1).
	In, Out [5]int
	InLen   int
	OutLen  int
	// Wide: the pass's element offsets need 64 bits (a tensor it reads or
	// writes has close to 2^31 elements or more); else they are ints.
	Wide bool
	// Threads and Blocks are the launch: threads a block, blocks.
	Threads, Blocks int

	// Ops are the pointwise ops applied to each value the pass writes, in
	// order: a pointwise pass's own; for the others (but stats, which
	// writes no tensor), the ops right after them in the chain.
	Ops []PointOp
	// Norm (normalise, rownorm) is the norm the pass applies before Ops.
	Norm PointOp

	// stats and rownorm: the segments (see Segments) and what is computed
	// of each: moments (the sums of x and x*x; a rownorm: the mean, then
	// the sum of squared deviations from it) or softmax (the maximum and
	// the sum of exp(x - max)).
	Seg  Segments
	Stat string
	Slot int // stats: the partials slot it fills

	Reduce string // channel: softmax, logsumexp, sum, max; reduce and depthsum: mean, sum, max (depthsum: mean, sum)
	Axes   [5]bool

	Window, Stride, Pad [3]int // pool
	Max                 bool   // pool: max (else average)

	Point PointLayout // pointwise, normalise
	Row   RowLayout   // rownorm
	Part  PartLayout  // stats
	// Hold (channel): a position's channels are read once into registers
	// (at most MaxHeldChannels of them), not once for each step.
	Hold bool
	// Fold (normalise): the norm's weight and bias are its segment's (a
	// BatchNorm: a segment is a channel), so they are folded into the
	// segment's scale and shift.
	Fold bool
	// Sums (depthsum): the depth taps whose input ranges the pass sums,
	// an output channel each (DepthFold), and the problem's output depth
	// OutDepth, which divides them.
	Sums     []DepthTap
	OutDepth int
	// Run (reduce): the reduced axes are the trailing ones, so each output
	// is the sum of a contiguous run of Run elements, which a block reads
	// coalesced (0: a thread an output, looping over its inputs).
	Run int
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

// Contiguous tells whether segment s is the elements s*L to s*L+L-1 (L
// its elements): rows one after another.
func (g Segments) Contiguous() bool {
	l := g.Elements()
	if g.Runs > 1 && g.RunStride != g.RunLen {
		return false
	}
	if g.Count > 1 && g.Inner > 1 && g.RunLen != l {
		return false
	}
	return g.Count <= g.Inner || g.Outer == g.Inner*l
}

// MaxRow is the longest contiguous segment a rownorm pass holds in
// registers: 16 values a thread, 128 threads a row.
const MaxRow = 2048

// MaxHeldChannels is the most channels a channel pass holds in registers.
const MaxHeldChannels = 64

// passThreads are the threads of a block of every pass but a reduce's
// short runs and the BatchNorm updates.
const passThreads = 256

// PointLayout is how a pointwise or normalise pass covers its elements:
// each thread takes Iters vectors of Vec consecutive elements, Threads*Vec
// elements apart; a block PerBlock elements.
type PointLayout struct {
	Vec      int  // 4 (float4 loads and stores) where the length is a multiple of 4, else 1
	Iters    int  // vectors a thread handles
	PerBlock int  // Threads*Vec*Iters
	Ragged   bool // the length is not a multiple of PerBlock: vectors past the end are skipped
	// VecChannel: the elements of a vector share one channel (D*H*W is a
	// multiple of Vec), computed once a vector.
	VecChannel bool
	// normalise: VecSeg, the elements of a vector share one segment (Div
	// is a multiple of Vec); Segs, the most segments one block's elements
	// reach, whose scale and shift the block computes first (its shared
	// arrays).
	VecSeg bool
	Segs   int
}

// RowLayout is how a rownorm pass holds its rows: Lanes threads a row,
// each holding Chunks vectors of Vec consecutive elements, Lanes*Vec
// elements apart, so that a warp's loads are whole sectors.
type RowLayout struct {
	Len    int // elements a row
	Vec    int // 4, 2 or 1: the largest that divides Len
	Lanes  int // threads a row, a power of two; past 32, whole warps that add their sums in shared memory
	Chunks int // vectors a thread holds
	Rows   int // rows a block
	// Ragged: Lanes*Vec*Chunks passes Len, so the last chunk's lanes past
	// the row's end hold nothing; RowGuard: the row count is not a
	// multiple of Rows, so the last block's rows past the end hold nothing.
	Ragged, RowGuard bool
	// RowChannel: a row lies in one channel (D*H*W is a multiple of Len),
	// whose index is computed once a row.
	RowChannel bool
}

// Values is the elements a thread holds.
func (r RowLayout) Values() int { return r.Vec * r.Chunks }

// Warps is the warps of one row (0 when a row is part of a warp).
func (r RowLayout) Warps() int { return r.Lanes / 32 }

// PartLayout is how a stats pass splits its segments among blocks: each
// run of a segment into Pieces pieces of PieceLen elements (the last of a
// run shorter), a block each, writing one partial result; a segment has
// Parts of them, in order, at partial index s*Parts + r*Pieces + piece.
type PartLayout struct {
	Pieces   int
	PieceLen int // a multiple of Vec
	Parts    int // Seg.Runs * Pieces
	Vec      int // 4 (float4 loads) where every run and piece starts at a multiple of 4, else 1
}

// partBlocks is about 4 blocks an SM of the 132 of an H200: a stats pass
// splits runs until it has that many, keeping at least partMin elements
// a block.
const (
	partBlocks = 528
	partMin    = 16384
)

// normaliseBlock is about how many elements a block of a normalise pass
// covers, so that computing its segments' scale and shift from the
// partial sums is a small part of its work.
const normaliseBlock = 4096

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
	// norm: (x - mean) * rstd * weight + bias over segments Seg (the
	// element's segment decoded from its index), from the partial sums in
	// stats slot Slot (a normalise pass) or the row in registers (a
	// rownorm pass, Slot -1); weight and bias per channel (or per
	// last-axis position with LastAxis), args Weight and Bias (-1: none).
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
// from stats slot Slot (Parts partial sums a channel, Count elements a
// channel), momentum, into extras Mean, Var and Batches (running_mean,
// running_var, num_batches_tracked).
type BNUpdate struct {
	Name               string
	Slot, Channels     int
	Parts              int
	Count              int
	Momentum           float64
	Mean, Var, Batches int
	BatchesInc         bool
}

// Chain is the model's ops as passes.
type Chain struct {
	Prologue []Pass
	// FoldWeight re-lays the weight for a depth fold (DepthFold; its
	// depthsum pass ends Prologue), nil without one.
	FoldWeight *WeightFold
	Passes     []Pass
	Updates    []BNUpdate
	Extras     []Extra
	// Slots are the stats passes' partial results, in doubles (two a
	// part); a forward allocates them only when there are any, and every
	// double of them is written before it is read (nothing is zeroed).
	Slots    []int
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
	tritonPassKinds = []string{"pointwise", "stats", "normalise", "channel", "reduce", "pool", "rownorm"}
	tritonPointOps  = []string{"add", "sub", "mul", "div", "clamp", "relu", "gelu", "sigmoid", "tanh", "swish", "hardswish",
		"mul_hardswish", "leaky_relu", "sigmoid_gate"}
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
		if p.Kind != "pointwise" && slices.ContainsFunc(p.Ops, func(op PointOp) bool { return op.Conv }) {
			return fmt.Sprintf("no Triton kernel for a %s step whose ops after it read the convolution's output", p.Kind)
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
func planChain(s *spec.Spec, out [3]int, kernel string, fold *DepthFold) (*Chain, []PointOp, []StoreExtra, error) {
	c, err := layChain(s, out, fold)
	if err != nil {
		return nil, nil, nil, err
	}
	ops, extras := c.fuse()
	c.name(kernel)
	if fold != nil {
		w := fold.weightFold(kernel)
		c.FoldWeight = &w
	}
	return c, ops, extras, nil
}

func layChain(s *spec.Spec, out [3]int, fold *DepthFold) (*Chain, error) {
	r := &s.Reference
	if len(r.Forward) == 0 && len(r.Prologue) == 0 {
		return &Chain{}, nil
	}
	p := s.Problem
	b := &chainBuilder{r: r, c: &Chain{}, open: -1}
	// The forward's input: as the reference's inputs give it (a spec
	// refused elsewhere, planned for its kernel errors, may have none).
	shape := [5]int{p.Batch, p.InChannels, p.In[0], p.In[1], p.In[2]}
	if len(r.Inputs) > 0 && len(r.Inputs[0].Shape) == 5 {
		in := r.Inputs[0].Shape
		shape = [5]int{in[0], in[1], in[2], in[3], in[4]}
	}
	for _, op := range r.Prologue {
		l := r.Layer(op.Attr)
		shape = b.pool(l, shape)
	}
	forward, squeeze := r.Forward, -1
	if fold != nil {
		// The depth mean or sum runs before the convolution, as its sums;
		// a sum is the output depth times the mean.
		b.push(fold.pass(shape))
		forward = forward[1:]
		if fold.Op == "sum" {
			forward = append([]spec.Op{{Name: "mul", Operand: spec.Operand{Num: float64(fold.OutDepth())}}}, forward...)
		}
		if !r.Forward[0].Keepdim {
			squeeze = 2
		}
	}
	b.c.Prologue, b.passes, b.open = b.passes, nil, -1
	shape = [5]int{p.Batch, p.OutChannels, out[0], out[1], out[2]}
	final := shape[:]
	for _, op := range forward {
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
	for _, ps := range [][]Pass{b.c.Prologue, b.c.Passes} {
		for i := range ps {
			ps[i].layout()
		}
	}
	return b.c, nil
}

type chainBuilder struct {
	r      *spec.Reference
	c      *Chain
	passes []Pass
	// open is the pass the next pointwise op joins (-1: it opens a
	// pointwise pass): the last pass, unless it writes nothing (stats).
	open int
	err  error
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

// push appends a pass; the pointwise ops after it join it, unless it is
// a stats pass (whose statistics the normalising pass after it reads).
func (b *chainBuilder) push(p Pass) {
	p.InLen, p.OutLen = numel(p.In), numel(p.Out)
	b.passes = append(b.passes, p)
	b.open = len(b.passes) - 1
	if p.Kind == "stats" {
		b.open = -1
	}
}

// point adds a pointwise op to the open pass (opening a pointwise one).
func (b *chainBuilder) point(op PointOp, shape [5]int) {
	if b.open < 0 {
		b.push(Pass{Kind: "pointwise", In: shape, Out: shape})
	}
	b.passes[b.open].Ops = append(b.passes[b.open].Ops, op)
}

// norm plans a norm over segments g of x: one rownorm pass where a
// segment is a short contiguous row (and no BatchNorm update reads its
// statistics), else a stats pass and a normalise pass that reads its
// partial sums. It returns the stats slot (-1 for a rownorm) and the
// partial sums a segment.
func (b *chainBuilder) norm(op PointOp, g Segments, stat string, x [5]int, update bool) (slot, parts int) {
	op.Kind, op.Arg, op.Seg, op.Slot = "norm", -1, g, -1
	if !update && g.Contiguous() && g.Elements() <= MaxRow {
		b.push(Pass{Kind: "rownorm", In: x, Out: x, Seg: g, Stat: stat, Norm: op})
		return -1, 0
	}
	part := partLayout(g)
	b.c.Slots = append(b.c.Slots, 2*g.Count*part.Parts)
	slot = len(b.c.Slots) - 1
	b.push(Pass{Kind: "stats", In: x, Out: x, Seg: g, Stat: stat, Slot: slot, Part: part})
	op.Slot = slot
	b.push(Pass{Kind: "normalise", In: x, Out: x, Seg: g, Stat: stat, Norm: op})
	return slot, part.Parts
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
		if op.Conv && !(len(b.passes) == 0 || len(b.passes) == 1 && b.open == 0 && b.passes[0].Kind == "pointwise") {
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
		b.norm(PointOp{Softmax: true, Weight: -1, Bias: -1}, perChannel(x), "softmax", x, false)
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
		b.norm(PointOp{SubMean: true, Weight: -1, Bias: -1}, perChannel(x), "moments", x, false)
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
		w, bias := b.extra(self+".weight", x[1]), b.extra(self+".bias", x[1])
		slot, parts := b.norm(PointOp{Eps: num(l.Built["eps"]), Weight: w, Bias: bias}, g, "moments", x, true)
		b.c.Updates = append(b.c.Updates, BNUpdate{Slot: slot, Channels: x[1], Parts: parts, Count: g.Elements(), Momentum: num(l.Built["momentum"]),
			Mean: b.extra(self+".running_mean", x[1]), Var: b.extra(self+".running_var", x[1]), Batches: b.extra(self+".num_batches_tracked", 1)})
	case "GroupNorm":
		groups := l.Built["num_groups"].Int
		cg := x[1] / groups
		g := Segments{Count: x[0] * groups, Inner: 1, Outer: cg * dhw, RunLen: cg * dhw, Runs: 1, RunStride: cg * dhw, Div: cg * dhw}
		w, bias := b.extra(self+".weight", x[1]), b.extra(self+".bias", x[1])
		b.norm(PointOp{Eps: num(l.Built["eps"]), Weight: w, Bias: bias}, g, "moments", x, false)
	case "LayerNorm":
		g := Segments{Count: numel(x) / x[4], Inner: 1, Outer: x[4], RunLen: x[4], Runs: 1, RunStride: x[4], Div: x[4]}
		w, bias := b.extra(self+".weight", x[4]), b.extra(self+".bias", x[4])
		b.norm(PointOp{Eps: num(l.Built["eps"]), Weight: w, Bias: bias, LastAxis: true}, g, "moments", x, false)
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

// partLayout splits segments g among the blocks of a stats pass: runs
// into pieces until there are about partBlocks blocks, none under
// partMin elements.
func partLayout(g Segments) PartLayout {
	l := PartLayout{Vec: 1}
	if g.RunLen%4 == 0 && g.RunStride%4 == 0 && g.Outer%4 == 0 {
		l.Vec = 4
	}
	pieces := max(1, min(ceilDiv(partBlocks, g.Count*g.Runs), g.RunLen/partMin))
	l.PieceLen = ceilDiv(ceilDiv(g.RunLen, pieces), l.Vec) * l.Vec
	l.Pieces = ceilDiv(g.RunLen, l.PieceLen)
	l.Parts = g.Runs * l.Pieces
	return l
}

// rowLayout holds rows of n elements: about 16 values a thread (fewer
// threads a row means fewer shuffles to add its sums), Lanes a power of
// two, at most 128 of them (n is at most MaxRow).
func rowLayout(n, rows, dhw int) RowLayout {
	l := RowLayout{Len: n, Vec: 1}
	for _, v := range []int{4, 2} {
		if n%v == 0 {
			l.Vec = v
			break
		}
	}
	l.Lanes = 1
	for l.Lanes*16 < n {
		l.Lanes *= 2
	}
	l.Chunks = ceilDiv(n, l.Lanes*l.Vec)
	l.Rows = passThreads / l.Lanes
	l.Ragged = l.Lanes*l.Vec*l.Chunks != n
	l.RowGuard = rows%l.Rows != 0
	l.RowChannel = dhw%n == 0
	return l
}

// pointLayout covers n elements by vectors of 4 where n allows; a
// normalise pass (norm) takes about normaliseBlock elements a block.
func pointLayout(n, dhw int, norm *PointOp) PointLayout {
	l := PointLayout{Vec: 1, Iters: 1}
	if n%4 == 0 {
		l.Vec = 4
	}
	if norm != nil {
		l.Iters = max(1, min(normaliseBlock/(passThreads*l.Vec), ceilDiv(n, passThreads*l.Vec)))
	}
	l.PerBlock = passThreads * l.Vec * l.Iters
	l.Ragged = n%l.PerBlock != 0
	l.VecChannel = dhw%l.Vec == 0
	if norm != nil {
		l.VecSeg = norm.Seg.Div%l.Vec == 0
		// A block's elements [lo, lo+PerBlock) reach segments lo/Div to
		// (lo+PerBlock-1)/Div.
		l.Segs = (l.PerBlock-1)/norm.Seg.Div + 2
	}
	return l
}

// wideSlack is more than any pass's index runs past its tensors (a
// block's elements or rows past the end): offsets are ints while the
// tensors' lengths plus it fit.
const wideSlack = 1 << 20

// layout decides how the pass's kernel covers its tensor: threads,
// blocks, vectors, and whether its offsets need 64 bits.
func (p *Pass) layout() {
	p.Wide = max(p.InLen, p.OutLen)+wideSlack > maxInt32
	p.Threads = passThreads
	dhw := p.Out[2] * p.Out[3] * p.Out[4]
	switch p.Kind {
	case "pointwise":
		p.Point = pointLayout(p.OutLen, dhw, nil)
		p.Blocks = ceilDiv(p.OutLen, p.Point.PerBlock)
	case "normalise":
		p.Point = pointLayout(p.OutLen, dhw, &p.Norm)
		g := p.Seg
		p.Fold = (p.Norm.Weight >= 0 || p.Norm.Bias >= 0) && !p.Norm.LastAxis && g.Div == dhw && (g.Mod == p.Out[1] || g.Mod == 0 && g.Count == p.Out[1])
		p.Blocks = ceilDiv(p.OutLen, p.Point.PerBlock)
	case "stats":
		p.Blocks = p.Seg.Count * p.Part.Parts
	case "rownorm":
		p.Row = rowLayout(p.Seg.Elements(), p.Seg.Count, dhw)
		p.Blocks = ceilDiv(p.Seg.Count, p.Row.Rows)
	case "channel":
		p.Hold = (p.Reduce == "softmax" || p.Reduce == "logsumexp") && p.In[1] <= MaxHeldChannels
		p.Blocks = ceilDiv(p.In[0]*p.In[2]*p.In[3]*p.In[4], p.Threads)
	case "depthsum":
		p.Blocks = ceilDiv(p.In[0]*p.In[1]*p.In[3]*p.In[4], p.Threads)
	case "reduce":
		if p.Run = trailingRun(p.In, p.Axes); p.Run > 0 {
			// A block a run: a warp for short runs, up to 256 threads,
			// at least 8 elements a thread.
			p.Threads = 32
			for p.Threads < passThreads && p.Threads*8 < p.Run {
				p.Threads *= 2
			}
			p.Blocks = p.OutLen
			return
		}
		p.Blocks = ceilDiv(p.OutLen, p.Threads)
	default:
		p.Blocks = ceilDiv(p.OutLen, p.Threads)
	}
}

// trailingRun is the elements each output of a reduction of axes of in
// sums when the reduced axes are the last ones (each output's inputs
// then lie in one contiguous run), else 0.
func trailingRun(in [5]int, axes [5]bool) int {
	first := 5
	for first > 0 && axes[first-1] {
		first--
	}
	if first == 5 || slices.Contains(axes[:first], true) {
		return 0
	}
	run := 1
	for _, v := range in[first:] {
		run *= v
	}
	return run
}
