package gen

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"convtgen/gen/plan"
)

// The CUDA text of the passes around the convolution (plan.Chain): the
// pointwise statements of each pointwise pass and the launch arguments;
// templates/cuda_epilogue.tmpl prints them into straight kernels.

// ChainView is what the epilogue template prints.
type ChainView struct {
	Chain    *plan.Chain
	Prologue []PassView
	Passes   []PassView
	Updates  []UpdateView
	// ExtraParams are the float extras as kernel parameters
	// ("const float* __restrict__ e0, ..."), ExtraArgs the host's
	// arguments for them.
	ExtraParams, ExtraArgs string
	ExtraChecks            []ExtraCheck
	SlotOffsets            []int // each stats slot's first double
	StatsLen               int
	Final                  string // forward's output shape
	Python                 string // the Python list of extras forward passes
	Doc                    string // the docstring's paragraph on the ops
}

// UpdateView is a BatchNorm update with its stats slot's offset.
type UpdateView struct {
	plan.BNUpdate
	Offset int
}

// ExtraCheck is one extra tensor's host check.
type ExtraCheck struct {
	Index int
	Expr  string // for the message
	Len   int
	Int64 bool // num_batches_tracked
}

// PassView is one pass: its plan and what the template prints for it.
type PassView struct {
	plan.Pass
	I    string   // the C type of element offsets: int, or long long for a wide pass
	Code []string // Ops as statements on float v (element i, its channel c)
	Kept bool     // the convolution's value v0 is read
	// NeedI and NeedC: the kernel computes each element's flat index i
	// and channel c (only where its ops or norm read them).
	NeedI, NeedC bool
	// Params are the extras as kernel parameters and Args the host's
	// arguments for them (each with a leading comma), where the pass reads
	// any; else empty.
	Params, Args string
	// NormCode is the norm's statement on v (normalise: from the
	// segment's scale[q] and shift[q]; rownorm: from mean and rstd, or
	// the row's exps and inv).
	NormCode string
	Eps      string // the norm's epsilon as a C double
	// normalise: Parts, the partial results of a segment its stats pass
	// wrote; Finalised, what the block makes of them (for the comment).
	Parts      int
	Finalised  string
	SlotOffset int
	// stats: Decode, the statements giving the block's segment s, run r
	// and piece; PieceN, the block's element count where pieces differ
	// (else PieceLen). reduce (a thread an output): Decode, the output's
	// kept coordinates; Loops, the loops over the reduced ones and their
	// body, reading in[At].
	Decode []string
	PieceN string
	Loops  []string
	At     string
	// depthsum: the (sample, channel, h, w) columns and h*w; the depths
	// a column reads (From to To-1); SumDecl declares the sums, SumCode
	// adds v (depth d) to those whose range holds d, SumStore writes them.
	Columns, HW, From, To int
	SumDecl               string
	SumCode, SumStore     []string
	// Comment is the kernel's comment, a line a string.
	Comment []string
	// rownorm: RowCond, the condition under which a chunk of a row is
	// inside it ("" when every one is); RowWhat and RowSteps, the norm and
	// its sums in words.
	RowCond, RowWhat, RowSteps string
	InShape, OutShape          string
}

// ChannelOf is the channel of the element at flat index idx.
func (v PassView) ChannelOf(idx string) string {
	o := v.Out
	dhw := o[2] * o[3] * o[4]
	if v.Kind == "rownorm" && v.Row.RowChannel {
		return fmt.Sprintf("(int)(row / %d %% %d)", dhw/v.Row.Len, o[1])
	}
	return fmt.Sprintf("(int)(%s / %d %% %d)", idx, dhw, o[1])
}

// SegOf is the index in the block's shared arrays of the segment of the
// element at flat index idx (normalise).
func (v PassView) SegOf(idx string) string {
	return fmt.Sprintf("(int)(%s / %d - q0)", idx, v.Seg.Div)
}

