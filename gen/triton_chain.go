package gen

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"convtgen/gen/plan"
)

// The Triton text of the ops around the convolution (plan.Chain): one
// @triton.jit kernel per step of the chain, of the step's kind, and the
// statements of the pointwise ops, for a pointwise step or the
// convolution's store; templates/triton_chain.tmpl prints them. Sums are
// float64 where the CUDA kernels use double.

// TritonChainView is what the Triton template prints for the chain.
type TritonChainView struct {
	// Store: the ops the convolution's store applies (nil: it stores its
	// sums as they are).
	Store    *TritonStore
	Prologue []TritonStep
	Steps    []TritonStep
	Updates  []TritonUpdate
	Extras   []TritonExtra
	// Stats: a stats buffer of StatsLen float64: the stats steps' partial
	// results (each stored once), then each normalise step's coefficients.
	Stats    bool
	StatsLen int
	Final    string // the forward's output shape
	Python   string // the list of extras forward passes
	Forward  string // the module function that runs the whole forward
	XShape   string // the forward's input shape (before a prologue)
	// Libdevice: a statement calls triton.language.extra.libdevice.
	Libdevice bool
	Doc       string
}

// TritonExtra is one extra tensor forward hands over, as the forward
// function checks it.
type TritonExtra struct {
	Index int
	Expr  string
	Len   int
	DType string // float32, or int64 for num_batches_tracked
}

// TritonStore is the helper the convolution's store calls on its tile of
// sums: the fused ops' statements on v, the tile (its channels c, its flat
// output indices i and their mask ok where an op reads them), and the
// extras it loads.
type TritonStore struct {
	Name    string
	Code    []string
	Kept    bool // v0, the convolution's value, is read
	Channel bool // c is a parameter
	Index   bool // i and ok are parameters
	Extras  []int
	Params  string // the helper's parameters after v
	Ptrs    string // the conv kernel's extra pointer parameters ("e0_ptr, ")
	Args    string // the wrapper's extra arguments ("e0, ")
	Launch  string // the wrapper's launch arguments for them ("e0, ")
}

// TritonStep is one kernel of the chain: its plan and the numbers and
// statements its kind's block prints.
type TritonStep struct {
	plan.Pass
	Params   string // the kernel's parameters
	Args     string // the launch's tensors
	Grid     int
	Block    int    // elements a program (pointwise, normalise, pool), or a stats program's loads at a time
	OutShape string // the tensor a step that writes a new one allocates

	// pointwise
	Code    []string
	Channel bool // c, the element's channel, is computed
	DHW, C  int
	Kept    bool

	// stats: a program a partial result (plan.PartLayout): Decode, the
	// statements giving its segment s, run r and piece; First, the offset
	// of its piece's first element; PieceN, its elements where pieces are
	// uneven (else PieceLen); PartsAt, the slot's first float64.
	Decode   []string
	First    string
	PieceN   string
	PieceLen int
	PartsAt  int

	// normalise: Coef, the kernel that turns each segment's partial
	// results into its two coefficients first.
	Coef *TritonCoef

	// rownorm: BlockS rows a program.
	BlockS int

	// channel: Sample and Pos are a program's sample and its BLOCK_P
	// positions.
	BlockC, BlockP int
	Sample, Pos    string

	// reduce: Base is the offset of output o's first input element,
	// RedOffset that of reduction element r from it.
	Base, RedOffset string
	R               int
	BlockO, BlockR  int
	Divisor         string

	// pool: Coords are a window element's input d, h and w, Mask its
	// load's mask (bounds only where padding reaches past them).
	Coords [3]string
	Mask   string
	Volume int

	// rownorm: RowLen, a row's elements (BLOCK_L a power of two at least
	// that, BLOCK_S rows a program); Eps; Weight and Bias, the norm's
	// terms after the normalised value (" * tl.load(...)", or empty).
	RowLen, BlockL    int
	Eps, Weight, Bias string

	// After applies the ops after a channel, reduce, pool or rownorm step
	// to its values before they are written (nil: none); OutChannel is
	// output o's (element i's for a rownorm) channel, for the call.
	After      *TritonStore
	OutChannel string
}

