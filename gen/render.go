// Package gen is the generator: it loads every spec, plans it, renders the
// templates and writes the results under out/, all or nothing.
package gen

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
	"convtgen/templates"
)

// View is what the templates print: the plan plus strings the generator
// has already formatted. Text from a spec is here only in a form safe
// where the templates put it: identifiers checked, free text escaped.
type View struct {
	Plan     *plan.Plan
	Target   plan.Target
	Conv     geom.Conv
	Tile     plan.Tile
	Name     string // an identifier
	Title    string // escaped for a docstring
	SpecPath string // slash-separated, relative to the repository root; escaped for a comment line
	Summary  string

	// Reference model: Ref prints its __init__ and forward.
	Ref           *spec.Reference
	InputLines    []string // get_inputs()'s statements
	Attr          string
	InitSignature string // __init__ parameters after self
	ConvArgs      string // nn.ConvTranspose3d arguments
	InitInputs    string
	InputDist     string
	InputShape    string // "16, 32, 16, 32, 64"
	WeightShape   string
	OutputShape   string

	// CUDA backend.
	HostFunction string
	// Fused are the statements of the ops every store applies
	// (plan.Epilogue.Ops) on float v; FusedKept: they read the
	// convolution's value v0; Store, the tensors they read.
	Fused     []string
	FusedKept bool
	Store     StoreView
	WeightLen int
	BiasLen   int // the module's bias: out_channels (Plan.BiasEvery folded channels share a value)
	// Launches the verifier makes the same way: the weight repack's grid
	// and block; with wgmma, the input re-layout's and the bias fill's
	// blocks, a fill block's outputs and a fill thread's share of them.
	RepackBlocks, RepackThreads                               int
	Transpose                                                 plan.Transpose // the plain weight re-layout's tiling
	AddSplitsThreads                                          int
	RelayoutThreads, FillThreads, FillPerBlock, FillPerThread int

	TapTableLen int
	CIChunks    int
	// WeightRead: how a direct thread reads one (tap, channel)'s weights.
	WeightRead WeightRead
	// WeightParam names the main kernel's weight parameter, and WeightAt
	// is where a direct block stages weight (g, flat, ci, n0 + n) from:
	// wt, the re-laid weight, or w, PyTorch's own layout, where the plan
	// reads that (plan.ReadsTorchWeight: the forward then has no re-layout).
	// WeightTensor is the host tensor passed for it (wt or weight).
	WeightParam, WeightAt, WeightTensor string
	ALanes                              int
	ARows                               int
	AKStride                            int
	AK                                  int
	BLoads                              int

	// The main kernel's block along the plan's logical grid: blockIdx's
	// fields, or with a folded grid the names the kernel decodes them into;
	// BlocksXY, the logical grid's x times y (the fold's z stride).
	BlockX, BlockY, BlockZ string
	BlocksXY               int

	// wgmma tile: the operand lists of its inline PTX, and the blocks
	// its templates print.
	WGMMAAsm WGMMAAsm
	WG       *WGMMABlocks

	// Triton backend (gen/triton.go), and the ops around its convolution
	// (gen/triton_chain.go; nil without ops).
	Triton      *TritonView
	TritonChain *TritonChainView

	// Chain is the passes of the ops around the convolution (nil: none).
	Chain *ChainView
	// Spectral is a spectral plan's (nil for the others: then the
	// convolution's fields above are set).
	Spectral *SpectralView
	// Fold is what a depth fold's weight re-layout and host checks print
	// (nil without one).
	Fold *FoldView
	// FoldDoc is the CUDA docstring's paragraph on a depth fold,
	// RestrideDoc the docstrings' on raised strides (Plan.Restrided).
	FoldDoc, RestrideDoc string
	// NoTriton says in the docstring why this problem has no Triton file
	// (plan.Plan.TritonLeftOut), wrapped; empty where it has one.
	NoTriton string
}

