package gen

import (
	"fmt"

	"convtgen/gen/plan"
)

// TritonView is what templates/triton.py.tmpl prints beyond the shared
// View: the Triton kernel's tiling, launch options and per-phase constants,
// all decided here so that the template only prints.
//
// The Triton kernel runs one launch per stride phase. Inside a phase the
// contributing taps are, per dimension, an arithmetic progression of kernel
// indices (k = K0 + j*KStep) whose input offsets fall by OffStep per step
// (off = Off0 - j*OffStep); a phase's taps are the product of its three
// progressions, in the plan's order (depth slowest, width fastest). So each
// phase needs only nine small numbers for its taps instead of a table.
type TritonView struct {
	Kernel  string // the @triton.jit function
	Wrapper string // the Python function that checks, allocates and launches

	// InputPrecision is tl.dot's input_precision: "ieee" (true fp32 FMA)
	// for precision fp32, "tf32x3" (three TF32 tensor-core products,
	// fp32-level error) for 3xtf32. Never plain "tf32".
	InputPrecision string

	// Tiling: a program computes BlockM output positions of one phase by
	// BlockN output channels of one group, BlockK input channels per step.
	// tl.dot needs every block dimension to be a power of two of at least
	// 16; channel counts below that are padded with masks.
	BlockM, BlockN, BlockK int
	NumWarps, NumStages    int
	NTiles                 int // BlockN tiles over one group's output channels
	CIChunks               int // BlockK chunks over one group's input channels

	// Int64 is set when a tensor has 2^31 elements or more: the kernel then
	// widens its index vectors so every offset is computed in 64 bits.
	Int64 bool

	KStep   [3]int // stride / gcd(stride, dilation), per dimension
	OffStep [3]int // dilation / gcd(stride, dilation), per dimension

	Phases []TritonPhase // the plan's phases, in the plan's order
}

// TritonPhase is one stride phase as the Triton kernel sees it.
type TritonPhase struct {
	R      [3]int // output residue: o = R + stride*q
	Q      [3]int // outputs of the phase per dimension
	M      int    // batch * Q[0]*Q[1]*Q[2], the GEMM's rows
	MTiles int    // BlockM tiles over M
	Grid   int    // programs of the launch: groups * MTiles * NTiles
	Taps   int    // contributing taps: Count[0]*Count[1]*Count[2]
	Count  [3]int // taps per dimension (all zero when the phase has none)
	K0     [3]int // kernel index of the first tap per dimension
	Off0   [3]int // input offset of the first tap per dimension
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

// newTritonView computes the Triton backend's numbers from the plan. It
// panics only if the plan breaks its own invariant (a phase's taps not a
// product of arithmetic progressions), which the tests sweep for.
func newTritonView(p *plan.Plan) *TritonView {
	c := p.Conv
	prec, ok := TritonInputPrecision[p.Spec.Kernel.Precision]
	if !ok {
		panic(fmt.Sprintf("triton: no tl.dot input_precision for precision %q", p.Spec.Kernel.Precision))
	}
	maxM := 0
	for _, ph := range p.Phases {
		maxM = max(maxM, ph.M)
	}
	v := &TritonView{
		Kernel:         p.Spec.Name + "_phase_igemm",
		Wrapper:        "implicit_gemm_forward",
		InputPrecision: prec,
		BlockM:         min(tritonBlockM, max(32, pow2AtLeast(maxM))),
		BlockN:         tritonBlockN(p.CoutG),
		BlockK:         tritonBlockK(p.CinG),
		NumWarps:       tritonNumWarps,
		NumStages:      tritonNumStages,
		Int64:          max(c.InputLen(), c.OutputLen(), c.WeightLen()) >= 1<<31,
	}
	v.NTiles = divUp(p.CoutG, v.BlockN)
	v.CIChunks = divUp(p.CinG, v.BlockK)
	for i := range 3 {
		g := gcdInt(c.Stride[i], c.Dilation[i])
		v.KStep[i] = c.Stride[i] / g
		v.OffStep[i] = c.Dilation[i] / g
	}
	for _, ph := range p.Phases {
		tp := TritonPhase{R: ph.R, Q: ph.Q, M: ph.M, MTiles: divUp(ph.M, v.BlockM), Taps: ph.TapCount}
		tp.Grid = c.Groups * tp.MTiles * v.NTiles
		taps := p.Taps[ph.TapStart : ph.TapStart+ph.TapCount]
		if len(taps) > 0 {
			// Taps come depth-major: the first tap starts every progression,
			// and the counts are the distinct kernel indices per dimension.
			for i := range 3 {
				tp.K0[i], tp.Off0[i] = taps[0].K[i], taps[0].Off[i]
				seen := map[int]bool{}
				for _, t := range taps {
					seen[t.K[i]] = true
				}
				tp.Count[i] = len(seen)
			}
		}
		if got := tp.ExpandTaps(v, c.Kernel); !sameTaps(got, taps) {
			panic(fmt.Sprintf("triton: %s: the taps of phase %v are not the product of arithmetic progressions: plan %v, progressions %v",
				p.Spec.Name, ph.R, taps, got))
		}
		v.Phases = append(v.Phases, tp)
	}
	return v
}

// ExpandTaps lists the taps the kernel visits for this phase, in its loop
// order: the inverse of what newTritonView derived, used to check it.
func (tp TritonPhase) ExpandTaps(v *TritonView, kernel [3]int) []plan.Tap {
	var taps []plan.Tap
	for a := 0; a < tp.Count[0]; a++ {
		for b := 0; b < tp.Count[1]; b++ {
			for e := 0; e < tp.Count[2]; e++ {
				var t plan.Tap
				for i, j := range [3]int{a, b, e} {
					t.K[i] = tp.K0[i] + j*v.KStep[i]
					t.Off[i] = tp.Off0[i] - j*v.OffStep[i]
				}
				t.Flat = (t.K[0]*kernel[1]+t.K[1])*kernel[2] + t.K[2]
				taps = append(taps, t)
			}
		}
	}
	return taps
}

func sameTaps(a, b []plan.Tap) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