// TritonCoef is a normalise step's first kernel: BlockS segments a
// program, each segment's Parts partial results (at PartsAt) combined in
// float64 into two coefficients at CoefAt + 2 s: scale and shift (the
// norm's weight and bias folded in where they are the segment's), the
// mean (x - mean), or the reciprocal of the sum of exp and the maximum
// (softmax).
type TritonCoef struct {
	Name            string
	Count, Parts    int
	Elements        int
	PartsAt, CoefAt int
	Stat            string
	SubMean, Fold   bool
	Eps             string
	Weight, Bias    int // the folded weight's and bias's extras (-1: none)
	Params, Args    string
	BlockS, Grid    int
}

// TritonUpdate is a BatchNorm's running-statistics update.
type TritonUpdate struct {
	plan.BNUpdate
	Offset    int
	CountLess int // Count - 1, the unbiased variance's divisor
	Block     int
	Grid      int
	Args      string
}

// Block sizes of the chain kernels: a pointwise program's elements (8 a
// thread of 4 warps), a pool program's outputs, a tile's elements where a
// program sums a 2-D tile (about 16 float32 a thread, its float64 sums
// beside them), and the longest run of a reduction a tile covers at once.
const (
	tritonPointBlock = 1024
	tritonPoolBlock  = 256
	tritonTile       = 2048
	tritonMaxRun     = 256
	tritonStatsBlock = 1024
	tritonCoefBlock  = 128
	tritonMaxChannel = 64
	tritonUpdBlock   = 1024
)