func newView(p *plan.Plan, specPath string) (*View, error) {
	s, c, t := p.Spec, p.Conv, p.Tile
	r := s.Reference
	idents := [][2]string{{"name", s.Name}, {"reference.attr", r.Attr}, {"problem.input_dist", s.Problem.InputDist},
		{"extension name", p.Names.Extension}, {"kernel name", p.Names.Kernel}}
	for _, n := range []string{p.Names.Repack, p.Names.Relayout, p.Names.Fill} {
		if n != "" {
			idents = append(idents, [2]string{"kernel name", n})
		}
	}
	for _, prm := range r.Params {
		idents = append(idents, [2]string{"reference parameter", prm.Name}, [2]string{"reference parameter type", prm.Type})
	}
	if err := checkIdents(idents...); err != nil {
		return nil, fmt.Errorf("%s: %w", commentSafe(specPath), err)
	}
	pc := s.Problem.Conv // the reference's convolution (c, with a depth fold, is the folded one)
	inits := make([]string, len(r.InitInputs))
	for i, v := range r.InitInputs {
		inits[i] = v.Python()
	}
	v := &View{
		Plan: p, Target: p.Target, Conv: c, Tile: t,
		Name: s.Name, Title: docstringSafe(s.Title), SpecPath: commentSafe(specPath),
		Summary:       summary(pc, pc.Out()),
		Ref:           &s.Reference,
		InputLines:    r.InputLines(s.Problem.InputDist, []int{pc.Batch, pc.InChannels, pc.In[0], pc.In[1], pc.In[2]}),
		Attr:          r.Attr,
		InitSignature: r.InitSignature(),
		ConvArgs:      r.ConvArgs(),
		InitInputs:    strings.Join(inits, ", "),
		InputDist:     s.Problem.InputDist,
		InputShape:    ints(c.Batch, c.InChannels, c.In[0], c.In[1], c.In[2]),
		WeightShape:   ints(c.InChannels, p.CoutG, c.Kernel[0], c.Kernel[1], c.Kernel[2]),
		OutputShape:   ints(c.Batch, c.OutChannels, p.Out[0], p.Out[1], p.Out[2]),
		HostFunction:  "conv_transpose3d_forward",
		WeightLen:     c.WeightLen(),
		BiasLen:       c.OutChannels / p.BiasEvery(),
	}
	v.Chain = newChainView(p.Epilogue.Chain, p.Epilogue.Ops)
	if f := p.DepthFold; f != nil {
		v.FoldDoc = foldDoc(f, c, p.Out)
		v.Fold = newFoldView(f, p.CoutG)
	}
	if p.TapFold > 0 {
		// The module's tensors, of which the folded ones are views.
		po := pc.Out()
		v.WeightShape = ints(pc.InChannels, pc.OutPerGroup(), pc.Kernel[0], pc.Kernel[1], pc.Kernel[2])
		v.OutputShape = ints(pc.Batch, pc.OutChannels, po[0], po[1], po[2])
		v.FoldDoc = tapFoldDoc(pc, c, p.TapFold)
	}
	v.RestrideDoc = restrideDoc(p.Restrided, c)
	if p.TritonLeftOut != "" {
		v.NoTriton = wrapText("No Triton file: the Triton backend cannot express this forward yet ("+p.TritonLeftOut+").", 80)
	}
	if p.Spectral != nil {
		v.Spectral = newSpectralView(p)
		return v, nil
	}
	gather := p.Gather()
	v.RepackBlocks, v.RepackThreads, v.Transpose = p.RepackBlocks(), plan.RepackBlockThreads, p.Transpose()
	v.AddSplitsThreads = plan.AddSplitsBlockThreads
	v.TapTableLen, v.CIChunks = max(1, len(p.Taps)), p.CIChunks()
	v.WeightRead = newWeightRead(t.BN())
	v.WeightParam, v.WeightTensor = "wt", "wt"
	v.WeightAt = "wt + (((idx_t)g * kTaps + flat) * kCinG + ci) * kCoutG + n0 + n"
	if p.ReadsTorchWeight() {
		// The FFMA and mma.sync bodies read wt: one tap, it is the weight.
		v.WeightTensor = "weight"
		if t.Direct != nil {
			v.WeightParam = "w"
			v.WeightAt = "w + ((idx_t)(g * kCinG + ci) * kCoutG + n0 + n) * kTaps + flat"
		}
	}
	v.ALanes, v.ARows, v.AKStride, v.AK, v.BLoads = gather.Lanes, gather.Rows, gather.KStride, gather.K, gather.BLoads
	for _, op := range p.Epilogue.Ops {
		v.Fused = append(v.Fused, pointCodeWith(op, storeOperand))
		v.FusedKept = v.FusedKept || op.Conv
	}
	v.Store = newStoreView(p)
	v.BlockX, v.BlockY, v.BlockZ = "blockIdx.x", "blockIdx.y", "blockIdx.z"
	if p.Fold {
		v.BlockX, v.BlockY, v.BlockZ = "bx", "by", "bz"
	}
	v.BlocksXY = p.Blocks[0] * p.Blocks[1]
	if t.WGMMA != nil {
		v.WGMMAAsm = newWGMMAAsm(p.WGMMA.SumsPerThread)
		v.RelayoutThreads, v.FillThreads = plan.RelayoutBlockThreads, plan.FillBlockThreads
		v.FillPerBlock, v.FillPerThread = plan.FillPerBlock, plan.FillPerBlock/plan.FillBlockThreads
		v.WG = newWGMMABlocks(p)
	}
	// Only for a triton render: a plan mutated on purpose (gen/mutate)
	// may break the tap invariant newTritonView checks, and is rendered
	// for cuda alone.
	if slices.Contains(s.Kernel.Backends, "triton") && p.Unfolded == nil {
		v.Triton = newTritonView(p)
		v.TritonChain = newTritonChainView(p, v)
		if err := checkIdents([2]string{"triton kernel name", v.Triton.Kernel}, [2]string{"triton wrapper name", v.Triton.Wrapper}); err != nil {
			return nil, fmt.Errorf("%s: %w", commentSafe(specPath), err)
		}
	}
	return v, nil
}