// SegBase is the offset of run r of segment s (stats).
func (v PassView) SegBase(s, r string) string {
	g := v.Seg
	cast := ""
	if v.Wide {
		cast = "(long long)"
	}
	var terms []string
	switch {
	case g.Count <= g.Inner:
		terms = append(terms, fmt.Sprintf("%s%s * %d", cast, s, g.RunLen))
	case g.Inner == 1:
		terms = append(terms, fmt.Sprintf("%s%s * %d", cast, s, g.Outer))
	default:
		if g.Outer != 0 {
			terms = append(terms, fmt.Sprintf("%s(%s / %d) * %d", cast, s, g.Inner, g.Outer))
		}
		terms = append(terms, fmt.Sprintf("%s(%s %% %d) * %d", cast, s, g.Inner, g.RunLen))
	}
	if g.Runs > 1 {
		terms = append(terms, fmt.Sprintf("%s%s * %d", cast, r, g.RunStride))
	}
	return strings.Join(terms, " + ")
}

// extraParam is float extra i as a kernel parameter, extraArg the host's
// argument for it.
func extraParam(i int) string { return fmt.Sprintf("const float* __restrict__ e%d", i) }
func extraArg(i int) string   { return fmt.Sprintf("(const float*)extras[%d].data_ptr()", i) }

// cFloat writes a number as a CUDA float literal.
func cFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "INFINITY"
	}
	if math.IsInf(f, -1) {
		return "-INFINITY"
	}
	s := strconv.FormatFloat(float64(float32(f)), 'g', 9, 32)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s + "f"
}