// pyFloat writes a number as a Python float literal: the float32 value
// CUDA's cFloat bakes in, so that both backends compute with the same
// constants.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return `float("inf")`
	case math.IsInf(f, -1):
		return `float("-inf")`
	}
	s := strconv.FormatFloat(float64(float32(f)), 'g', 9, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// pyDouble writes a number as a Python float literal, all of its float64.
func pyDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', 17, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// tritonOperand is a pointwise op's other side as a Triton expression on
// the element indices i (mask ok) and channels c.
func tritonOperand(op plan.PointOp) string {
	switch {
	case op.Conv:
		return "v0"
	case op.Arg >= 0 && op.PerChannel:
		return fmt.Sprintf("tl.load(e%d_ptr + c)", op.Arg)
	case op.Arg >= 0 && op.Elementwise:
		return fmt.Sprintf("tl.load(e%d_ptr + i, mask=ok, other=0.0)", op.Arg)
	case op.Arg >= 0:
		return fmt.Sprintf("tl.load(e%d_ptr)", op.Arg)
	}
	return pyFloat(op.Num)
}

// tritonOp is op's statements on the float32 block v, in float32 like the
// CUDA statements.
func tritonOp(op plan.PointOp) []string {
	switch op.Kind {
	case "add":
		return []string{"v = v + " + tritonOperand(op)}
	case "sub":
		return []string{"v = v - " + tritonOperand(op)}
	case "mul":
		return []string{"v = v * " + tritonOperand(op)}
	case "div":
		return []string{"v = v / " + tritonOperand(op)}
	case "clamp":
		var out []string
		if op.Min != nil {
			out = append(out, "v = tl.maximum(v, "+pyFloat(*op.Min)+")")
		}
		if op.Max != nil {
			out = append(out, "v = tl.minimum(v, "+pyFloat(*op.Max)+")")
		}
		return out
	case "relu":
		return []string{"v = tl.maximum(v, 0.0)"}
	case "gelu":
		return []string{"v = 0.5 * v * (1.0 + tl.erf(v * 0.70710678118654752))"}
	case "sigmoid":
		return []string{"v = 1.0 / (1.0 + tl.exp(-v))"}
	case "tanh":
		return []string{"v = libdevice.tanh(v)"}
	case "swish":
		return []string{"v = v / (1.0 + tl.exp(-v))"}
	case "hardswish":
		return []string{"v = v * tl.minimum(tl.maximum(v + 3.0, 0.0), 6.0) / 6.0"}
	case "mul_hardswish":
		return []string{"v = v * (v * tl.minimum(tl.maximum(v + 3.0, 0.0), 6.0) / 6.0)"}
	case "leaky_relu":
		return []string{"v = tl.where(v >= 0.0, v, v * " + pyFloat(op.Slope) + ")"}
	case "sigmoid_gate":
		return []string{"v = v * (1.0 / (1.0 + tl.exp(-(v + " + pyFloat(op.Shift) + ")))) / " + pyFloat(op.Div)}
	}
	panic("gen: no Triton statement for the pointwise op " + op.Kind)
}

// normStatements are a normalise step's statements on v from its
// segment's coefficients (TritonCoef) at coefAt in the stats buffer, in
// float64 like the CUDA pass: q, the element's segment; then the
// softmax, x - mean, or x * scale + shift, and where they are not folded
// in, the norm's weight and bias per channel (c) or last-axis position.
func normStatements(q plan.Pass, coefAt int) []string {
	n, g := q.Norm, q.Seg
	seg := fmt.Sprintf("i // %d", g.Div)
	if g.Mod > 0 {
		seg = fmt.Sprintf("(%s) %% %d", seg, g.Mod)
	}
	at := fmt.Sprintf("coef_ptr + %d + 2 * q", coefAt)
	out := []string{"q = " + seg + "  # the element's segment"}
	switch {
	case n.Softmax:
		return append(out, fmt.Sprintf("v = tl.exp(v - tl.load(%s + 1, mask=ok, other=0.0).to(tl.float32)) * tl.load(%s, mask=ok, other=0.0).to(tl.float32)", at, at))
	case n.SubMean:
		return append(out, fmt.Sprintf("v = (v.to(tl.float64) + tl.load(%s + 1, mask=ok, other=0.0)).to(tl.float32)", at))
	}
	code := fmt.Sprintf("v = (v.to(tl.float64) * tl.load(%s, mask=ok, other=0.0) + tl.load(%s + 1, mask=ok, other=0.0)).to(tl.float32)", at, at)
	if !q.Fold {
		idx := "c"
		if n.LastAxis {
			idx = fmt.Sprintf("i %% %d", g.RunLen)
		}
		if n.Weight >= 0 {
			code += fmt.Sprintf(" * tl.load(e%d_ptr + %s, mask=ok, other=0.0)", n.Weight, idx)
		}
		if n.Bias >= 0 {
			code += fmt.Sprintf(" + tl.load(e%d_ptr + %s, mask=ok, other=0.0)", n.Bias, idx)
		}
	}
	return append(out, code)
}

// normReads is what a normalise step's norm reads besides v and its
// coefficients: the channel, and the weight's and bias's extras where
// they are not folded into the coefficients.
func normReads(q plan.Pass) (channel bool, extras []int) {
	if q.Fold {
		return false, nil
	}
	for _, e := range []int{q.Norm.Weight, q.Norm.Bias} {
		if e >= 0 {
			extras = append(extras, e)
			channel = channel || !q.Norm.LastAxis
		}
	}
	return channel, extras
}

// segFirst is the offset of segment s's first element: (s // Inner) *
// Outer + (s % Inner) * RunLen, without the terms that vanish.
func segFirst(g plan.Segments, s string) string {
	var terms []indexTerm
	if g.Outer != 0 {
		terms = append(terms, indexTerm{Div: g.Inner, Stride: g.Outer})
	}
	if g.Inner > 1 {
		terms = append(terms, indexTerm{Div: 1, Mod: g.Inner, Stride: g.RunLen})
	}
	return indexExpr(s, terms)
}

// opReads is what a run of ops reads besides v: the convolution's value,
// the channel, the element index, and the extras (in order, each once).
type opReads struct {
	kept, channel, index bool
	extras               []int
}

func readsOf(ops []plan.PointOp) opReads {
	var r opReads
	add := func(e int) {
		for _, x := range r.extras {
			if x == e {
				return
			}
		}
		r.extras = append(r.extras, e)
	}
	for _, op := range ops {
		r.kept = r.kept || op.Conv
		if op.Arg >= 0 {
			add(op.Arg)
			r.channel = r.channel || op.PerChannel
			r.index = r.index || op.Elementwise
		}
	}
	return r
}

// usesLibdevice tells whether an op's statement calls libdevice (tanh).
func usesLibdevice(ops []plan.PointOp) bool {
	for _, op := range ops {
		if op.Kind == "tanh" {
			return true
		}
	}
	return false
}

// extraList is "e0_ptr, e3_ptr" for the extras.
func extraList(extras []int, format string) string {
	parts := make([]string, len(extras))
	for i, e := range extras {
		parts[i] = fmt.Sprintf(format, e)
	}
	return strings.Join(parts, ", ")
}

// indexTerm is one coordinate of a flat index: ((x // Div) % Mod) *
// Stride; Mod 0 for the outermost, whose quotient needs none.
type indexTerm struct{ Div, Mod, Stride int }

// indexExpr writes the sum of the terms of flat index x.
func indexExpr(x string, terms []indexTerm) string {
	var parts []string
	for _, t := range terms {
		e := x
		if t.Div != 1 {
			e = fmt.Sprintf("(%s // %d)", x, t.Div)
		}
		if t.Mod > 0 {
			e = fmt.Sprintf("%s %% %d", e, t.Mod)
			if t.Stride != 1 {
				e = "(" + e + ")"
			}
		}
		if t.Stride != 1 {
			e = fmt.Sprintf("%s * %d", e, t.Stride)
		}
		parts = append(parts, e)
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " + ")
}

// axisTerms are the index terms of the axes of in where pick says so, as
// one flat index over those axes (row-major): neighbouring picked axes
// merge into one term (contiguous in both), axes of one element drop out.
func axisTerms(in [5]int, pick func(k int) bool) []indexTerm {
	type run struct{ extent, stride int }
	var runs []run
	stride := 1
	strides := [5]int{}
	for k := 4; k >= 0; k-- {
		strides[k] = stride
		stride *= in[k]
	}
	prev := -2
	for k := range 5 {
		if !pick(k) || in[k] == 1 {
			continue
		}
		if prev == k-1 && len(runs) > 0 {
			runs[len(runs)-1].extent *= in[k]
			runs[len(runs)-1].stride = strides[k]
		} else {
			runs = append(runs, run{in[k], strides[k]})
		}
		prev = k
	}
	terms := make([]indexTerm, len(runs))
	div := 1
	for i := len(runs) - 1; i >= 0; i-- {
		terms[i] = indexTerm{Div: div, Mod: runs[i].extent, Stride: runs[i].stride}
		div *= runs[i].extent
	}
	if len(terms) > 0 {
		terms[0].Mod = 0
	}
	return terms
}

// newTritonChainView formats the chain for the Triton template; nil
// without ops.
func newTritonChainView(p *plan.Plan, v *View) *TritonChainView {
	c, fused := p.Epilogue.Chain, p.Epilogue.Ops
	if !c.Any() {
		return nil
	}
	cv := &TritonChainView{Final: shapeC(c.Final), Forward: "model_forward", Doc: chainDoc(c, fused), XShape: v.InputShape}
	if len(c.Prologue) > 0 {
		cv.XShape = shapeC(c.Prologue[0].In[:])
	}
	// The stats buffer: each slot's partial results, then each normalise
	// step's coefficients (two a segment).
	var offsets, coefs []int
	off := 0
	for _, n := range c.Slots {
		offsets = append(offsets, off)
		off += n
	}
	for _, q := range c.Passes {
		if q.Kind == "normalise" {
			coefs = append(coefs, off)
			off += 2 * q.Seg.Count
		}
	}
	cv.StatsLen, cv.Stats = max(1, off), off > 0
	var exprs []string
	for i, e := range c.Extras {
		exprs = append(exprs, e.Expr)
		dt := "float32"
		if e.Int64() {
			dt = "int64"
		}
		cv.Extras = append(cv.Extras, TritonExtra{Index: i, Expr: e.Expr, Len: e.Len, DType: dt})
	}
	cv.Python = "[" + strings.Join(exprs, ", ") + "]"
	if len(fused) > 0 {
		cv.Store = opsHelper(p.Spec.Name+"_store_ops", fused)
		cv.Libdevice = cv.Libdevice || usesLibdevice(fused)
	}
	for _, q := range c.Prologue {
		cv.Prologue = append(cv.Prologue, tritonStep(q, c.Slots, offsets, 0))
	}
	for _, q := range c.Passes {
		coef := 0
		if q.Kind == "normalise" {
			coef, coefs = coefs[0], coefs[1:]
		}
		s := tritonStep(q, c.Slots, offsets, coef)
		cv.Libdevice = cv.Libdevice || usesLibdevice(q.Ops)
		cv.Steps = append(cv.Steps, s)
	}
	for _, u := range c.Updates {
		b := min(tritonUpdBlock, max(16, pow2AtLeast(u.Channels)))
		cv.Updates = append(cv.Updates, TritonUpdate{BNUpdate: u, Offset: offsets[u.Slot], CountLess: u.Count - 1, Block: b, Grid: divUp(u.Channels, b),
			Args: fmt.Sprintf("stats, extras[%d], extras[%d], extras[%d]", u.Mean, u.Var, u.Batches)})
	}
	return cv
}

// opsHelper is the @triton.jit helper named name that applies ops to a
// block v (the statements, and the parameters they read).
func opsHelper(name string, ops []plan.PointOp) *TritonStore {
	r := readsOf(ops)
	st := &TritonStore{Name: name, Kept: r.kept, Channel: r.channel, Index: r.index, Extras: r.extras}
	var params []string
	if r.channel {
		params = append(params, "c")
	}
	if r.index {
		params = append(params, "i", "ok")
	}
	for _, e := range r.extras {
		params = append(params, fmt.Sprintf("e%d_ptr", e))
		st.Ptrs += fmt.Sprintf("e%d_ptr, ", e)
		st.Args += fmt.Sprintf(", e%d: torch.Tensor", e)
		st.Launch += fmt.Sprintf("e%d, ", e)
	}
	if len(params) > 0 {
		st.Params = ", " + strings.Join(params, ", ")
	}
	for _, op := range ops {
		st.Code = append(st.Code, tritonOp(op)...)
	}
	return st
}

// tritonStep lays out one step's kernel: its parameters and launch, its
// blocks and the expressions its kind's template prints; slots are the
// stats slots' sizes and offsets their first float64s, coefAt a normalise
// step's coefficients'.
func tritonStep(q plan.Pass, slots, offsets []int, coefAt int) TritonStep {
	s := TritonStep{Pass: q, Params: "x_ptr, y_ptr", Args: "cur, nxt", OutShape: shapeC(q.Out[:])}
	dhw := q.In[2] * q.In[3] * q.In[4]
	switch q.Kind {
	case "pointwise":
		r := readsOf(q.Ops)
		s.Block, s.Grid = tritonPointBlock, divUp(q.OutLen, tritonPointBlock)
		s.Channel, s.DHW, s.C, s.Kept = r.channel, dhw, q.In[1], r.kept
		s.Params, s.Args = "x_ptr", "cur"
		if len(r.extras) > 0 {
			s.Params += ", " + extraList(r.extras, "e%d_ptr")
			s.Args += ", " + extraList(r.extras, "extras[%d]")
		}
		for _, op := range q.Ops {
			s.Code = append(s.Code, tritonOp(op)...)
		}
	case "normalise":
		// The pointwise kernel with the norm first, from the coefficients
		// the segment kernel writes before it.
		r := readsOf(q.Ops)
		channel, extras := normReads(q)
		for _, e := range r.extras {
			if !slices.Contains(extras, e) {
				extras = append(extras, e)
			}
		}
		s.Block, s.Grid = tritonPointBlock, divUp(q.OutLen, tritonPointBlock)
		s.Channel, s.DHW, s.C, s.Kept = channel || r.channel, dhw, q.In[1], r.kept
		s.Params, s.Args = "x_ptr, coef_ptr", "cur, stats"
		if len(extras) > 0 {
			s.Params += ", " + extraList(extras, "e%d_ptr")
			s.Args += ", " + extraList(extras, "extras[%d]")
		}
		s.Code = normStatements(q, coefAt)
		for _, op := range q.Ops {
			s.Code = append(s.Code, tritonOp(op)...)
		}
		s.Coef = tritonCoef(q, offsets[q.Norm.Slot], slots[q.Norm.Slot]/(2*q.Seg.Count), coefAt)
	case "stats":
		g, l := q.Seg, q.Part
		s.Params, s.Args = "x_ptr, stats_ptr", "cur, stats"
		s.PartsAt, s.PieceLen = offsets[q.Slot], l.PieceLen
		s.Grid = g.Count * l.Parts
		s.Block = min(tritonStatsBlock, pow2AtLeast(l.PieceLen))
		s.Decode = []string{"s = pid"}
		if l.Parts > 1 {
			s.Decode = []string{fmt.Sprintf("s = pid // %d", l.Parts)}
		}
		first := segFirst(g, "s")
		if g.Runs > 1 {
			r := fmt.Sprintf("pid %% %d", g.Runs)
			if l.Pieces > 1 {
				r = fmt.Sprintf("pid // %d %% %d", l.Pieces, g.Runs)
			}
			s.Decode = append(s.Decode, "r = "+r)
			first += fmt.Sprintf(" + r * %d", g.RunStride)
		}
		if l.Pieces > 1 {
			s.Decode = append(s.Decode, fmt.Sprintf("piece = pid %% %d", l.Pieces))
			first += fmt.Sprintf(" + piece * %d", l.PieceLen)
			if g.RunLen%l.PieceLen != 0 {
				s.PieceN = fmt.Sprintf("tl.minimum(%d, %d - piece * %d)", l.PieceLen, g.RunLen, l.PieceLen)
			}
		}
		s.First = first
	case "channel":
		s.C, s.DHW = q.In[1], dhw
		s.BlockC = min(tritonMaxChannel, pow2AtLeast(q.In[1]))
		s.BlockP = max(16, min(pow2AtLeast(dhw), tritonTile/s.BlockC))
		tiles := divUp(dhw, s.BlockP)
		s.Grid = q.In[0] * tiles
		s.Sample, s.Pos = "pid", "tl.arange(0, BLOCK_P)"
		if tiles > 1 {
			s.Sample, s.Pos = fmt.Sprintf("pid // %d", tiles), fmt.Sprintf("(pid %% %d) * BLOCK_P + tl.arange(0, BLOCK_P)", tiles)
		}
	case "reduce":
		s.Base = indexExpr("o", axisTerms(q.In, func(k int) bool { return !q.Axes[k] }))
		s.RedOffset = indexExpr("r", axisTerms(q.In, func(k int) bool { return q.Axes[k] }))
		s.R = q.InLen / q.OutLen
		s.BlockR = min(tritonMaxRun, pow2AtLeast(s.R))
		s.BlockO = tritonTile / s.BlockR
		s.Grid = divUp(q.OutLen, s.BlockO)
		s.Divisor = pyDouble(float64(s.R))
	case "rownorm":
		g, n := q.Seg, q.Norm
		s.Params, s.Args = "x_ptr", "cur"
		s.RowLen, s.BlockL = g.Elements(), pow2AtLeast(g.Elements())
		s.BlockS = max(1, tritonTile/s.BlockL)
		s.Grid = divUp(g.Count, s.BlockS)
		s.Eps = pyDouble(n.Eps)
		at := fmt.Sprintf("(i // %d) %% %d", dhw, q.In[1]) // the element's channel
		if n.LastAxis {
			at = fmt.Sprintf("i %% %d", g.RunLen)
		}
		var extras []int
		if n.Weight >= 0 {
			s.Weight, extras = fmt.Sprintf(" * tl.load(e%d_ptr + %s, mask=ok, other=0.0)", n.Weight, at), append(extras, n.Weight)
		}
		if n.Bias >= 0 {
			s.Bias, extras = fmt.Sprintf(" + tl.load(e%d_ptr + %s, mask=ok, other=0.0)", n.Bias, at), append(extras, n.Bias)
		}
		if len(extras) > 0 {
			s.Params += ", " + extraList(extras, "e%d_ptr")
			s.Args += ", " + extraList(extras, "extras[%d]")
		}
	case "pool":
		s.Block, s.Grid = tritonPoolBlock, divUp(q.OutLen, tritonPoolBlock)
		s.Volume = q.Window[0] * q.Window[1] * q.Window[2]
		s.Mask = "ok"
		for i, name := range []string{"d", "h", "w"} {
			s.Coords[i] = fmt.Sprintf("o%s * %d + k%s", name, q.Stride[i], name)
			if q.Pad[i] > 0 {
				s.Coords[i] = fmt.Sprintf("o%s * %d - %d + k%s", name, q.Stride[i], q.Pad[i], name)
				s.Mask += fmt.Sprintf(" & (%s >= 0) & (%s < %d)", name, name, q.In[2+i])
			}
		}
	default:
		panic("gen: no Triton kernel for a " + q.Kind + " step")
	}
	if q.Kind != "pointwise" && q.Kind != "normalise" && len(q.Ops) > 0 {
		// The ops after a reduction, a softmax, a pool or a row norm:
		// applied to its values before they are written, by a helper of
		// their own.
		s.After = opsHelper(q.Name+"_ops", q.Ops)
		for _, e := range s.After.Extras {
			if p := fmt.Sprintf("e%d_ptr", e); !slices.Contains(strings.Split(s.Params, ", "), p) {
				s.Params += ", " + p
				s.Args += fmt.Sprintf(", extras[%d]", e)
			}
		}
		o := "o"
		if q.Kind == "rownorm" {
			o = "i"
		}
		s.OutChannel = fmt.Sprintf("(%s // %d) %% %d", o, q.Out[2]*q.Out[3]*q.Out[4], q.Out[1])
	}
	return s
}

// tritonCoef lays out a normalise step's segment kernel: its segments'
// partial results at partsAt, its coefficients at coefAt.
func tritonCoef(q plan.Pass, partsAt, parts, coefAt int) *TritonCoef {
	n, g := q.Norm, q.Seg
	k := &TritonCoef{Name: q.Name + "_seg", Count: g.Count, Parts: parts, Elements: g.Elements(), PartsAt: partsAt, CoefAt: coefAt,
		Stat: q.Stat, SubMean: n.SubMean, Fold: q.Fold, Eps: pyDouble(n.Eps), Weight: -1, Bias: -1, Params: "stats_ptr", Args: "stats"}
	if q.Fold {
		k.Weight, k.Bias = n.Weight, n.Bias
		for _, e := range []int{n.Weight, n.Bias} {
			if e >= 0 {
				k.Params += fmt.Sprintf(", e%d_ptr", e)
				k.Args += fmt.Sprintf(", extras[%d]", e)
			}
		}
	}
	k.BlockS = min(tritonCoefBlock, max(16, pow2AtLeast(g.Count)))
	k.Grid = divUp(g.Count, k.BlockS)
	return k
}

// Call is the store's call of the helper on the tile v of the W residues
// res (rw, or rj for a bias-only residue), stored where mask is set.
func (st *TritonStore) Call(v, res, mask string) string {
	return st.Apply(v, "ch[None, :]", "y_row[:, None] + (y_col + "+res+")[None, :]", mask)
}

// Apply is a call of the helper on the block v whose channels are c and
// flat output indices i, written where ok is set (each passed where the
// ops read it).
func (st *TritonStore) Apply(v, c, i, ok string) string {
	args := []string{v}
	if st.Channel {
		args = append(args, c)
	}
	if st.Index {
		args = append(args, i, ok)
	}
	for _, e := range st.Extras {
		args = append(args, fmt.Sprintf("e%d_ptr", e))
	}
	return st.Name + "(" + strings.Join(args, ", ") + ")"
}