// WGMMABlocks are the choices of a wgmma tile's kernel that its
// templates print as code (never as flags in the kernel): which block of
// each step runs on the plan's target, and the constants they pick.
type WGMMABlocks struct {
	Hopper bool // products by wgmma (sm_90a); else mma.sync from the same fragments
	Bulk   bool // weight stages filled by one bulk copy each, completing a barrier (sm_90a)
	StageA bool // the input's fragments by cp.async through shared memory, not straight to registers
	// PhasePipeline: each phase fills its own pipeline (its staged
	// input's copies need its rows, or kw_in_n's sums the stages' memory);
	// else the weight image streams through every phase's steps.
	PhasePipeline bool
	Park          bool // fp32 running sums parked in shared memory between spans
	OneSpan       bool // a phase's steps are one tensor-core sum: its result, no running sums
	Acc           bool // fp32 running sums in registers
	// EarlyA: a step's inputs load while the step before's products run
	// (wgmma, where registers allow); LateA: after them. Neither: staged.
	EarlyA, LateA bool
	Slots         int // re-laid positions a re-layout unit writes: a Winograd pair's products, else 1
	ReadPos       int // input positions a re-layout block reads
	// Winograd's transforms as C initialisers, a row a product (In,
	// Weight): plan.Winograd's.
	WinogradIn, WinogradWeight []string
	// WinogradSums: per output of the pair, what product p's sums m add
	// to it (plan.Winograd's Out row): a condition on p (none: every
	// product adds) and the value, literal coefficients chosen by p, so
	// that the hot loop holds no coefficient in a register.
	WinogradSums []WinogradSum
	WinogradOut  []string // Out's rows, "(1, 1, 1, 0)", for the comment
	MinBlocks    int      // the launch bounds' blocks an SM: the tile's on sm_90a, 1 for mma.sync
	// TapRows: the tap table's entries, a few to a line.
	TapRows [][]WGMMATap
}

// WinogradSum is what one output of a Winograd pair adds where product
// p's span ends: Value (of its sums m) where Cond holds.
type WinogradSum struct{ Cond, Value string }

// winogradSum writes an output's row of coefficients over the products:
// the products of coefficient 0 left out by the condition, the most
// common other coefficient the value's default, the rest chosen by p.
func winogradSum(row []float64) WinogradSum {
	var skip []string
	count := map[float64]int{}
	for p, c := range row {
		if c == 0 {
			skip = append(skip, fmt.Sprintf("p != %d", p))
		} else {
			count[c]++
		}
	}
	common := 0.0
	for _, c := range row {
		if c != 0 && (common == 0 || count[c] > count[common]) {
			common = c
		}
	}
	times := func(c float64) string {
		switch c {
		case 1:
			return "m"
		case -1:
			return "-m"
		}
		return cFloat(c) + " * m"
	}
	var value string
	for p, c := range row {
		if c != 0 && c != common {
			value += fmt.Sprintf("p == %d ? %s : ", p, times(c))
		}
	}
	return WinogradSum{Cond: strings.Join(skip, " && "), Value: value + times(common)}
}

