package gen

import (
	"fmt"

	"convtgen/gen/plan"
)

// TritonView is what templates/triton.py.tmpl prints beyond the shared
// View: the Triton kernel's tiling and launch options, decided here so that
// the template only prints.
//
// The Triton kernel is one launch over all stride phases, interleaved: the
// program id's residue picks the phase, so neighbouring programs compute
// the same rows of different phases, whose partial-sector stores then meet
// in L2. Each program reads its phase's residue, extents and taps from
// Rows, computed here (residueTaps, which the tests hold against the plan):
// per dimension the taps reaching residue r are an arithmetic progression
// of kernel indices k0, k0+KStep, ... whose input offsets fall by OffStep
// per step.
type TritonView struct {
	Kernel  string // the @triton.jit function
	Wrapper string // the Python function that checks, allocates and launches

	// InputPrecision is tl.dot's input_precision: "ieee" (true fp32 FMA)
	// for precision fp32, "tf32x3" (three TF32 tensor-core products,
	// fp32-level error) for 3xtf32. Never plain "tf32".
	InputPrecision string
	// SliceSum: each reduction step's tl.dot starts from zero and is added
	// to the running sum with an fp32 add. The tensor cores truncate their
	// sums, a bias that grows when thousands of products accumulate in the
	// same registers; bounding each tensor-core sum to one step keeps the
	// error at fp32 level. Set for tf32x3 (FMA rounds correctly).
	SliceSum bool

	// Tiling: a program computes BlockM output positions of one phase by
	// BlockN output channels of one group, BlockK input channels per step.
	// tl.dot needs every block dimension to be a power of two of at least
	// 16; channel counts below that are padded with masks.
	BlockM, BlockN, BlockK int
	NumWarps, NumStages    int
	ChannelsLast           bool // both dot operands contiguous along input channels
	NTiles                 int  // BlockN tiles over one group's output channels
	CIChunks               int  // BlockK chunks over one group's input channels
	MTiles                 int  // BlockM tiles over the largest phase's rows
	NumPhases              int  // phases spread over programs: stride_d * stride_h * stride_w, or stride_d * stride_h when W is fused
	Programs               int  // NumPhases * MTiles * NTiles * groups

	// FuseW: every program computes all WStep = stride_w * WFold outputs
	// along W of its rows: its rows step WStep outputs along W (WFold input
	// positions), and its BlockN columns are (phase, channel) pairs, WPad
	// phases (a power of two) of BlockN/WPad channels. Along W it steps
	// over the WShifts input offsets WOffMax, WOffMax-1, ... that any
	// phase's taps read; per column the weight is that phase's tap at the
	// offset, or zero where none is (WUsed of the WShifts*WPhases pairs are
	// taps).
	//
	// Only residues WR0, WR0+WGcd, ... can have taps (WGcd = gcd(stride_w,
	// dilation_w)): those WPhases are the columns. The others hold only
	// the bias; each column's program writes the WGcd-1 residues after it
	// (mod WStep) from the same rows, so that every output row is written
	// whole by one program and no tensor-core work goes to them.
	FuseW            bool
	WFold            int // consecutive outputs of each W residue per row (1: none folded)
	WStep            int // outputs per row along W: stride_w * WFold fused, else stride_w
	WGcd, WR0        int // fused: the residues with taps are WR0 + WGcd*j (else 1, 0)
	WPhases, WPad    int
	COBlock          int // output channels per program: BlockN / WPad
	WShifts, WOffMax int
	WUsed            int

	// PadInput: the input is copied into a zero border, PadLo elements
	// before it per dimension (XShape: the padded D, H, W), that holds
	// every read of every program, so input loads need no bounds masks (set
	// only at stride 1, and when BlockK divides the group's input channels
	// or the reduction is flat).
	PadInput    bool
	PadLo       [3]int
	XShape      [3]int
	XShapeTuple string // the re-laid input's shape (CopyInput), in its layout

	// FlatK: the reduction steps over (tap, input channel) as one index,
	// BlockK columns each decoding its own tap (set unless W is fused).
	FlatK bool

	// SplitWeight: 3xTF32 with the weight split into its TF32 parts once
	// per forward and the input tile split in the kernel; three tl.dot
	// with input_precision "tf32" on exact TF32 parts.
	SplitWeight bool

	// The re-layout kernel, launched before the GEMM in every forward,
	// writes every element of the re-laid input (when CopyInput: channels
	// last or inside a border; else the GEMM reads the module's input as it
	// is) and of the re-laid (and split) weight, in one launch where torch
	// would take a zero fill, a strided copy and four elementwise passes:
	// its first XRows programs each copy one (batch, d, h) row of the
	// input's layout, RelayoutBlockW positions by RelayoutBlockC channels
	// at a time, through a transposing tile that keeps both the loads and
	// the stores contiguous; the WeightPrograms after them re-lay
	// WeightBlock weight elements each.
	Relayout                       string
	CopyInput                      bool
	XRows                          int
	RelayoutBlockW, RelayoutBlockC int
	WeightBlock, WeightPrograms    int
	RelayoutPrograms               int
	WeightRelaid                   string // the re-laid weight's shape: (groups, taps, out/g, in/g) or (groups, taps, in/g, out/g)

	// Int64 is set when a tensor has 2^31 elements or more: the kernel then
	// widens its program id and index vectors so every offset is 64-bit.
	Int64 bool

	KStep   [3]int // stride / gcd(stride, dilation), per dimension
	OffStep [3]int // dilation / gcd(stride, dilation), per dimension

	Phases []TritonPhase // every phase, in the kernel's order (for the docstring)

	// Rows are the kernel's NumPhases phases, in program order (program p
	// computes row p mod NumPhases). With more than one (PhaseTable) the
	// kernel loads its row from a table the module keeps, of PhaseDType
	// (int64 with Int64, so that every offset computed from a row is
	// 64-bit): a loaded value has no range the compiler knows, so it cannot
	// narrow the phase arithmetic to 8 bits, which Triton 3.6 miscompiled
	// under pipelined channels-last loads when it derived the phase from
	// the program id. With one phase the row is printed as constants, which
	// fold.
	Rows        []TritonRow
	PhaseTable  bool
	PhaseDType  string
	PhaseFields int // entries of a row: TritonPhaseFields
}

