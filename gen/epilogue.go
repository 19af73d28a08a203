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
	Code       []string // pointwise: statements on float v (the element i, its channel c)
	Blocks     string   // the launch's grid
	Threads    int
	SlotOffset int
	OutShape   string
	Kept       bool   // the convolution's value v0 is read
	Params     string // pointwise: the extras' kernel parameters
}

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

// pointCode is one op's statement on v in a pass kernel.
func pointCode(op plan.PointOp, slotOffset []int) string {
	return pointCodeWith(op, slotOffset, operand)
}

// pointCodeWith is one op's statement on v, its other side written by
// operand.
func pointCodeWith(op plan.PointOp, slotOffset []int, operand func(plan.PointOp) string) string {
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
	case "norm":
		g := op.Seg
		seg := fmt.Sprintf("(i / %dLL)", g.Div)
		if g.Mod > 0 {
			seg = fmt.Sprintf("(%s %% %dLL)", seg, g.Mod)
		}
		st := fmt.Sprintf("stats + %d + 2 * %s", slotOffset[op.Slot], seg)
		if op.Softmax {
			return fmt.Sprintf("{ const double* s = %s; v = (float)(exp((double)v - s[0]) / s[1]); }", st)
		}
		mean := fmt.Sprintf("const double* s = %s; const double mean = s[0] / %s;", st, cDouble(float64(g.Elements())))
		if op.SubMean {
			return "{ " + mean + " v = (float)((double)v - mean); }"
		}
		idx := "c"
		if op.LastAxis {
			idx = fmt.Sprintf("(int)(i %% %dLL)", g.RunLen)
		}
		code := fmt.Sprintf("{ %s const double var = fmax(s[1] / %s - mean * mean, 0.0); v = (float)(((double)v - mean) / sqrt(var + %s))",
			mean, cDouble(float64(g.Elements())), cDouble(op.Eps))
		if op.Weight >= 0 {
			code += fmt.Sprintf(" * __ldg(e%d + %s)", op.Weight, idx)
		}
		if op.Bias >= 0 {
			code += fmt.Sprintf(" + __ldg(e%d + %s)", op.Bias, idx)
		}
		return code + "; }"
	}
	panic("gen: unknown pointwise op " + op.Kind)
}

const epiThreads = 256

func blocks(n int) string { return strconv.Itoa(max(1, (n+epiThreads-1)/epiThreads)) }

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
	v.StatsLen = max(1, off)
	var params, args, exprs []string
	for i, e := range c.Extras {
		exprs = append(exprs, e.Expr)
		int64 := e.Int64()
		v.ExtraChecks = append(v.ExtraChecks, ExtraCheck{Index: i, Expr: e.Expr, Len: e.Len, Int64: int64})
		params = append(params, fmt.Sprintf("const float* __restrict__ e%d", i))
		if int64 {
			args = append(args, "nullptr") // an int64 tensor, which no float pass reads
			continue
		}
		args = append(args, fmt.Sprintf("(const float*)extras[%d].data_ptr()", i))
	}
	v.ExtraParams = strings.Join(params, ", ")
	v.ExtraArgs = strings.Join(args, ", ")
	v.Python = "[" + strings.Join(exprs, ", ") + "]"
	view := func(p plan.Pass) PassView {
		pv := PassView{Pass: p, Threads: epiThreads, OutShape: shapeC(p.Out[:])}
		switch p.Kind {
		case "pointwise":
			pv.Params = v.ExtraParams
			for _, op := range p.Ops {
				pv.Code = append(pv.Code, pointCode(op, v.SlotOffsets))
				pv.Kept = pv.Kept || op.Conv
			}
			pv.Blocks = blocks(p.OutLen)
		case "stats":
			pv.SlotOffset = v.SlotOffsets[p.Slot]
			if p.Large {
				pv.Blocks = fmt.Sprintf("dim3(%d, %d)", p.Seg.Count, p.Split)
			} else {
				pv.Blocks = blocks(p.Seg.Count)
			}
		case "channel":
			pv.Blocks = blocks(p.In[0] * p.In[2] * p.In[3] * p.In[4])
		default:
			pv.Blocks = blocks(p.OutLen)
		}
		return pv
	}
	for _, p := range c.Prologue {
		v.Prologue = append(v.Prologue, view(p))
	}
	for _, p := range c.Passes {
		v.Passes = append(v.Passes, view(p))
	}
	return v
}

// chainDoc says in the docstring what runs besides the convolution, in
// launch order: a paragraph wrapped at 80 columns.
func chainDoc(c *plan.Chain, fused []plan.PointOp) string {
	kinds := func(ops []plan.PointOp) string {
		var k []string
		for _, op := range ops {
			k = append(k, strings.Replace(op.Kind, "norm", "normalise", 1))
		}
		return strings.Join(k, ", ")
	}
	describe := func(p plan.Pass) string {
		switch p.Kind {
		case "pointwise":
			return "pointwise (" + kinds(p.Ops) + ")"
		case "stats":
			if p.Stat == "softmax" {
				return "each segment's maximum and sum of exp, in double"
			}
			return "each segment's sum and sum of squares, in double"
		case "channel":
			return p.Reduce + " over channels"
		case "reduce":
			return p.Reduce + " over an axis"
		case "pool":
			if p.Max {
				return "max pool"
			}
			return "average pool"
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
	Signature    string   // epilogue()'s parameter list
	Comment      []string // what its operands are, a comment's lines
}

func newStoreView(p *plan.Plan) StoreView {
	v := StoreView{Signature: "float v", Operands: p.Epilogue.Extras}
	var what []string
	for _, e := range p.Epilogue.Extras {
		v.Params += fmt.Sprintf(", const float* __restrict__ e%d", e.Arg)
		v.Args += fmt.Sprintf(", (const float*)extras[%d].data_ptr()", e.Arg)
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
			what = append(what, fmt.Sprintf("e%dv is %s at the output's own index", e.Arg, expr))
		}
	}
	if len(what) > 0 {
		v.Comment = strings.Split(wrapText(strings.Join(what, "; ")+".", 74), "\n")
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