// WGMMATap is an entry of a wgmma tile's tap table.
type WGMMATap struct{ Flat, Off int }

func newWGMMABlocks(p *plan.Plan) *WGMMABlocks {
	t, w := p.Tile.WGMMA, p.WGMMA
	b := &WGMMABlocks{
		Hopper: p.Target.WGMMA, Bulk: p.Target.WGMMA && t.BulkWeights, StageA: t.CpAsync,
		PhasePipeline: t.KWInN || t.CpAsync, Park: w.Parked > 0, OneSpan: w.OneSpan,
		Slots: 1, ReadPos: w.RelayoutPos, MinBlocks: 1,
	}
	b.Acc = t.Winograd || !b.OneSpan && !b.Park
	b.EarlyA = b.Hopper && w.EarlyA && !b.StageA
	b.LateA = !b.StageA && !b.EarlyA
	if wino := w.Winograd; wino != nil {
		b.Slots, b.ReadPos = wino.Products(), wino.ReadPos(w.RelayoutPos)
		b.WinogradIn, b.WinogradWeight = cFloatRows(wino.In), cFloatRows(wino.Weight)
		for _, row := range wino.Out {
			var c []string
			for _, v := range row {
				c = append(c, strconv.FormatFloat(v, 'g', -1, 64))
			}
			b.WinogradOut = append(b.WinogradOut, "("+strings.Join(c, ", ")+")")
			b.WinogradSums = append(b.WinogradSums, winogradSum(row))
		}
	}
	if b.Hopper {
		b.MinBlocks = t.MinBlocks
	}
	for i, tp := range p.Taps {
		if i%tapsPerRow == 0 {
			b.TapRows = append(b.TapRows, nil)
		}
		b.TapRows[len(b.TapRows)-1] = append(b.TapRows[len(b.TapRows)-1], WGMMATap{tp.Flat, w.TapOffsets[i]})
	}
	return b
}

// tapsPerRow: tap table entries a line of the emitted table.
const tapsPerRow = 6

// WGMMAAsm are the operand lists of the wgmma instruction for nd
// accumulators per thread: %0..%nd-1 the sums, then the four A registers,
// the descriptor and the scale-d flag.
type WGMMAAsm struct {
	Outs, A, Desc, Scale string // "{%0, ..., %23}", "{%24, %25, %26, %27}", "%28", "%29"
	Acc                  string // the sums' constraints: "+f"(d[0]), ...
}

func newWGMMAAsm(nd int) WGMMAAsm {
	outs, acc := make([]string, nd), make([]string, nd)
	for i := range nd {
		outs[i] = "%" + strconv.Itoa(i)
		acc[i] = `"+f"(d[` + strconv.Itoa(i) + `])`
	}
	return WGMMAAsm{
		Outs:  "{" + strings.Join(outs, ", ") + "}",
		A:     fmt.Sprintf("{%%%d, %%%d, %%%d, %%%d}", nd, nd+1, nd+2, nd+3),
		Desc:  "%" + strconv.Itoa(nd+4),
		Scale: "%" + strconv.Itoa(nd+5),
		Acc:   strings.Join(acc, ", "),
	}
}