// TritonRow is one row of the Triton kernel's phase table: per dimension
// (D, H, W) the output residue, the outputs (o = R + stride*q, W stepping
// WStep outputs), the first tap's kernel index, the taps (KStep apart) and
// the first tap's input offset (falling by OffStep a tap). Fused, the W
// entries span every W shift: from offset WOffMax down, WShifts of them.
type TritonRow struct {
	R, Q, K0, Taps, Off0 [3]int
}

// TritonPhaseFields is the number of entries of a TritonRow in the table.
const TritonPhaseFields = 15

// Tuple is the row as the table prints it, in TritonRow's field order.
func (r TritonRow) Tuple() string {
	var v []int
	for _, f := range [][3]int{r.R, r.Q, r.K0, r.Taps, r.Off0} {
		v = append(v, f[:]...)
	}
	return ints(v...)
}

// TritonPhase is one stride phase as the Triton kernel computes it.
type TritonPhase struct {
	R     [3]int // output residue: o = R + stride*q
	Q     [3]int // outputs of the phase per dimension
	M     int    // batch * Q[0]*Q[1]*Q[2], the GEMM's rows
	Taps  int    // contributing taps: Count[0]*Count[1]*Count[2]
	Count [3]int // taps per dimension
	K0    [3]int // kernel index of the first tap per dimension (the kernel size when none)
	Off0  [3]int // input offset of the first tap per dimension
}

// Triton tiling defaults.
const (
	tritonBlockM    = 128 // output positions per program (less only for tiny problems)
	tritonMaxBlockN = 64  // output channels per program
	tritonMaxBlockK = 32  // input channels per reduction step
	tritonMinBlock  = 16  // tl.dot's smallest block dimension
	tritonNumWarps  = 4
	tritonNumStages = 3 // loads in flight ahead of the tl.dot (3 x 24 KiB of shared memory at most)
)

// TritonInputPrecision maps a spec precision to tl.dot's input_precision.
var TritonInputPrecision = map[string]string{"fp32": "ieee", "3xtf32": "tf32x3"}