func cDouble(f float64) string {
	s := strconv.FormatFloat(f, 'g', 17, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// operand is a pointwise op's other side as a C expression in a pass
// kernel: a tensor read at the element's channel c or index i.
func operand(op plan.PointOp) string {
	switch {
	case op.Conv:
		return "v0"
	case op.Arg >= 0 && op.PerChannel:
		return fmt.Sprintf("__ldg(e%d + c)", op.Arg)
	case op.Arg >= 0 && op.Elementwise:
		return fmt.Sprintf("__ldg(e%d + i)", op.Arg)
	case op.Arg >= 0:
		return fmt.Sprintf("__ldg(e%d)", op.Arg)
	}
	return cFloat(op.Num)
}

// storeOperand is a fused op's other side in the store's epilogue(): a
// tensor is the function's parameter e<k>v, its value at the output.
func storeOperand(op plan.PointOp) string {
	if op.Arg >= 0 {
		return fmt.Sprintf("e%dv", op.Arg)
	}
	return operand(op)
}

// pointCode is one op's statement on v in a pass kernel (a norm is its
// pass's NormCode).
func pointCode(op plan.PointOp) string { return pointCodeWith(op, operand) }

// pointCodeWith is one op's statement on v, its other side written by
// operand.
func pointCodeWith(op plan.PointOp, operand func(plan.PointOp) string) string {
	switch op.Kind {
	case "add":
		return "v = v + " + operand(op) + ";"
	case "sub":
		return "v = v - " + operand(op) + ";"
	case "mul":
		return "v = v * " + operand(op) + ";"
	case "div":
		return "v = v / " + operand(op) + ";"
	case "clamp":
		s := ""
		if op.Min != nil {
			s += "v = fmaxf(v, " + cFloat(*op.Min) + "); "
		}
		if op.Max != nil {
			s += "v = fminf(v, " + cFloat(*op.Max) + ");"
		}
		return strings.TrimSpace(s)
	case "relu":
		return "v = fmaxf(v, 0.0f);"
	case "gelu":
		return "v = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));"
	case "sigmoid":
		return "v = 1.0f / (1.0f + expf(-v));"
	case "tanh":
		return "v = tanhf(v);"
	case "swish":
		return "v = v / (1.0f + expf(-v));"
	case "hardswish":
		return "v = v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;"
	case "mul_hardswish":
		return "v = v * (v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f);"
	case "leaky_relu":
		return "v = v >= 0.0f ? v : v * " + cFloat(op.Slope) + ";"
	case "sigmoid_gate":
		return "v = v * (1.0f / (1.0f + expf(-(v + " + cFloat(op.Shift) + ")))) / " + cFloat(op.Div) + ";"
	}
	panic("gen: unknown pointwise op " + op.Kind)
}

func shapeC(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ", ")
}

// newChainView formats the chain for the template; nil without ops.
func newChainView(c *plan.Chain, fused []plan.PointOp) *ChainView {
	if !c.Any() {
		return nil
	}
	v := &ChainView{Chain: c, Final: shapeC(c.Final), Doc: chainDoc(c, fused)}
	off := 0
	for _, n := range c.Slots {
		v.SlotOffsets = append(v.SlotOffsets, off)
		off += n
	}
	for _, u := range c.Updates {
		v.Updates = append(v.Updates, UpdateView{BNUpdate: u, Offset: v.SlotOffsets[u.Slot]})
	}
	v.StatsLen = off
	var params, args, exprs []string
	for i, e := range c.Extras {
		exprs = append(exprs, e.Expr)
		int64 := e.Int64()
		v.ExtraChecks = append(v.ExtraChecks, ExtraCheck{Index: i, Expr: e.Expr, Len: e.Len, Int64: int64})
		params = append(params, extraParam(i))
		if int64 {
			args = append(args, "nullptr") // an int64 tensor, which no float pass reads
			continue
		}
		args = append(args, extraArg(i))
	}
	v.ExtraParams = strings.Join(params, ", ")
	v.ExtraArgs = strings.Join(args, ", ")
	v.Python = "[" + strings.Join(exprs, ", ") + "]"
	parts := map[int]int{} // a stats slot's partial results a segment
	for _, p := range c.Passes {
		if p.Kind == "stats" {
			parts[p.Slot] = p.Part.Parts
		}
	}
	for _, p := range c.Prologue {
		v.Prologue = append(v.Prologue, v.passView(p, parts))
	}
	for _, p := range c.Passes {
		v.Passes = append(v.Passes, v.passView(p, parts))
	}
	return v
}

// passView is what the template prints for pass p.
func (v *ChainView) passView(p plan.Pass, parts map[int]int) PassView {
	pv := PassView{Pass: p, I: "int", InShape: shapeC(p.In[:]), OutShape: shapeC(p.Out[:])}
	if p.Wide {
		pv.I = "long long"
	}
	extras := false
	elementwise := false
	for _, op := range p.Ops {
		pv.Code = append(pv.Code, pointCode(op))
		pv.Kept = pv.Kept || op.Conv
		extras = extras || op.Arg >= 0
		pv.NeedC = pv.NeedC || op.Arg >= 0 && op.PerChannel
		elementwise = elementwise || op.Arg >= 0 && op.Elementwise
	}
	n := p.Norm
	affine := (p.Kind == "normalise" || p.Kind == "rownorm") && (n.Weight >= 0 || n.Bias >= 0)
	extras = extras || affine
	if extras {
		pv.Params, pv.Args = ", "+v.ExtraParams, ", "+v.ExtraArgs
	}
	// The norm's weight and bias: at the element's last-axis position, or
	// at its channel (unless folded into the segment's scale and shift).
	at := "c"
	if n.LastAxis {
		at = fmt.Sprintf("(int)(i %% %d)", p.Out[4])
	}
	scaled := func(code string) string {
		if n.Weight >= 0 {
			code += fmt.Sprintf(" * __ldg(e%d + %s)", n.Weight, at)
		}
		if n.Bias >= 0 {
			code += fmt.Sprintf(" + __ldg(e%d + %s)", n.Bias, at)
		}
		return code + ";"
	}
	pv.Eps = cDouble(n.Eps)
	switch p.Kind {
	case "pointwise":
		pv.NeedI = elementwise || pv.NeedC && !p.Point.VecChannel
	case "normalise":
		pv.Parts, pv.SlotOffset = parts[n.Slot], v.SlotOffsets[n.Slot]
		switch {
		case n.Softmax:
			pv.NormCode = "v = expf(v - (float)shift[q]) * (float)scale[q];"
			pv.Finalised = "maximum and the reciprocal of its sum of exp"
		case n.SubMean:
			pv.NormCode = "v = (float)((double)v + shift[q]);"
			pv.Finalised = "mean"
		case p.Fold:
			pv.NormCode = "v = (float)fma((double)v, scale[q], shift[q]);"
			pv.Finalised = "scale and shift (1/sqrt(variance + eps) and -mean, with the weight and bias folded in)"
		default:
			pv.NormCode = scaled("v = (float)fma((double)v, scale[q], shift[q])")
			pv.Finalised = "scale and shift (1/sqrt(variance + eps) and -mean times it)"
			pv.NeedC = pv.NeedC || affine && !n.LastAxis
		}
		pv.NeedI = elementwise || pv.NeedC && !p.Point.VecChannel || !p.Point.VecSeg || affine && n.LastAxis && !p.Fold
	case "stats":
		pv.SlotOffset = v.SlotOffsets[p.Slot]
		l := p.Part
		switch {
		case l.Parts == 1:
			pv.Decode = []string{"const int s = blockIdx.x;"}
		default:
			pv.Decode = []string{fmt.Sprintf("const int s = blockIdx.x / %d;", l.Parts)}
			if p.Seg.Runs > 1 && l.Pieces > 1 {
				pv.Decode = append(pv.Decode, fmt.Sprintf("const int r = blockIdx.x / %d %% %d;", l.Pieces, p.Seg.Runs))
			} else if p.Seg.Runs > 1 {
				pv.Decode = append(pv.Decode, fmt.Sprintf("const int r = blockIdx.x %% %d;", p.Seg.Runs))
			}
			if l.Pieces > 1 {
				pv.Decode = append(pv.Decode, fmt.Sprintf("const int piece = blockIdx.x %% %d;", l.Pieces))
			}
		}
		if p.Seg.RunLen%l.PieceLen != 0 {
			pv.PieceN = fmt.Sprintf("min(%d, %d - piece * %d)", l.PieceLen, p.Seg.RunLen, l.PieceLen)
		}
	case "rownorm":
		r := p.Row
		switch {
		case r.Ragged && r.RowGuard:
			pv.RowCond = fmt.Sprintf("live && off < %d", r.Len)
		case r.Ragged:
			pv.RowCond = fmt.Sprintf("off < %d", r.Len)
		case r.RowGuard:
			pv.RowCond = "live"
		}
		at = "c"
		if n.LastAxis {
			at = "off + k"
		}
		switch {
		case n.Softmax:
			pv.NormCode = "v = v * inv;"
			pv.RowWhat, pv.RowSteps = "Softmax", "the row's maximum, then its sum of exp(x - max)"
		case n.SubMean:
			pv.RowWhat, pv.RowSteps = "x - mean(x)", "the row's mean"
		default:
			pv.NormCode = scaled("v = v * rstd")
			pv.RowWhat, pv.RowSteps = "(x - mean) / sqrt(variance + eps)", "the row's mean, then its sum of squared deviations from it"
			pv.NeedC = pv.NeedC || affine && !n.LastAxis
		}
		pv.NeedI = elementwise || pv.NeedC && !r.RowChannel
	case "depthsum":
		depthSums(&pv)
	case "reduce":
		pv.NeedI = elementwise
		if p.Run == 0 {
			pv.Decode, pv.Loops, pv.At = reduceLoops(p, pv.I)
			pv.NeedC = false // the decoded c, where a channel is kept
		}
	default:
		pv.NeedI = elementwise
		if p.Kind == "channel" {
			pv.NeedC = false // the loop's own c
		}
	}
	pv.Comment = passComment(pv)
	return pv
}

// depthSums fills a depthsum pass's statements: a sum a tap, each
// adding the depths of its range (a condition only where its range is
// narrower than the loop's), each written at its folded channel.
func depthSums(pv *PassView) {
	p := pv.Pass
	pv.HW = p.In[3] * p.In[4]
	pv.Columns = p.In[0] * p.In[1] * pv.HW
	pv.From, pv.To = p.Sums[0].Lo, p.Sums[0].Hi
	for _, t := range p.Sums {
		pv.From, pv.To = min(pv.From, t.Lo), max(pv.To, t.Hi)
	}
	var decl []string
	for j, t := range p.Sums {
		decl = append(decl, fmt.Sprintf("s%d = 0.0", j))
		var cond []string
		if t.Lo > pv.From {
			cond = append(cond, fmt.Sprintf("d >= %d", t.Lo))
		}
		if t.Hi < pv.To {
			cond = append(cond, fmt.Sprintf("d < %d", t.Hi))
		}
		add := fmt.Sprintf("s%d += v;", j)
		if len(cond) > 0 {
			add = "if (" + strings.Join(cond, " && ") + ") " + add
		}
		pv.SumCode = append(pv.SumCode, add)
		pv.SumStore = append(pv.SumStore, fmt.Sprintf("y[%s] = (float)(s%d / %d.0);", offset(j, pv.HW), j, p.OutDepth))
	}
	pv.SumDecl = "double " + strings.Join(decl, ", ") + ";"
}

// offset is the literal j*hw (a long long past an int's range).
func offset(j, hw int) string {
	if n := j * hw; n > math.MaxInt32 {
		return strconv.Itoa(n) + "LL"
	}
	return strconv.Itoa(j * hw)
}

// reduceLoops is the body of a reduction a thread an output: the
// decoding of the output's kept coordinates from o, the loops over the
// reduced ones (with their body) and the input's index.
func reduceLoops(p plan.Pass, idx string) (decode, loops []string, at string) {
	names := [5]string{"n", "c", "d", "h", "w"}
	vars := names
	decode = []string{idx + " r = o;"}
	for k := 4; k >= 1; k-- {
		switch {
		case p.Axes[k]:
		case p.Out[k] == 1:
			vars[k] = "0"
		default:
			decode = append(decode, fmt.Sprintf("const int %s = (int)(r %% %d); r /= %d;", names[k], p.Out[k], p.Out[k]))
		}
	}
	if !p.Axes[0] {
		decode = append(decode, fmt.Sprintf("const %s n = r;", idx))
	}
	depth := ""
	for k := range 5 {
		if p.Axes[k] {
			loops = append(loops, fmt.Sprintf("%sfor (int %s = 0; %s < %d; ++%s)", depth, names[k], names[k], p.In[k], names[k]))
			depth += "    "
		}
	}
	loops[len(loops)-1] += " {"
	inner := strings.TrimSuffix(depth, "    ")
	at = vars[0]
	for k := 1; k < 5; k++ {
		if strings.Contains(at, " + ") {
			at = "(" + at + ")"
		}
		switch {
		case at == "0":
			at = vars[k]
		case vars[k] == "0":
			at = fmt.Sprintf("%s * %d", at, p.In[k])
		default:
			at = fmt.Sprintf("%s * %d + %s", at, p.In[k], vars[k])
		}
	}
	sum := "acc += x;"
	if p.Reduce == "max" {
		sum = "acc = fmaxf(acc, x);"
	}
	loops = append(loops, depth+"const float x = in["+at+"];", depth+sum, inner+"}")
	return decode, loops, at
}

// passComment is the comment over a pass's kernel: what it computes and
// how its threads cover the tensor, wrapped.
func passComment(v PassView) []string {
	p := v.Pass
	after := ""
	if len(p.Ops) > 0 {
		after = fmt.Sprintf("; then the %d op(s) after it in the chain, before the write (no kernel of their own)", len(p.Ops))
	}
	axes := ""
	for k, a := range p.Axes {
		if a {
			axes += fmt.Sprintf(" %d", k)
		}
	}
	var text string
	switch p.Kind {
	case "pointwise":
		text = fmt.Sprintf("Pointwise: %d op(s) on each of %d elements, in place, %d consecutive elements a thread", len(p.Ops), p.OutLen, p.Point.Vec)
		if p.Point.Vec == 4 {
			text += " (a float4)"
		}
		text += "."
	case "normalise":
		g := p.Seg
		mod := ""
		if g.Mod > 0 {
			mod = fmt.Sprintf(" %% %d", g.Mod)
		}
		text = fmt.Sprintf("Normalise %d elements in place by their segment's statistics (%d segments of %d; element i's is (i / %d)%s)%s. "+
			"A block covers %d elements: first a warp a segment turns the stats kernel's %d partial result(s) of each segment the block reaches "+
			"into its %s, once, in shared memory (no division or square root an element); then each thread applies them to %d vector(s) of %d, %d elements apart.",
			p.OutLen, g.Count, g.Elements(), g.Div, mod, after, p.Point.PerBlock, v.Parts, v.Finalised, p.Point.Iters, p.Point.Vec, p.Threads*p.Point.Vec)
	case "stats":
		g, l := p.Seg, p.Part
		what := "sum and sum of squares, in double"
		if p.Stat == "softmax" {
			what = "maximum and sum of exp(x - max) (exp in float, the sum in double)"
		}
		vec := ""
		if l.Vec == 4 {
			vec = " as float4s"
		}
		text = fmt.Sprintf("Partial statistics of %d segments of %d elements: segment s is %d run(s) of %d starting at %s. "+
			"A block sums one piece of %d elements of a run (%d a run, %d a segment), coalesced%s, and writes its %s: "+
			"every part is written and none added atomically, so nothing is zeroed first and the sums do not depend on the blocks' order.",
			g.Count, g.Elements(), g.Runs, g.RunLen, v.SegBase("s", "r"), l.PieceLen, l.Pieces, l.Parts, vec, what)
	case "rownorm":
		r := p.Row
		across := ""
		if r.Lanes > 1 {
			across = " across the row's threads (shuffles)"
		}
		ops := ""
		if len(p.Ops) > 0 {
			ops = fmt.Sprintf(", gets the %d op(s) after the norm", len(p.Ops))
		}
		text = fmt.Sprintf("%s over %d rows of %d contiguous elements, whole in one kernel and in place: %d thread(s) a row hold %d of its values "+
			"in registers (%d vector(s) of %d, %d elements apart, so that a warp's loads are whole sectors); %s, a thread's share in float, the shares in double%s; "+
			"each value is normalised%s and written once. No statistics go through memory.",
			v.RowWhat, p.Seg.Count, r.Len, r.Lanes, r.Values(), r.Chunks, r.Vec, r.Lanes*r.Vec, v.RowSteps, across, ops)
	case "channel":
		positions := p.In[0] * p.In[2] * p.In[3] * p.In[4]
		text = fmt.Sprintf("%s over the %d channels of each of %d positions, a thread a position (neighbouring threads read neighbouring positions)", p.Reduce, p.In[1], positions)
		if p.Hold {
			text += ", its channels read once into registers"
		}
		text += after + "."
		if p.Reduce == "softmax" || p.Reduce == "logsumexp" {
			text += " exp in float (its error is far under the gate's), the sum in double."
		}
	case "reduce":
		if p.Run > 0 {
			text = fmt.Sprintf("%s over axes%s: (%s) to (%s). Each output's inputs are one contiguous run of %d: a block an output reads it coalesced and adds it up%s.",
				p.Reduce, axes, v.InShape, v.OutShape, p.Run, after)
		} else {
			text = fmt.Sprintf("%s over axes%s: (%s) to (%s), a thread an output (neighbouring threads read neighbouring inputs)%s.", p.Reduce, axes, v.InShape, v.OutShape, after)
		}
	case "depthsum":
		var ranges []string
		for j, t := range p.Sums {
			ranges = append(ranges, fmt.Sprintf("channel ci*%d + %d sums depths %d to %d (tap %d)", len(p.Sums), j, t.Lo, t.Hi-1, t.K))
		}
		text = fmt.Sprintf("The depth %s's sums, before the convolution: (%s) to (%s), a thread a (sample, channel, h, w) column (neighbouring threads "+
			"read neighbouring w), reading each of its %d depths once and adding it, in double, to the sums of the taps whose range holds it; %s. "+
			"Each sum is divided by the output depth, %d.", p.Reduce, v.InShape, v.OutShape, p.In[2], strings.Join(ranges, ", "), p.OutDepth)
	case "pool":
		kind := "Average"
		if p.Max {
			kind = "Max"
		}
		text = fmt.Sprintf("%s pool, window %dx%dx%d, stride %dx%dx%d, padding %dx%dx%d: (%s) to (%s), a thread an output%s.", kind,
			p.Window[0], p.Window[1], p.Window[2], p.Stride[0], p.Stride[1], p.Stride[2], p.Pad[0], p.Pad[1], p.Pad[2], v.InShape, v.OutShape, after)
	}
	return strings.Split(wrapText(text, 92), "\n")
}

// chainDoc says in the docstring what runs besides the convolution, in
// launch order: a paragraph wrapped at 80 columns.
func chainDoc(c *plan.Chain, fused []plan.PointOp) string {
	kinds := func(ops []plan.PointOp) string {
		var k []string
		for _, op := range ops {
			k = append(k, op.Kind)
		}
		return strings.Join(k, ", ")
	}
	then := func(p plan.Pass) string {
		if len(p.Ops) == 0 {
			return ""
		}
		return ", then " + kinds(p.Ops) + " before it writes"
	}
	norm := func(p plan.Pass) string {
		switch {
		case p.Norm.Softmax:
			return "softmax"
		case p.Norm.SubMean:
			return "x - mean"
		}
		return "normalise"
	}
	describe := func(p plan.Pass) string {
		switch p.Kind {
		case "pointwise":
			return fmt.Sprintf("pointwise (%s), %d elements a thread", kinds(p.Ops), p.Point.Vec)
		case "stats":
			what := "sum and sum of squares"
			if p.Stat == "softmax" {
				what = "maximum and sum of exp"
			}
			return fmt.Sprintf("each segment's %s in double, as %d partial result(s) a segment (no atomics)", what, p.Part.Parts)
		case "normalise":
			return fmt.Sprintf("%s, each block turning its segments' partial results into their statistics once%s", norm(p), then(p))
		case "rownorm":
			return fmt.Sprintf("%s over rows of %d in one kernel, %d thread(s) a row holding it in registers%s",
				norm(p), p.Row.Len, p.Row.Lanes, then(p))
		case "channel":
			return p.Reduce + " over channels" + then(p)
		case "reduce":
			if p.Run > 0 {
				return fmt.Sprintf("%s over the last axes, a block an output%s", p.Reduce, then(p))
			}
			return p.Reduce + " over an axis" + then(p)
		case "depthsum":
			return fmt.Sprintf("the depth %s's sums of x over each depth tap's range, in double (%d sums an input channel)", p.Reduce, len(p.Sums))
		case "pool":
			if p.Max {
				return "max pool" + then(p)
			}
			return "average pool" + then(p)
		}
		return p.Kind
	}
	list := func(passes []plan.Pass) string {
		var parts []string
		for _, p := range passes {
			parts = append(parts, describe(p))
		}
		return strings.Join(parts, "; ")
	}
	text := ""
	if len(c.Prologue) > 0 {
		text = "Before the convolution, as kernels of their own: " + list(c.Prologue) + ". "
	}
	if len(fused) > 0 {
		text += "The convolution's store applies " + kinds(fused) + " to each output before writing it (no kernel of their own)"
		if reads := storeReads(c, fused); reads != "" {
			text += ", reading " + reads
		}
		text += ". "
	}
	if len(c.Passes) > 0 {
		text += "After the convolution, as kernels of their own, in order: " + list(c.Passes) + "."
	}
	for _, u := range c.Updates {
		text += " Kernel " + u.Name + " updates the BatchNorm's running statistics as PyTorch does."
	}
	return wrapText(strings.TrimSpace(text), 80)
}

// storeReads says which tensors the fused ops read and where: "self.bias
// at the output's channel and add_input at the output's own index".
func storeReads(c *plan.Chain, fused []plan.PointOp) string {
	var reads []string
	seen := map[int]bool{}
	for _, op := range fused {
		if op.Arg < 0 || seen[op.Arg] {
			continue
		}
		seen[op.Arg] = true
		reads = append(reads, c.Extras[op.Arg].Expr+" "+readsAt(op))
	}
	return strings.Join(reads, " and ")
}

// readsAt says where an op reads its tensor for an output.
func readsAt(op plan.PointOp) string {
	switch {
	case op.PerChannel:
		return "at the output's channel"
	case op.Elementwise:
		return "at the output's own index"
	}
	return "(its one value)"
}

// StoreView is what the convolution's kernels print for the tensors the
// fused ops read (plan.Epilogue.Extras): their parameters after the bias
// (the main kernel's and the fill's), the host's arguments for them,
// epilogue()'s operands, and which of them the stores load before their
// loops (per channel and 0-dim) rather than at each output.
type StoreView struct {
	Params, Args string
	Operands     []plan.StoreExtra // epilogue()'s parameters after v, e<Arg>v
	Channel      []int
	Scalar       []int
	Element      []int // read at the output's own index
	// Prefetch: a wgmma tile's plain store (no kw_in_n, no Winograd)
	// reads Element, so each phase asks L2 for their lines first: the
	// store would wait on memory after the products, with too few warps
	// an SM to hide it (PERF.md v41).
	Prefetch  bool
	Signature string   // epilogue()'s parameter list
	Comment   []string // what its operands are, a comment's lines
}

func newStoreView(p *plan.Plan) StoreView {
	v := StoreView{Signature: "float v", Operands: p.Epilogue.Extras}
	var what []string
	for _, e := range p.Epilogue.Extras {
		v.Params += ", " + extraParam(e.Arg)
		v.Args += ", " + extraArg(e.Arg)
		v.Signature += fmt.Sprintf(", float e%dv", e.Arg)
		expr := p.Epilogue.Chain.Extras[e.Arg].Expr
		switch e.Read {
		case plan.StoreChannel:
			v.Channel = append(v.Channel, e.Arg)
			what = append(what, fmt.Sprintf("e%dv is %s at the output's channel", e.Arg, expr))
		case plan.StoreScalar:
			v.Scalar = append(v.Scalar, e.Arg)
			what = append(what, fmt.Sprintf("e%dv is %s's one value", e.Arg, expr))
		default:
			v.Element = append(v.Element, e.Arg)
			what = append(what, fmt.Sprintf("e%dv is %s at the output's own index", e.Arg, expr))
		}
	}
	if len(what) > 0 {
		v.Comment = strings.Split(wrapText(strings.Join(what, "; ")+".", 74), "\n")
	}
	if w := p.Tile.WGMMA; w != nil && !w.KWInN && !w.Winograd {
		v.Prefetch = len(v.Element) > 0
	}
	return v
}

// wrapText breaks text into lines of at most width characters at spaces.
func wrapText(text string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}