// restrideDoc says along which axes the plan raised the stride (the input
// has one position there), to what, and why; "" where it raised none.
func restrideDoc(axes [3]bool, c geom.Conv) string {
	var names []string
	var strides []string
	for a, on := range axes {
		if on {
			names = append(names, "DHW"[a:a+1])
			strides = append(strides, strconv.Itoa(c.Stride[a]))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return wrapText(fmt.Sprintf("Along %s the input has one position, which meets each output through one tap "+
		"whatever the stride: the kernels take stride %s there (the kernel's dilated extent), "+
		"so each stride phase has at most one tap and no products read outside the input.",
		strings.Join(names, ", "), strings.Join(strides, ", ")), 80)
}

// tapFoldDoc says how the kernel computes convolution pc as c, its first
// axes taps folded into output channels (geom.Conv.FoldOnePositionTaps).
func tapFoldDoc(pc, c geom.Conv, axes int) string {
	names := strings.Join(strings.Split("DHW"[:axes], ""), ", ")
	gemm := ""
	if axes == 3 {
		gemm = " It is one GEMM: batch rows, out_channels x taps columns, in_channels deep."
	}
	if c.Bias {
		gemm += fmt.Sprintf(" Channel c*%d + tap adds the module's bias c.", c.OutChannels/pc.OutChannels)
	}
	return wrapText(fmt.Sprintf("Along %s the input has one position and nothing crops or spreads the output, so "+
		"output position o there comes from tap o alone: the kernel computes those positions as output channels, "+
		"a convolution with %d output channels (channel c*%d + tap) and kernel %v, whose output and weight are, in memory, "+
		"the module's (%s) and (%s).%s",
		names, c.OutChannels, c.OutChannels/pc.OutChannels, tuple(c.Kernel),
		ints(pc.Batch, pc.OutChannels, pc.Out()[0], pc.Out()[1], pc.Out()[2]),
		ints(pc.InChannels, pc.OutPerGroup(), pc.Kernel[0], pc.Kernel[1], pc.Kernel[2]), gemm), 80)
}

// summary states the problem in one paragraph for docstrings.
func summary(c geom.Conv, out [3]int) string {
	return fmt.Sprintf("Input (%d, %d, %d, %d, %d) -> output (%d, %d, %d, %d, %d); kernel %v, stride %v,\n"+
		"padding %v, output_padding %v, dilation %v, groups %d, bias %v.",
		c.Batch, c.InChannels, c.In[0], c.In[1], c.In[2], c.Batch, c.OutChannels, out[0], out[1], out[2],
		tuple(c.Kernel), tuple(c.Stride), tuple(c.Padding), tuple(c.OutputPadding), tuple(c.Dilation), c.Groups,
		map[bool]string{true: "True", false: "False"}[c.Bias])
}

// FoldView is a depth fold's weight re-layout as the template prints it.
type FoldView struct {
	ProblemWeightShape string // the module's weight, (Cin, CoutG, KD, KH, KW)
	I                  string // the re-layout's index type
	KHW                int    // kernel_h x kernel_w
	// Tap0 is the first tap where the taps that reach the output are
	// consecutive (0 prints nothing); else TapTable lists them.
	Tap0     int
	TapTable string
}

func newFoldView(f *plan.DepthFold, coutG int) *FoldView {
	c := f.Problem
	v := &FoldView{ProblemWeightShape: ints(c.InChannels, coutG, c.Kernel[0], c.Kernel[1], c.Kernel[2]), I: "int", KHW: c.Kernel[1] * c.Kernel[2]}
	if c.WeightLen() > math.MaxInt32-plan.RepackBlockThreads {
		v.I = "long long"
	}
	ks, consecutive := make([]int, len(f.Taps)), true
	for j, t := range f.Taps {
		ks[j] = t.K
		consecutive = consecutive && t.K == f.Taps[0].K+j
	}
	if consecutive {
		v.Tap0 = f.Taps[0].K
	} else {
		v.TapTable = ints(ks...)
	}
	return v
}

// foldDoc says in the docstring how a depth fold changes the problem:
// the convolution the kernel computes instead (c, output out) and why.
func foldDoc(f *plan.DepthFold, c geom.Conv, out [3]int) string {
	var ranges []string
	for _, t := range f.Taps {
		ranges = append(ranges, fmt.Sprintf("tap %d: depths %d to %d", t.K, t.Lo, t.Hi-1))
	}
	sum := ""
	if f.Op == "sum" {
		sum = fmt.Sprintf(" The sum over depth is %d times that mean (the bias counts once a depth): the convolution's store multiplies by %d.", f.OutDepth(), f.OutDepth())
	}
	return wrapText(fmt.Sprintf("The %s over depth is moved in front of the convolution (exact in real arithmetic): output depth o adds, for each "+
		"depth tap k, slice k of the weight applied to input depth d where o = d*stride_d - padding_d + k*dilation_d, so the depth mean is "+
		"each tap's slice applied to the sum of x over the input depths whose outputs land in the output, over %d. A first kernel sums x over "+
		"each tap's range (%s), in double, and divides by %d; a second re-lays the weight to match. The kernel then computes a transposed "+
		"convolution of one depth position: input (%d, %d, 1, %d, %d) -> output (%d, %d, %d, %d, %d), kernel %v, input channel ci*%d + j "+
		"holding channel ci summed over the j-th tap's range; %.1f GFLOP where the convolution takes %.1f.%s",
		f.Op, f.OutDepth(), strings.Join(ranges, "; "), f.OutDepth(), c.Batch, c.InChannels, c.In[1], c.In[2], c.Batch, c.OutChannels, out[0], out[1], out[2],
		tuple(c.Kernel), len(f.Taps), c.FLOPs()/1e9, f.Problem.FLOPs()/1e9, sum), 80)
}

func tuple(v [3]int) string { return "(" + ints(v[0], v[1], v[2]) + ")" }

func ints(v ...int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// File is one rendered output file.
type File struct {
	Path string // slash-separated, relative to the output root
	Data []byte
}

// Renderer renders specs with the parsed templates.
type Renderer struct{ t *template.Template }

// NewRenderer parses the templates once.
func NewRenderer() (*Renderer, error) {
	t, err := templates.Parse()
	if err != nil {
		return nil, err
	}
	return &Renderer{t: t}, nil
}

// Render produces every file of one spec from its plans (one per
// target): the reference problem and one submission per backend and
// target.
func (r *Renderer) Render(ps []*plan.Plan, specPath string) ([]File, error) {
	var files []File
	for i, p := range ps {
		v, err := newView(p, specPath)
		if err != nil {
			return nil, err
		}
		names := p.Spec.Kernel.Backends
		if i == 0 {
			names = append([]string{"problem"}, names...)
		}
		for _, name := range names {
			var buf bytes.Buffer
			tmpl, view := name+".py.tmpl", v
			if name == "cuda" && v.Spectral != nil {
				tmpl = "cuda_spectral.py.tmpl"
			}
			if name == "triton" && p.Unfolded != nil {
				// A folded plan's Triton file computes the forward as written.
				if view, err = newView(p.Unfolded, specPath); err != nil {
					return nil, err
				}
			}
			if err := r.t.ExecuteTemplate(&buf, tmpl, view); err != nil {
				return nil, fmt.Errorf("%s: rendering %s for %s: %w", commentSafe(specPath), name, p.Target.Name, err)
			}
			file := SubmissionFile(name, p.Target)
			if name == "problem" {
				file = ProblemFile
			}
			files = append(files, File{Path: p.Spec.Name + "/" + file, Data: normalize(buf.Bytes())})
		}
	}
	return files, nil
}

// ProblemFile is the reference problem's file in a spec's folder.
const ProblemFile = "problem.py"

// SubmissionFile is a submission's file in its spec's folder: the backend
// and the target, "cuda.sm80.py".
func SubmissionFile(backend string, t plan.Target) string {
	return backend + "." + t.Name + ".py"
}

// normalize strips trailing spaces and ends the file with one newline, so
// output bytes do not depend on template whitespace accidents.
func normalize(b []byte) []byte {
	lines := strings.Split(strings.TrimRight(string(b), "\n "), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// WeightRead is a direct thread's read of one (tap, channel)'s bn weights
// from shared memory: as float4s, or for one or two channels a float or a
// float2; Lanes are the fields of each, in order.
type WeightRead struct {
	Type  string
	Lanes []string
}

// Width is the weights one read holds.
func (w WeightRead) Width() int { return len(w.Lanes) }

func newWeightRead(bn int) WeightRead {
	switch {
	case bn >= 4:
		return WeightRead{"float4", []string{".x", ".y", ".z", ".w"}}
	case bn == 2:
		return WeightRead{"float2", []string{".x", ".y"}}
	}
	return WeightRead{"float", []string{""}}
}

// cFloatRows writes each row as a C initialiser of float literals.
func cFloatRows(rows [][]float64) []string {
	var out []string
	for _, row := range rows {
		var s []string
		for _, v := range row {
			s = append(s, cFloat(v))
		}
		out = append(out, "{"+strings.Join(s, ", ")+"}")
	}
	return out
}