// newTritonLayout computes the Triton backend's numbers from the plan and
// the spec's Triton choices (zero fields take the defaults above), all but
// the phase table: what the chooser ranks candidates by.
func newTritonLayout(p *plan.Plan) *TritonView {
	c := p.Conv
	k := p.Spec.Kernel
	precision := k.PrecisionFor("triton")
	prec, ok := TritonInputPrecision[precision]
	if !ok {
		panic(fmt.Sprintf("triton: no tl.dot input_precision for precision %q", precision))
	}
	// The largest phase is residue 0 in every dimension (the CUDA plan's
	// phases may leave W unsplit, so they are not counted here).
	maxM := c.Batch
	for i := range 3 {
		maxM *= divUp(p.Out[i], c.Stride[i])
	}
	or := func(v, def int) int {
		if v != 0 {
			return v
		}
		return def
	}
	t := k.Triton
	v := &TritonView{
		Kernel:         p.Spec.Name + "_phase_igemm",
		Wrapper:        "implicit_gemm_forward",
		InputPrecision: prec,
		SliceSum:       prec == "tf32x3",
		BlockM:         or(t.BlockM, min(tritonBlockM, max(32, pow2AtLeast(maxM)))),
		BlockN:         or(t.BlockN, tritonBlockN(p.CoutG)),
		BlockK:         or(t.BlockK, tritonBlockK(p.CinG)),
		NumWarps:       or(t.Warps, tritonNumWarps),
		NumStages:      or(t.Stages, tritonNumStages),
		ChannelsLast:   t.ChannelsLast,
		SplitWeight:    t.SplitWeight && prec == "tf32x3",
		Int64:          max(c.InputLen(), c.OutputLen(), c.WeightLen()) >= 1<<31,
	}
	for i := range 3 {
		g := gcdInt(c.Stride[i], c.Dilation[i])
		v.KStep[i] = c.Stride[i] / g
		v.OffStep[i] = c.Dilation[i] / g
	}
	all := c.Stride[0] * c.Stride[1] * c.Stride[2]
	v.Phases = make([]TritonPhase, 0, all)
	// Each dimension's residues once (a phase combines one of each).
	var dims [3][][3]int
	for i := range 3 {
		for r := range c.Stride[i] {
			k0, count, off0 := residueTaps(r, c.Kernel[i], c.Stride[i], c.Padding[i], c.Dilation[i], v.KStep[i])
			dims[i] = append(dims[i], [3]int{k0, count, off0})
		}
	}
	for ph := range all {
		r := [3]int{ph / (c.Stride[1] * c.Stride[2]), ph / c.Stride[2] % c.Stride[1], ph % c.Stride[2]}
		tp := TritonPhase{R: r, M: c.Batch, Taps: 1}
		for i := range 3 {
			tp.Q[i] = divUp(p.Out[i]-r[i], c.Stride[i])
			tp.M *= tp.Q[i]
			d := dims[i][r[i]]
			tp.K0[i], tp.Count[i], tp.Off0[i] = d[0], d[1], d[2]
			tp.Taps *= tp.Count[i]
		}
		v.Phases = append(v.Phases, tp)
	}
	v.WPhases, v.WPad, v.WFold, v.WStep, v.WGcd = 1, 1, 1, c.Stride[2], 1
	if fold := max(1, t.FoldW); t.FuseW && c.Stride[2]*fold > 1 {
		v.FuseW, v.WFold, v.WStep = true, fold, c.Stride[2]*fold
		// Residue r has a tap only if gcd(stride, dilation) divides r + pad.
		v.WGcd = gcdInt(c.Stride[2], c.Dilation[2])
		v.WR0 = (v.WGcd - c.Padding[2]%v.WGcd) % v.WGcd
		v.WPhases = v.WStep / v.WGcd
		v.WPad = pow2AtLeast(v.WPhases)
		lo, hi, used := wShifts(c.Kernel[2], c.Stride[2], fold, c.Padding[2], c.Dilation[2])
		v.WShifts, v.WOffMax, v.WUsed = hi-lo+1, hi, used
		// Rows cover the whole W grid of residue 0 (the longest).
		maxM = 0
		for _, tp := range v.Phases {
			maxM = max(maxM, c.Batch*tp.Q[0]*tp.Q[1]*divUp(p.Out[2], v.WStep))
		}
		if t.BlockN == 0 {
			v.BlockN = max(tritonMinBlock, min(tritonMaxBlockN, v.WPad*pow2AtLeast(p.CoutG)))
		}
		v.BlockN = max(v.BlockN, v.WPad) // at least one channel of each phase
	}
	v.FlatK = t.FlatK && !v.FuseW
	v.NumPhases = all
	if v.FuseW {
		v.NumPhases /= c.Stride[2]
	}
	v.COBlock = v.BlockN / v.WPad
	v.NTiles = divUp(p.CoutG, v.COBlock)
	v.CIChunks = divUp(p.CinG, v.BlockK)
	v.MTiles = max(1, divUp(maxM, v.BlockM))
	v.Programs = v.NumPhases * v.MTiles * v.NTiles * c.Groups
	v.XShape = c.In
	v.CopyInput = v.ChannelsLast
	// The padded input is read without bounds masks, so only whole channel
	// chunks (with a partial chunk the channel mask stays and the border
	// would save nothing; the flat reduction masks only its last step's
	// tail, whatever the channels), and only at stride 1, where every
	// program runs reduction steps: with strides some programs run none,
	// and there Triton's software pipeline (num_stages > 1) issues unmasked
	// loads that fault or corrupt the sum (a row mask does not prevent it).
	if t.PadInput && (p.CinG%v.BlockK == 0 || v.FlatK) && c.Stride == [3]int{1, 1, 1} {
		v.PadInput = true
		lo, hi := inputPads(v.Phases, v.OffStep, c.In)
		if v.FuseW {
			// Along W a fused row reads input WFold*q + offset, for every
			// offset, up to the longest residue's last q.
			last := v.WFold*(divUp(p.Out[2], v.WStep)-1) + v.WOffMax
			lo[2] = max(0, v.WShifts-1-v.WOffMax)
			hi[2] = max(0, last-(c.In[2]-1))
		}
		v.PadLo = lo
		for i := range 3 {
			v.XShape[i] = c.In[i] + lo[i] + hi[i]
		}
		v.CopyInput = true
	}
	v.setRelayout(p)
	return v
}

// newTritonView is the whole view a Triton file prints: the layout and its
// phase table.
func newTritonView(p *plan.Plan) *TritonView {
	v := newTritonLayout(p)
	v.setRows(p)
	return v
}

// setRows lays out the kernel's phase table: one row per phase of D, H
// and (unless fused) W, the residues in the kernel's order, W fastest.
func (v *TritonView) setRows(p *plan.Plan) {
	c := p.Conv
	rw := c.Stride[2] // W residues spread over programs
	if v.FuseW {
		rw = 1
	}
	v.Rows = make([]TritonRow, 0, v.NumPhases)
	for ph := range v.NumPhases {
		r := [3]int{ph / (c.Stride[1] * rw), ph / rw % c.Stride[1], ph % rw}
		row := TritonRow{R: r}
		for i := range 3 {
			row.K0[i], row.Taps[i], row.Off0[i] = residueTaps(r[i], c.Kernel[i], c.Stride[i], c.Padding[i], c.Dilation[i], v.KStep[i])
			row.Q[i] = divUp(p.Out[i]-r[i], c.Stride[i])
		}
		if v.FuseW {
			row.Q[2] = divUp(p.Out[2], v.WStep)
			row.K0[2], row.Taps[2], row.Off0[2] = 0, v.WShifts, v.WOffMax
		}
		v.Rows = append(v.Rows, row)
	}
	v.PhaseTable, v.PhaseFields = v.NumPhases > 1, TritonPhaseFields
	v.PhaseDType = "int32"
	if v.Int64 {
		v.PhaseDType = "int64"
	}
}

// Re-layout kernel tiles: a transposing tile of at most relayoutTile
// elements (64 channels by 128 positions), and weightBlock weight
// elements per program.
const (
	relayoutTile = 8192
	relayoutMaxC = 64
	relayoutMaxW = 128
	weightBlock  = 1024
)

// setRelayout sizes the re-layout kernel's launch and tiles.
func (v *TritonView) setRelayout(p *plan.Plan) {
	c := p.Conv
	x := v.XShape
	v.Relayout = p.Spec.Name + "_relayout"
	v.XShapeTuple = ints(c.Batch, c.InChannels, x[0], x[1], x[2])
	if v.ChannelsLast {
		v.XShapeTuple = ints(c.Batch, x[0], x[1], x[2], c.InChannels)
	}
	if v.CopyInput {
		v.XRows = c.Batch * x[0] * x[1]
	}
	v.RelayoutBlockC = min(relayoutMaxC, pow2AtLeast(c.InChannels))
	v.RelayoutBlockW = min(relayoutMaxW, relayoutTile/v.RelayoutBlockC, pow2AtLeast(x[2]))
	v.WeightBlock = weightBlock
	v.WeightPrograms = divUp(c.WeightLen(), weightBlock)
	v.RelayoutPrograms = v.XRows + v.WeightPrograms
	v.WeightRelaid = ints(c.Groups, c.Taps(), p.CinG, p.CoutG)
	if v.ChannelsLast {
		v.WeightRelaid = ints(c.Groups, c.Taps(), p.CoutG, p.CinG)
	}
}

// wShifts: along W, with fold outputs of each residue per row, output
// o = r + stride*fold*q (r below stride*fold) reads input fold*q + (r +
// pad - k*dil)/stride through tap k when that divides. Each tap k serves
// exactly one residue mod stride, so fold of the residues: the (phase,
// offset) pairs that are taps number size*fold; lo..hi is the range of
// their offsets, the shifts a fused program steps over.
func wShifts(size, stride, fold, pad, dil int) (lo, hi, used int) {
	first := true
	for k := range size {
		for r := range stride * fold {
			if n := r + pad - k*dil; n%stride == 0 {
				off := n / stride
				if first || off < lo {
					lo = off
				}
				if first || off > hi {
					hi = off
				}
				first = false
				used++
			}
		}
	}
	return lo, hi, used
}

// inputPads is the zero border that holds every input read of the
// unfused kernel: per dimension, over every phase with rows and taps, q
// from 0 to its extent plus each tap's offset (offsets fall by offStep
// along the taps).
func inputPads(phases []TritonPhase, offStep, in [3]int) (lo, hi [3]int) {
	for i := range 3 {
		minRead, maxRead := 0, in[i]-1
		for _, tp := range phases {
			if tp.M == 0 || tp.Taps == 0 {
				continue
			}
			minRead = min(minRead, tp.Off0[i]-(tp.Count[i]-1)*offStep[i])
			maxRead = max(maxRead, tp.Q[i]-1+tp.Off0[i])
		}
		lo[i], hi[i] = -minRead, maxRead-(in[i]-1)
	}
	return lo, hi
}

// residueTaps: along one dimension, the taps reaching outputs
// o = r + stride*q are the kernel indices k with (r + pad - k*dil)
// divisible by the stride. The first, k0, is below kStep (the
// progression's step) if there is one; count of them follow kStep apart,
// and tap k0 reads input index q + off0. No tap: k0 = size, count 0 (off0
// is then never used). Integer division truncates toward zero; it is exact
// wherever a tap exists.
func residueTaps(r, size, stride, pad, dil, kStep int) (k0, count, off0 int) {
	k0 = size
	for j := 0; j < kStep && j < size; j++ {
		if (r+pad-j*dil)%stride == 0 && k0 == size {
			k0 = j
		}
	}
	count = (size - k0 + kStep - 1) / kStep
	off0 = (r + pad - k0*dil) / stride
	return k0, count, off0
}

// tritonBlockN covers a group's output channels with one power-of-two tile
// when they fit in 64 (each input tile is then read once per group), else
// 64-wide tiles; never below tl.dot's 16.
func tritonBlockN(coutG int) int {
	return min(tritonMaxBlockN, max(tritonMinBlock, pow2AtLeast(coutG)))
}

// tritonBlockK is 32 or 16 input channels per step, whichever pads the
// group's channels less (32 on a tie: fewer steps). 48 channels take three
// steps of 16 rather than two of 32 with a quarter of the products wasted.
func tritonBlockK(cinG int) int {
	if divUp(cinG, tritonMaxBlockK)*tritonMaxBlockK <= divUp(cinG, tritonMinBlock)*tritonMinBlock {
		return tritonMaxBlockK
	}
	return tritonMinBlock
}

func divUp(a, b int) int { return (a + b - 1) / b }

func pow2AtLeast(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

func gcdInt(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
