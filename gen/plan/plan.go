// Package plan computes everything an emitted kernel needs from a spec:
// output shape, stride phases and their taps, tile sizes, grid, shared
// memory, index width and names. Templates only print a Plan.
package plan

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"convtgen/gen/geom"
	"convtgen/gen/spec"
)

// Plan is one spec's kernel, fully decided.
type Plan struct {
	// Spec is the spec as this target sees it: its kernel section is the
	// target's (spec.Kernel.For).
	Spec   *spec.Spec
	Target Target
	// Conv is the convolution the kernel computes: the spec's, or with
	// DepthFold or TapFold its folded form; along the axes Restrided says, with the
	// stride raised where the input has one position
	// (geom.Conv.OnePositionStrides: the same output).
	Conv      geom.Conv
	Restrided [3]bool
	// DepthFold is the forward's depth mean or sum moved in front of the
	// convolution (nil: none). Only the CUDA file folds: the Triton
	// backend has no kernel for the fold's sums.
	DepthFold *DepthFold
	// TapFold is how many leading axes of a one-position input the CUDA
	// kernel computes as output channels (geom.Conv.FoldOnePositionTaps;
	// 0: none): Conv is then the folded convolution, the same memory.
	TapFold int
	// Unfolded is a folded plan's Triton file: the forward as written
	// (nil without a fold or a Triton backend).
	Unfolded *Plan
	Out      [3]int // output depth, height, width
	CinG     int    // input channels per group: the reduction's channel extent
	CoutG    int    // output channels per group: the GEMM's N
	Tile     Tile

	// Phases lists the stride phases that hold outputs; Taps holds their
	// taps back to back. The grid interleaves the phases (block x works on
	// phase x mod len(Phases), M tile x / len(Phases)), so blocks that write
	// neighbouring outputs of different phases run together and their
	// partial-sector stores merge in L2 instead of each costing a DRAM
	// read-modify-write.
	Phases   []Phase
	Taps     []Tap
	MaxTiles int // M tiles of the largest phase

	// Blocks is the main kernel's logical grid: (phases x MaxTiles, N
	// tiles, groups); wgmma (WGMMA.Tiles, N tiles, groups x WGMMA.Parts).
	// Grid is its launch: Blocks itself, or with Fold all of it along x
	// (setGrid).
	Blocks, Grid [3]int
	Fold         bool
	Threads      int
	// SmemBytes is the shared memory of the main kernel: two stages of
	// the A (BK x BM) and B (BK x BN) tiles, rows padded by Tile.Pad;
	// direct, the weights of Tile.TapChunk taps; wgmma, its weight stages.
	// DynamicSmem is SmemBytes where that passes the 48 KiB of static
	// shared memory (wgmma only; the host opts the kernel in), else 0.
	SmemBytes, DynamicSmem int
	// Window is the input window of a direct kernel with Tile.TW set.
	Window Window
	// Epilogue is the step after the reduction: the bias and the store.
	Epilogue Epilogue
	// TritonLeftOut says why the default backends lost Triton: the
	// chain's ops it cannot express yet (Chain.TritonRefusal); empty when
	// it kept them or the spec named its backends.
	TritonLeftOut string
	// WGMMA is the layout of a wgmma tile's kernel (Tile.WGMMA).
	WGMMA WGMMA
	// Spectral is the layout of a spectral plan (Tile.Spectral), nil
	// for the others; its Epilogue.Chain names the forward's extras, and
	// none of the chain's passes runs.
	Spectral *Spectral
	// Index is the C type for flat element offsets: int unless a tensor
	// has 2^31 elements or more.
	Index string

	Names Names
}

// Names are the identifiers the emitted code uses.
type Names struct {
	Extension string // load_inline module name, unique per spec
	Kernel    string // main implicit-GEMM kernel
	Repack    string // weight re-layout kernel (empty: none, ReadsTorchWeight)
	Relayout  string // input re-layout kernel (wgmma tiles; else empty)
	Fill      string // bias fill of a wgmma tile with tap-less phases (else empty)
	AddSplits string // sum of a split_k tile's partial outputs (else empty)
}

// Tile is the kernel family the plan chose and its tiling. Exactly one
// family is set, its options as the plan resolved them (every choice the
// spec left to the plan filled in; the spec form, so what tuning writes
// back is the plan's own value): FFMA (each thread holds TM x TN results
// on a ThreadsM x ThreadsN grid), Direct (each of the BM/TM threads
// computes TM rows by all BN columns, or with TW a window along W),
// MMA (each warp holds a WM x WN tile of m16n8k8 fragments on a WarpsM x
// WarpsN grid) or WGMMA (WGMMA's doc). A block computes BM() output
// positions of one phase (wgmma: of each in turn) by BN() output channels
// of one group, BK() reduction elements a step.
type Tile struct {
	FFMA   *spec.FFMA
	Direct *spec.Direct
	MMA    *spec.MMA
	WGMMA  *spec.WGMMA
	// Spectral computes no convolution output (Plan.Spectral).
	Spectral *spec.Spectral

	ThreadsM, ThreadsN int
	WarpsM, WarpsN     int
	// Shared-memory row padding in floats: the MMA fragment reads hit all
	// 32 banks only when a tile row is offset by 8 banks from the next.
	// Presplit tiles (four arrays in fragment order) need none.
	Pad int
	// TapChunk (direct): the taps whose weights are staged at once.
	TapChunk int
	// wgmmaBN: a wgmma block's columns, a multiple of 8 (the plan's).
	wgmmaBN int
}

// Family is the chosen family's options.
func (t Tile) Family() spec.Family {
	switch {
	case t.Direct != nil:
		return *t.Direct
	case t.MMA != nil:
		return *t.MMA
	case t.WGMMA != nil:
		return *t.WGMMA
	case t.FFMA != nil:
		return *t.FFMA
	case t.Spectral != nil:
		return *t.Spectral
	}
	return nil
}

// Choice is the tile as a spec's kernel.cuda writes it.
func (t Tile) Choice() spec.CUDA { return spec.CUDA{Family: t.Family()} }

// String is the family's choice and the plan's derived shape (not %+v's
// pointers, so a plan prints the same every run).
func (t Tile) String() string {
	if t.Spectral != nil {
		return t.Choice().String() // no tiles: the layout is Plan.Spectral's
	}
	return fmt.Sprintf("%s threads %dx%d warps %dx%d pad %d tap_chunk %d bn %d", t.Choice(), t.ThreadsM, t.ThreadsN, t.WarpsM, t.WarpsN, t.Pad, t.TapChunk, t.BN())
}

// Field is the spec field of one of the family's options, for errors.
func (p *Plan) field(key string) string {
	return p.Spec.Kernel.CUDAField(p.Tile.Family().Key() + "." + key)
}

// BM is a block's rows (output positions): wgmma Warpgroups x Slabs x 64.
func (t Tile) BM() int {
	switch {
	case t.FFMA != nil:
		return t.FFMA.BM
	case t.Direct != nil:
		return t.Direct.BM
	case t.MMA != nil:
		return t.MMA.BM
	case t.WGMMA != nil:
		return t.WGMMA.PerBlock() * t.WGMMA.Slabs * slabRows
	}
	return 0
}

// BN is a block's columns (output channels; with kw_in_n, kw x channel
// pairs).
func (t Tile) BN() int {
	switch {
	case t.FFMA != nil:
		return t.FFMA.BN
	case t.Direct != nil:
		return t.Direct.BN
	case t.MMA != nil:
		return t.MMA.BN
	}
	return t.wgmmaBN
}

// BK is a block's reduction step: input channels, wgmma StepK elements.
func (t Tile) BK() int {
	switch {
	case t.FFMA != nil:
		return t.FFMA.BK
	case t.Direct != nil:
		return t.Direct.BK
	case t.MMA != nil:
		return t.MMA.BK
	case t.WGMMA != nil:
		return StepK
	}
	return 0
}

// TM is an FFMA or direct thread's rows (1 with a window), TN an FFMA
// thread's columns; WM and WN an mma.sync warp's tile.
func (t Tile) TM() int {
	switch {
	case t.FFMA != nil:
		return t.FFMA.TM
	case t.Direct != nil && t.Direct.TW > 0:
		return 1
	case t.Direct != nil:
		return t.Direct.TM
	}
	return 0
}

func (t Tile) TN() int {
	if t.FFMA != nil {
		return t.FFMA.TN
	}
	return 0
}

func (t Tile) WM() int {
	if t.MMA != nil {
		return t.MMA.WM
	}
	return 0
}

func (t Tile) WN() int {
	if t.MMA != nil {
		return t.MMA.WN
	}
	return 0
}

// TW is a direct thread's outputs along W (0: no window).
func (t Tile) TW() int {
	if t.Direct != nil {
		return t.Direct.TW
	}
	return 0
}

// KWInN: a wgmma tile whose GEMM columns hold the kernel's W taps.
func (t Tile) KWInN() bool { return t.WGMMA != nil && t.WGMMA.KWInN }

// SplitK is how many blocks share each phase's reduction steps: the
// FFMA and mma.sync tiles' split_k (0 meaning 1), 1 for the others.
func (t Tile) SplitK() int { return max(1, spec.SplitK(t.Family())) }

// Presplit: an mma.sync tile staged as TF32 parts in fragment order.
func (t Tile) Presplit() bool { return t.MMA != nil && t.MMA.Presplit }

// CpAsync: the tiles (wgmma: the input fragments) staged by cp.async.
func (t Tile) CpAsync() bool {
	switch {
	case t.FFMA != nil:
		return t.FFMA.CpAsync
	case t.MMA != nil:
		return t.MMA.CpAsync
	case t.WGMMA != nil:
		return t.WGMMA.CpAsync
	}
	return false
}

// MinBlocks is the launch bounds' minimum of resident blocks per SM.
func (t Tile) MinBlocks() int {
	switch {
	case t.FFMA != nil:
		return t.FFMA.MinBlocks
	case t.Direct != nil:
		return t.Direct.MinBlocks
	case t.MMA != nil:
		return t.MMA.MinBlocks
	case t.WGMMA != nil:
		return t.WGMMA.MinBlocks
	}
	return 0
}

// Epilogue is the kernels' last step, after the reduction, kept apart
// from it so that a fused operation can join it: whether each sum gets
// its output channel's bias, and how the results are stored. Every
// output is stored once, by the thread that holds its sum (a wgmma tile
// with tap-less phases writes theirs, the bias alone, by its fill).
type Epilogue struct {
	Bias bool
	// VectorStore (direct with a window): outputs are stored as float4s,
	// the output width and TW being multiples of 4.
	VectorStore bool
	// Chain is the model's ops before and after the convolution, as
	// passes after it (empty for the convolution alone).
	Chain *Chain
	// Ops are the pointwise ops every store applies after the bias, in
	// order (the chain's leading pass, fused; see Chain.fuse). The fill
	// of tap-less phases applies them to the bias alone.
	Ops []PointOp
	// Extras are the tensors Ops read, each once, in Chain.Extras order:
	// the main kernel's and the fill's parameters after the bias.
	Extras []StoreExtra
}

// MainBias: the main kernel adds the bias as it stores its sums (with
// split_k, the kernel that adds the splits' partial sums adds it).
func (p *Plan) MainBias() bool { return p.Epilogue.Bias && p.Tile.SplitK() == 1 }

// Window is what a TW thread reads along W. Its outputs are ow0 + j for
// j < TW, with ow0 a multiple of TW and so of stride_w; through tap kw,
// output j reads input column ow0/stride_w + (j + pad_w - kw*dil_w)/stride_w
// when stride_w divides j + pad_w - kw*dil_w (and nothing otherwise). Those
// columns lie in [ow0/stride_w + Lo, ow0/stride_w + Lo + Len): loaded once
// per (d, h) tap and channel, used by every (j, kw) pair.
type Window struct {
	Lo, Len int
	// Vector: the window is loaded as aligned float4s (Lo and Len multiples
	// of 4): the input width and TW/stride_w are multiples of 4, so every
	// window starts at a multiple of 4 and a float4 lies wholly inside or
	// wholly outside the input.
	Vector bool
	// Reached is how many of a thread's TW outputs some kw reaches: where
	// the taps' kw*dilation_w miss residues mod stride_w, the others' sums
	// stay zero and take no registers.
	Reached int
}

// Phase is one stride phase: the outputs with o ≡ R (mod stride) in every
// dimension. Within it each tap reads input index q + Off, so the phase is
// a dense GEMM with no masked-out multiply-adds.
type Phase struct {
	R        [3]int // residue of the output index per dimension
	Q        [3]int // outputs of this phase per dimension
	M        int    // GEMM rows: batch x Q[0] x Q[1] x Q[2]
	Tiles    int    // M tiles of BM rows
	TapStart int    // first tap in Plan.Taps
	TapCount int
	// Splits is how many split_k blocks share the phase's reduction
	// steps (1 without split_k): its share of the tile's SplitK, in
	// proportion to its taps, so that no block runs more steps than the
	// longest phase's do.
	Splits int
}

// Tap is one kernel position that contributes to a phase.
type Tap struct {
	K    [3]int // kernel index per dimension
	Off  [3]int // input index = q + Off
	Flat int    // kd*KH*KW + kh*KW + kw, the weight's tap index
}

// Limits of every target: a block has at most 1024 threads and 48 KiB of
// static shared memory (more needs a dynamic opt-in, Target.SmemPerBlock).
const (
	MaxThreads       = 1024
	MaxSmemBytes     = 48 * 1024
	maxAccum         = 64 // accumulators per thread (tm*bn, tw*bn, wm*wn/32), to stay clear of spills
	maxThreadsPerSM  = 2048
	regsPerSM        = 65536
	maxRegsPerThread = 255
)

// registersPerThread is what ptxas can give each thread of a block when
// minBlocks blocks (at least one) must fit on an SM.
func registersPerThread(threads, minBlocks int) int {
	return min(maxRegsPerThread, regsPerSM/(max(1, minBlocks)*threads))
}

// Gather is how the threads of an FFMA or mma.sync block load a step's
// tiles: Lanes threads cover the A tile's rows, each owning Rows of them
// and K of the BK channels (every KStride-th); each thread loads BLoads
// weight elements.
type Gather struct {
	Lanes, Rows, KStride, K, BLoads int
}

// Gather is the plan's gather layout (the emitted constants kALanes to
// kBLoads).
func (p *Plan) Gather() Gather {
	t := p.Tile
	lanes := min(p.Threads, t.BM())
	stride := p.Threads / lanes
	return Gather{Lanes: lanes, Rows: t.BM() / lanes, KStride: stride, K: ceilDiv(t.BK(), stride), BLoads: ceilDiv(t.BK()*t.BN(), p.Threads)}
}

// mmaRegisters estimates the registers an mma.sync 3xtf32 thread needs and
// says what they hold: its sums (wm*wn/32); the TF32 hi and lo parts of
// its A and B fragments for each of a step's bk/8 slices, which the
// unrolled slice loop keeps live together; three per weight element its
// gather holds across the products (the value and its own 64-bit address;
// two with cp.async, the address alone); four per row it gathers (the
// row's decoded position); 32 more with presplit staging; and about 40 for
// indices and loop state. The gathered inputs count for nothing: their
// addresses share the row's base, and the fit gave them no weight. Fitted
// to the smallest cap at which nvcc 11.8 compiled each of a few hundred
// tiles without a spill (sm_80 and sm_90): it lets none through that spill
// and refuses few that fit; the presplit and cp.async terms are sized to
// refuse tiles seen spilling (the fits: docs/perf/PERF.md).
func (p *Plan) mmaRegisters() (int, string) {
	t, g := p.Tile, p.Gather()
	sums := t.WM() * t.WN() / 32
	frags := t.BK() / 8 * 2 * (t.WM()/16*4 + t.WN()/8*2)
	weights, perWeight := g.BLoads, 3
	if t.CpAsync() {
		perWeight = 2
	}
	n := sums + frags + perWeight*weights + 4*g.Rows + 40
	if t.Presplit() {
		n += 32
	}
	what := fmt.Sprintf("a %dx%d warp tile with bk %d (%d sums, %d fragment registers, %d weight loads in flight)", t.WM(), t.WN(), t.BK(), sums, frags, weights)
	return n, what
}

// ffmaRegisters estimates the registers an FFMA GEMM thread needs and says
// what they hold: its tm*tn sums, a step's tm + tn operands, the elements
// its gather holds in flight (none with cp.async), four per row it gathers
// (its decoded position and address) and about 36 for indices and loop
// state. Fitted to random configurations' FFMA tiles compiled by nvcc 11.8
// (sm_80 and sm_90): it refuses the one that spilled and the few others of
// 32 sums at 1024 threads (64 registers each); nvcc 13 (sm_90a) spilled an
// 8x8 tile of 512 threads at 128 registers that 24 let through (117).
// What uncapped tiles take is what ptxas spends when it may, not what it
// needs.
func (p *Plan) ffmaRegisters() (int, string) {
	t, g := p.Tile, p.Gather()
	sums, operands, inFlight := t.TM()*t.TN(), t.TM()+t.TN(), 0
	if !t.CpAsync() {
		inFlight = g.Rows*g.K + g.BLoads
	}
	return sums + operands + inFlight + 4*g.Rows + 36,
		fmt.Sprintf("%d sums, %d operands and %d loads in flight", sums, operands, inFlight)
}

// directRegisters estimates the registers a direct thread needs and says
// what they hold: its sums, the inputs of one batch of loads (bk channels
// of tm rows), a float4 of weights, and about 48 for addresses, indices
// and loop state. Fitted to the smallest cap at which nvcc 11.8 compiled
// each of the random direct kernels without a spill (sm_80 and sm_90).
// What it does not count (which loads ptxas hoists, which indices it
// folds) moves the need by tens of registers.
//
// A TW thread holds the sums of the outputs some kw reaches, two batches
// of bk windows (ptxas issues the next batch's loads while the last FMAs
// run), a channel's weights of every kw, and about 28 more. Fitted the
// same way to random window kernels (nvcc 13, sm_90a): it refuses all that
// spill and few that fit; one batch of windows and one float4 of weights,
// as for rows, let every one that spills through.
func (p *Plan) directRegisters() (int, string) {
	t := p.Tile
	if t.TW() > 0 {
		sums, inputs, weights := p.Window.Reached*t.BN(), 2*t.BK()*p.Window.Len, p.Conv.Kernel[2]*t.BN()
		return sums + inputs + weights + 28, fmt.Sprintf("%d sums, two batches of %d windows of %d input columns and %d weights",
			sums, t.BK(), p.Window.Len, weights)
	}
	sums, inputs := t.TM()*t.BN(), t.TM()*t.BK()
	return sums + inputs + 4 + 48, fmt.Sprintf("%d sums and %d inputs per batch of loads", sums, inputs)
}

// KernelConv is the convolution the kernels compute for c with CUDA
// choice f: the strides raised where the input has one position
// (geom.Conv.OnePositionStrides), and the axes raised; but not along W
// where f's W option is defined by the stride asked for (a direct
// window's outputs a thread, Winograd's stride_w = dilation_w).
func KernelConv(c geom.Conv, f spec.Family) (geom.Conv, [3]bool) {
	d, axes := c.OnePositionStrides()
	switch t := f.(type) {
	case spec.Direct:
		if t.TW > 0 {
			d.Stride[2], axes[2] = c.Stride[2], false
		}
	case spec.WGMMA:
		if t.Winograd {
			d.Stride[2], axes[2] = c.Stride[2], false
		}
	}
	return d, axes
}

// New plans one spec. Errors point at the spec field they concern.
func New(s *spec.Spec, target Target) (*Plan, error) {
	// The plan sees the target's kernel choices as the spec's: its own
	// sections where it has them (spec.Kernel.For).
	ts := *s
	ts.Kernel = s.Kernel.For(target.Name)
	s = &ts
	if errs := s.FamilyErrors(); len(errs) > 0 {
		return nil, errs
	}
	c, fold, tapFold := s.Problem.Conv, (*DepthFold)(nil), 0
	var restrided [3]bool
	if _, spectral := s.Kernel.CUDA.Of().(spec.Spectral); !spectral {
		c, fold, tapFold = cudaConv(s)
		c, restrided = KernelConv(c, s.Kernel.CUDA.Of())
	}
	p := &Plan{Spec: s, Target: target, Conv: c, Restrided: restrided, Out: c.Out(), CinG: c.InPerGroup(), CoutG: c.OutPerGroup(), Epilogue: Epilogue{Bias: c.Bias}, DepthFold: fold, TapFold: tapFold}
	// Extents, channels and batch fit the kernels' 32-bit ints: the spec's
	// limits (spec.MaxExtent, spec.MaxCount) keep them below 2^24.
	switch f := s.Kernel.CUDA.Of().(type) {
	case spec.Spectral:
		return p.planSpectral(f)
	case spec.WGMMA:
		if !target.WGMMA {
			// Without bulk copies the weights load by cp.async either way:
			// the tile is the one kernel.sm80 may name (it refuses
			// bulk_weights), with no barriers' shared memory.
			f.BulkWeights = false
		}
		p.Tile = chooseWGMMATile(f, p.CoutG, c.Kernel[2])
		if reach := kwSpan(c); p.Tile.KWInN() && reach >= p.Tile.BM()/2 {
			return nil, spec.Errors{s.Errorf(p.field("kw_in_n"), "true",
				"would waste %d of a block's %d rows on the kernel's reach along W ((stride_w-1 + dilation_w x (kernel_w-1)) / stride_w input positions): at most half", reach, p.Tile.BM())}
		}
		if k, st, dil := c.Kernel[2], c.Stride[2], c.Dilation[2]; p.Tile.WGMMA.Winograd {
			var errs spec.Errors
			if _, ok := NewWinograd(k); !ok || st != dil {
				errs = append(errs, s.Errorf(p.field("winograd"), "true",
					"computes F(2, kernel_w) along W, which needs kernel_w %s and stride_w = dilation_w, so that each W phase's taps read consecutive inputs (kernel_w %d, stride_w %d, dilation_w %d)", winogradTapsText(), k, st, dil))
			}
			if most, ok := WinogradMaxSpan[k]; ok && p.Tile.WGMMA.Span > most {
				errs = append(errs, s.Errorf(p.field("span"), strconv.Itoa(p.Tile.WGMMA.Span),
					"with Winograd's F(2,%d) keeps a tensor-core sum within %d steps (%d terms), where its larger transforms stay under the 1e-5 error gate", k, most, most*StepK))
			}
			if len(errs) > 0 {
				return nil, errs
			}
		}
		p.planPhases()
		if err := p.checkTables(wgmmaPhaseBytes); err != nil {
			return nil, err
		}
		p.planWGMMA()
		if b := 4 * p.WGMMA.RelayoutStage; b > MaxSmemBytes {
			return nil, spec.Errors{s.Errorf("problem.in_channels", strconv.Itoa(c.InChannels),
				"gives %d channels a group, padded to %d: the input re-layout would stage %d bytes of shared memory for one position; sm_80 allows %d of static shared memory",
				p.CinG, p.WGMMA.CinP, b, MaxSmemBytes)}
		}
		if err := p.checkWGMMAResources(); err != nil {
			return nil, err
		}
		if err := p.splitPhases(); err != nil {
			return nil, err
		}
		if err := p.setGrid([3]int{p.WGMMA.Tiles, p.WGMMA.NTiles, c.Groups * p.WGMMA.Parts}); err != nil { // a block runs its rows of its part's phases
			return nil, err
		}
		if err := p.checkRows(p.WGMMA.Tiles * p.WGMMA.OutRows); err != nil {
			return nil, err
		}
		p.Index = indexType(c.OutputLen(), p.WGMMA.XLen, p.WGMMA.ImageLen)
		p.Names = names(s.Name, target)
		p.Names.Relayout = s.Name + "_relayout_input"
		if p.WGMMA.Fill {
			p.Names.Fill = s.Name + "_fill_bias"
		}
		return p.withChain()
	case spec.Direct:
		p.Tile = chooseDirectTile(f, p.CinG, p.CoutG)
		p.Threads = p.Tile.ThreadsM
	case spec.MMA:
		p.Tile = chooseMMATile(f, p.CinG, p.CoutG)
		p.Threads = 32 * p.Tile.WarpsM * p.Tile.WarpsN
	case spec.FFMA:
		p.Tile = chooseTile(f, p.CinG, p.CoutG)
		p.Threads = p.Tile.ThreadsM * p.Tile.ThreadsN
	}
	p.planPhases()
	p.planSplits()
	perPhase := phaseBytes
	if p.Tile.SplitK() > 1 {
		perPhase += 4 // its entry of the split count table
	}
	if err := p.checkTables(perPhase); err != nil {
		return nil, err
	}
	if p.Tile.TW() > 0 {
		p.planWindow()
	}
	if p.Tile.Direct != nil {
		// As many taps' weights as fit, up to the largest phase's taps.
		perTap := p.CinG * p.Tile.BN() * 4 * p.TapWidth()
		p.Tile.TapChunk = max(1, min(p.maxPhaseTaps(), MaxSmemBytes/perTap))
		p.SmemBytes = p.Tile.TapChunk * perTap
	} else {
		p.SmemBytes = 2 * p.Tile.BK() * (p.Tile.BM() + p.Tile.BN() + 2*p.Tile.Pad) * 4
		if p.Tile.Presplit() {
			p.SmemBytes *= 2 // each staged tile twice: TF32 hi and lo parts
		}
	}
	if err := p.checkTile(); err != nil {
		return nil, err
	}
	// A split_k tile's blocks along z are (group, split) pairs.
	if err := p.setGrid([3]int{len(p.Phases) * p.MaxTiles, ceilDiv(p.CoutG, p.Tile.BN()), c.Groups * p.Tile.SplitK()}); err != nil {
		return nil, err
	}
	if err := p.checkRows(p.MaxTiles * p.Tile.BM()); err != nil {
		return nil, err
	}
	p.Index = indexType(c.InputLen(), c.OutputLen(), c.WeightLen(), p.WorkspaceLen())
	p.Names = names(s.Name, target)
	if p.ReadsTorchWeight() {
		p.Names.Repack = ""
	}
	if p.Tile.SplitK() > 1 {
		p.Names.AddSplits = s.Name + "_add_splits"
	}
	return p.withChain()
}

// CUDAConv is the convolution a CUDA kernel computes for spec s (before
// KernelConv raises strides): the problem's, or its depth fold's, or its
// one-position taps folded into channels.
func CUDAConv(s *spec.Spec) geom.Conv {
	c, _, _ := cudaConv(s)
	return c
}

func cudaConv(s *spec.Spec) (geom.Conv, *DepthFold, int) {
	c := s.Problem.Conv
	if !slices.Contains(s.Kernel.Backends, "cuda") {
		return c, nil, 0
	}
	if fold := planDepthFold(s); fold != nil {
		return fold.Conv(), fold, 0
	}
	// A forward's ops and a prologue see the problem's channels: only a
	// bare convolution folds its taps.
	if len(s.Reference.Forward) > 0 || len(s.Reference.Prologue) > 0 {
		return c, nil, 0
	}
	if f, axes := c.FoldOnePositionTaps(); axes > 0 && f.OutChannels <= spec.MaxCount {
		return f, nil, axes
	}
	return c, nil, 0
}

// BiasEvery is how many consecutive output channels of Conv share one
// value of the module's bias: the taps a tap fold turned into channels
// (folded channel c reads bias c / BiasEvery), else 1.
func (p *Plan) BiasEvery() int {
	if p.TapFold == 0 || !p.Conv.Bias {
		return 1
	}
	return p.Conv.OutChannels / p.Spec.Problem.Conv.OutChannels
}

// TinyWeight is the largest weight, in elements (64 KiB), that a direct
// kernel stages straight from PyTorch's layout.
const TinyWeight = 1 << 14

// ReadsTorchWeight: the main kernel reads the weight in PyTorch's own
// layout, and the forward has no weight re-layout launch (Names.Repack is
// empty). Where the weight has one tap, the re-layout's order (group,
// tap, Cin/groups, Cout/groups) is PyTorch's already: it would copy the
// weight as it is (every family but wgmma, whose image splits it). A
// direct block stages a chunk of taps x input channels x bn weights at a
// time, which the re-layout only makes contiguous; a tiny weight stays in
// L2, so its scattered reads cost less than the launch (several
// microseconds, the whole of a small problem's margin).
func (p *Plan) ReadsTorchWeight() bool {
	if p.Tile.WGMMA != nil {
		return false
	}
	return p.Conv.Taps() == 1 || p.Tile.Direct != nil && p.Conv.WeightLen() <= TinyWeight
}

// withChain plans the passes of the ops around the convolution.
func (p *Plan) withChain() (*Plan, error) {
	ch, ops, extras, err := planChain(p.Spec, p.Out, p.Names.Kernel, p.DepthFold)
	if err != nil {
		return nil, spec.Errors{p.Spec.Errorf("reference.forward", "", "%v", err)}
	}
	// The Triton file computes the forward as written (it has no kernel
	// for a fold's sums): the chain it runs decides whether it can.
	tch, tops := ch, ops
	if p.DepthFold != nil {
		if tch, tops, _, err = planChain(p.Spec, p.Spec.Problem.Conv.Out(), p.Names.Kernel, nil); err != nil {
			return nil, spec.Errors{p.Spec.Errorf("reference.forward", "", "%v", err)}
		}
	}
	if why := tch.TritonRefusal(tops); why != "" {
		if !p.leaveOutTriton(why) {
			return nil, spec.Errors{p.Spec.Errorf("kernel.backends", "triton",
				"the Triton backend cannot express this forward yet: %s (name cuda alone, or leave the backends out)", why)}
		}
	}
	if (p.DepthFold != nil || p.TapFold > 0) && slices.Contains(p.Spec.Kernel.Backends, "triton") {
		us := *p.Spec
		us.Kernel.Backends = []string{"triton"}
		if p.Unfolded, err = New(&us, p.Target); err != nil {
			return nil, err
		}
	}
	if err := p.checkSplitK(len(ops) > 0); err != nil {
		return nil, err
	}
	p.Epilogue.Chain, p.Epilogue.Ops, p.Epilogue.Extras = ch, ops, extras
	return p, nil
}

// MaxWorkspaceBytes bounds the split_k partial outputs a forward
// allocates: past it a split costs more memory traffic than it can win.
const MaxWorkspaceBytes = 4 << 30

// checkSplitK refuses a split of the reduction that leaves a block of the
// longest phase without steps, whose partial outputs pass
// MaxWorkspaceBytes, or where the store fuses ops (fused), which need
// each output's whole sum.
func (p *Plan) checkSplitK(fused bool) error {
	n := p.Tile.SplitK()
	if n == 1 {
		return nil
	}
	var errs spec.Errors
	if fused {
		errs = append(errs, p.Spec.Errorf(p.field("split_k"), strconv.Itoa(n),
			"adds the splits' partial sums in a kernel of its own, and this forward's ops after the convolution run in the main kernel's store: split_k needs a forward whose ops run after it (or none)"))
	}
	if steps := p.maxPhaseTaps() * p.CIChunks(); n > steps {
		errs = append(errs, p.Spec.Errorf(p.field("split_k"), strconv.Itoa(n),
			"shares a phase's reduction steps among blocks, and the longest phase has %d (taps x input channels in steps of bk %d): at most %d", steps, p.Tile.BK(), steps))
	}
	if b := 4 * p.WorkspaceLen(); b > MaxWorkspaceBytes {
		errs = append(errs, p.Spec.Errorf(p.field("split_k"), strconv.Itoa(n),
			"writes %d partial outputs of %d elements, %d bytes of workspace: at most %d", n, p.Conv.OutputLen(), b, MaxWorkspaceBytes))
	}
	if errs != nil {
		return errs
	}
	return nil
}

// leaveOutTriton drops the Triton backend, saying why, where the spec
// left the backends open; it reports false where the spec names Triton
// (the caller refuses the plan).
func (p *Plan) leaveOutTriton(why string) bool {
	k := &p.Spec.Kernel
	if !slices.Contains(k.Backends, "triton") {
		return true
	}
	if !k.BackendsOmitted {
		return false
	}
	k.Backends = slices.DeleteFunc(slices.Clone(k.Backends), func(b string) bool { return b == "triton" })
	p.TritonLeftOut = why
	return true
}

// The kernels' phase and tap tables live in constant memory, 64 KiB a
// module: entries of PhaseInfo (9 ints; 12 with wgmma) and TapInfo (an
// int and an offset, 16 bytes at most) in templates/cuda*.tmpl.
const (
	MaxConstantBytes = 64 * 1024
	phaseBytes       = 9 * 4
	wgmmaPhaseBytes  = 12 * 4
	tapBytes         = 16
)

// checkTables refuses a plan whose phase and tap tables do not fit
// constant memory (many stride phases with many outputs, or large
// kernels): blame the stride where the phases take most of it. Only the
// CUDA files have the tables (the Triton kernel computes its taps).
func (p *Plan) checkTables(perPhase int) error {
	phases, taps := len(p.Phases)*perPhase, max(1, len(p.Taps))*tapBytes
	if phases+taps <= MaxConstantBytes || !slices.Contains(p.Spec.Kernel.Backends, "cuda") {
		return nil
	}
	field, got := "problem.kernel", p.Conv.Kernel
	if phases > taps {
		field, got = "problem.stride", p.Conv.Stride
	}
	return spec.Errors{p.Spec.Errorf(field, fmt.Sprintf("[%d, %d, %d]", got[0], got[1], got[2]),
		"gives %d stride phases with outputs and %d taps: their tables take %d bytes of constant memory, and a kernel has %d",
		len(p.Phases), len(p.Taps), phases+taps, MaxConstantBytes)}
}

// indexType is the C type of flat element offsets into tensors of the
// given lengths: int unless one has 2^31 elements or more.
func indexType(lengths ...int) string {
	if slices.Max(lengths) >= 1<<31 {
		return "long long"
	}
	return "int"
}

// maxInt32 is the largest value the kernels' int arithmetic holds.
const maxInt32 = 1<<31 - 1

// TaplessAxis is the first axis (0 depth, 1 height, 2 width) with an output
// residue mod stride that no tap reaches (dimTaps), or -1.
func TaplessAxis(c geom.Conv) int {
	for i := range 3 {
		for r := 0; r < min(c.Stride[i], c.Out()[i]); r++ {
			if len(dimTaps(c, i, r)) == 0 {
				return i
			}
		}
	}
	return -1
}

// checkRows refuses a plan whose GEMM row numbers pass int: the kernels
// count a phase's output positions in an int, up to the blocks' last row
// (reach) plus a block's rows. That needs one phase of 2^31 positions per
// output channel, with batch and channels as the other factors of y.
func (p *Plan) checkRows(reach int) error {
	if reach+p.Tile.BM() <= maxInt32 {
		return nil
	}
	return spec.Errors{p.Spec.Errorf("problem.input", "", "gives a stride phase of %d output positions (rows up to %d with blocks of %d): the kernels count them in 32-bit ints, at most %d",
		reach, reach+p.Tile.BM(), p.Tile.BM(), maxInt32)}
}

// names are a spec's kernel and extension names.
func names(spec string, t Target) Names {
	return Names{
		Extension: "convtgen_" + spec + "_" + t.Name, // the sm80 and sm90 builds do not share torch's cache

		Kernel: spec + "_igemm",
		Repack: spec + "_repack_weight",
	}
}

// chooseTile fills the tile fields the spec left at zero. BN covers the
// group's output channels with little padding (powers of two keep the
// thread grid a power of two); BM gives about 256 threads per block.
func chooseTile(r spec.FFMA, cinG, coutG int) Tile {
	if r.BN == 0 {
		r.BN = min(64, NextPow2(coutG))
		if waste := r.BN - coutG%r.BN; coutG%r.BN != 0 && waste*4 > r.BN {
			// Over a quarter wasted: take the largest power of two dividing Cout/groups.
			if d := coutG & -coutG; d >= 8 {
				r.BN = min(d, 64)
			}
		}
		r.BN = max(r.BN, 4)
	}
	if r.TN == 0 {
		r.TN = 4
		if r.BN >= 64 {
			r.TN = 8
		}
		if r.BN%r.TN != 0 {
			r.TN = 4
		}
	}
	if r.TM == 0 {
		r.TM = 8
	}
	if r.BM == 0 {
		// About 256 threads, at least 32 rows' threads, at most 512
		// threads (at 1024 a thread has 64 registers: 32 sums spill).
		threadsN := max(1, r.BN/r.TN)
		r.BM = r.TM * min(max(32, 256/threadsN), max(1, 512/threadsN))
		r.BM = min(r.BM, 512)
	}
	if r.BK == 0 {
		r.BK = min(8, cinG)
	}
	if r.MinBlocks == 0 {
		r.MinBlocks = defaultMinBlocks
	}
	return Tile{FFMA: &r, ThreadsM: r.BM / r.TM, ThreadsN: r.BN / r.TN}
}

// defaultMinBlocks is the launch bounds' minimum of resident blocks for
// FFMA, direct and mma.sync tiles whose spec leaves it unset. Given only
// the block size, ptxas may give up registers for more resident blocks and
// spill doing so: FFMA 8x8 and 8x4 sums per thread at 96 registers
// (rand_21_008; nvcc 11.8 on sm_90, rand_3_024), direct 4 rows by 8
// channels at 96 and 4 by 4 at 72 (CUDA 13: rand_7_010, rand_7_012),
// 256-thread mma.sync tiles at 64 and 128 (nvcc 11.8: a 16x32 warp tile,
// 64x16 ones plain and presplit). The same FFMA tile's spill-free minimum
// ranged from 101 to 179 registers with the problem's geometry (8x4, 64
// threads, nvcc 11.8), so no estimate tells the safe tiles apart. With a
// minimum of one block ptxas keeps what the kernel needs, up to
// min(255, 65536/threads); the plan refuses direct and mma.sync tiles whose
// estimate exceeds that.
const defaultMinBlocks = 1

// chooseDirectTile fills the direct tile's fields the spec left at zero:
// BN covers the group's output channels up to 16 (a power of two: one or
// two channels read their weights as a float or a float2, more as
// float4s), two rows per thread (four with 8 or fewer
// channels), 128 threads, and BK up to 8 input channels loaded at once.
func chooseDirectTile(r spec.Direct, cinG, coutG int) Tile {
	if r.BN == 0 {
		r.BN = min(16, NextPow2(coutG))
	}
	if r.MinBlocks == 0 {
		r.MinBlocks = defaultMinBlocks
	}
	if r.TW > 0 {
		return chooseWindowTile(r, cinG)
	}
	if r.TM == 0 {
		r.TM = 2
		if r.BN <= 8 {
			r.TM = 4
		}
	}
	if r.BM == 0 {
		r.BM = 128 * r.TM
	}
	if r.BK == 0 {
		r.BK = min(8, cinG)
	}
	return Tile{Direct: &r, ThreadsM: max(1, r.BM/r.TM), ThreadsN: 1}
}

// chooseWindowTile fills a TW direct tile's fields: one row (TW outputs)
// per thread, 128 threads, and 2 input channels' windows loaded at once
// (a thread's products per channel are TW/stride_w times as many as a
// row's: fewer channels in flight keep the registers for the sums).
// Register use is mostly the TW x BN sums; min_blocks 1 by default lets
// ptxas keep them all. Its tm is 1, left unwritten.
func chooseWindowTile(r spec.Direct, cinG int) Tile {
	r.TM = 0
	if r.BM == 0 {
		r.BM = 128
	}
	if r.BK == 0 {
		r.BK = min(2, cinG)
	}
	return Tile{Direct: &r, ThreadsM: r.BM, ThreadsN: 1}
}

// chooseMMATile fills the 3xtf32 tile fields the spec left at zero: warp
// tiles of 64 x 32 (4 x 4 fragments), BN covering the group's channels, and
// about four warps per block.
func chooseMMATile(r spec.MMA, cinG, coutG int) Tile {
	pad := 8
	if r.Presplit {
		pad = 0
	}
	if r.BN == 0 {
		r.BN = min(64, max(8, NextPow2(coutG)))
	}
	if r.WN == 0 {
		r.WN = min(32, r.BN)
	}
	if r.WM == 0 {
		r.WM = 64
	}
	if r.BM == 0 {
		warpsN := max(1, r.BN/r.WN)
		r.BM = r.WM * max(1, 4/warpsN)
	}
	if r.BK == 0 {
		r.BK = min(16, 8*ceilDiv(cinG, 8))
		if r.Presplit && 2*r.BK*(r.BM+r.BN)*2*4 > MaxSmemBytes {
			r.BK = 8 // hi and lo parts double the staged bytes
		}
	}
	if r.MinBlocks == 0 {
		r.MinBlocks = defaultMinBlocks
	}
	return Tile{MMA: &r, Pad: pad, WarpsM: max(1, r.BM/r.WM), WarpsN: max(1, r.BN/r.WN)}
}

func (p *Plan) checkTile() error {
	t, s := p.Tile, p.Spec
	var errs spec.Errors
	bad := func(field string, got int, format string, args ...any) {
		errs = append(errs, s.Errorf(p.field(field), strconv.Itoa(got), format, args...))
	}
	// fitRegisters refuses an FFMA or direct tile whose estimated need
	// passes min(255, 65536/(min_blocks*threads)), the cap ptxas spills
	// beyond (seen: 32 FFMA sums at 1024 threads; 64 direct sums and two
	// windows of 8 columns at 512): on min_blocks where one block per SM
	// would fit, else on bm.
	fitRegisters := func(need int, what string) {
		if need <= registersPerThread(p.Threads, t.MinBlocks()) {
			return
		}
		field, got := "bm", t.BM()
		if need <= registersPerThread(p.Threads, 1) {
			field, got = "min_blocks", t.MinBlocks()
		}
		bad(field, got, "gives %d threads, %d registers each (min_blocks %d), but %s need about %d",
			p.Threads, registersPerThread(p.Threads, t.MinBlocks()), max(1, t.MinBlocks()), what, need)
	}
	// An FFMA or direct block within its own rules, so that its registers
	// can be estimated.
	blockInRules := t.MMA == nil && t.TM() > 0 && t.BM()%t.TM() == 0 && p.Threads > 0 && p.Threads%32 == 0 && p.Threads <= MaxThreads
	if t.MMA == nil {
		// FFMA and direct tiles: a thread holds tm rows, and bm/tm rows of
		// threads (by bn/tn columns of them, FFMA) make the block.
		threads := "(bm/tm)*(bn/tn)"
		if t.Direct != nil {
			threads = "bm/tm"
		}
		if t.BM()%t.TM() != 0 {
			bad("bm", t.BM(), "must be a multiple of tm=%d", t.TM())
		}
		if t.Direct == nil && t.BN()%t.TN() != 0 {
			bad("bn", t.BN(), "must be a multiple of tn=%d", t.TN())
		}
		if p.Threads%32 != 0 || p.Threads > MaxThreads {
			bad("bm", t.BM(), "gives %s = %d threads; a block needs a multiple of 32, at most %d", threads, p.Threads, MaxThreads)
		}
	}
	if t.Direct != nil {
		if t.TW() > 0 {
			if t.TW()%p.Conv.Stride[2] != 0 {
				bad("tw", t.TW(), "must be a multiple of stride_w=%d (a thread's outputs then start at residue 0)", p.Conv.Stride[2])
			}
			if t.TW()*t.BN() > maxAccum {
				bad("bn", t.BN(), "tw*bn = %d accumulators per thread (direct: a thread holds all bn columns); at most %d fit in registers", t.TW()*t.BN(), maxAccum)
			}
		} else if t.TM()*t.BN() > maxAccum {
			bad("bn", t.BN(), "tm*bn = %d accumulators per thread (direct: a thread holds all bn columns); at most %d fit in registers", t.TM()*t.BN(), maxAccum)
		}
		// Registers, once the block and the sums are within their own rules.
		if blockInRules && (t.TW() == 0 && t.TM()*t.BN() <= maxAccum || t.TW() > 0 && t.TW()*t.BN() <= maxAccum) {
			fitRegisters(p.directRegisters())
		}
		if perTap := p.CinG * t.BN() * 4 * p.TapWidth(); perTap > MaxSmemBytes {
			what := fmt.Sprintf("one tap's weights (%d input channels x bn floats)", p.CinG)
			if t.TW() > 0 {
				what = fmt.Sprintf("one (d, h) tap's weights (%d input channels x %d kw x bn floats)", p.CinG, p.TapWidth())
			}
			bad("bn", t.BN(), "needs %d bytes of shared memory for %s; sm_80 allows %d of static shared memory", perTap, what, MaxSmemBytes)
		}
	} else if t.MMA != nil {
		if t.BN()%8 != 0 {
			bad("bn", t.BN(), "must be a multiple of 8 with 3xtf32 (m16n8k8 fragments)")
		}
		if t.BM()%t.WM() != 0 {
			bad("bm", t.BM(), "must be a multiple of wm=%d", t.WM())
		}
		if t.BN()%t.WN() != 0 {
			bad("bn", t.BN(), "must be a multiple of wn=%d", t.WN())
		}
		if t.BK()%8 != 0 {
			bad("bk", t.BK(), "must be a multiple of 8 with 3xtf32 (m16n8k8 fragments)")
		}
		acc := t.WM() * t.WN() / 32
		if acc > maxAccum {
			bad("wm", t.WM(), "wm*wn/32 = %d accumulators per thread; at most %d fit in registers", acc, maxAccum)
		}
		if p.Threads > MaxThreads {
			bad("bm", t.BM(), "gives 32*(bm/wm)*(bn/wn) = %d threads; a block has at most %d", p.Threads, MaxThreads)
		} else if need, what := p.mmaRegisters(); acc <= maxAccum && need > registersPerThread(p.Threads, t.MinBlocks()) {
			// ptxas must fit a thread in min(255, 65536/(min_blocks*threads))
			// registers and spills what does not fit (seen: 32x32 warp
			// tiles at bk 16 and 512 threads, at 128; 64x32 ones at bk 24,
			// or presplit at bk 16, at 255).
			have := registersPerThread(p.Threads, t.MinBlocks())
			switch {
			case need > maxRegsPerThread:
				// No block size fits it: a shallower step holds fewer
				// fragments, a smaller warp tile fewer sums.
				field, got := "wm", t.WM()
				if t.BK() > 8 {
					field, got = "bk", t.BK()
				}
				bad(field, got, "%s needs about %d registers per thread; a thread has at most %d", what, need, maxRegsPerThread)
			case need <= registersPerThread(p.Threads, 1):
				bad("min_blocks", t.MinBlocks(), "gives %d threads, %d registers each (min_blocks %d), but %s needs about %d", p.Threads, have, max(1, t.MinBlocks()), what, need)
			default:
				bad("bm", t.BM(), "gives %d threads, %d registers each (min_blocks %d), but %s needs about %d", p.Threads, have, max(1, t.MinBlocks()), what, need)
			}
		}
	} else if blockInRules && t.BN()%t.TN() == 0 && p.SmemBytes <= MaxSmemBytes {
		fitRegisters(p.ffmaRegisters())
	}
	if t.MinBlocks()*p.Threads > maxThreadsPerSM && p.Threads <= MaxThreads { // a larger block has its own error
		bad("min_blocks", t.MinBlocks(), "asks for %d resident threads per SM; sm_80 holds at most %d", t.MinBlocks()*p.Threads, maxThreadsPerSM)
	}
	// The GEMM tiles' stages; a direct kernel stages only the taps that fit
	// (its one-tap limit is checked above).
	if p.SmemBytes > MaxSmemBytes && t.Direct == nil {
		bad("bk", t.BK(), "needs %d bytes of shared memory (two stages of bk x (bm+bn) floats, padded); sm_80 allows %d of static shared memory", p.SmemBytes, MaxSmemBytes)
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool {
			return errs[i].Line < errs[j].Line || errs[i].Line == errs[j].Line && errs[i].Col < errs[j].Col
		})
		return errs
	}
	return nil
}

// planPhases enumerates the stride phases and, for each, the taps whose
// (o + padding - k*dilation) is divisible by the stride for every output o
// of the phase.
// dimTap is a kernel index along one dimension that reaches the outputs
// of a residue, and where it reads: input index = q + off.
type dimTap struct{ k, off int }

// dimTaps lists the kernel indices along dimension i whose taps reach the
// outputs o ≡ r (mod stride): those with o + padding - k*dilation a
// multiple of the stride.
func dimTaps(c geom.Conv, i, r int) []dimTap {
	var taps []dimTap
	for k := 0; k < c.Kernel[i]; k++ {
		num := r + c.Padding[i] - k*c.Dilation[i]
		if mod(num, c.Stride[i]) == 0 {
			taps = append(taps, dimTap{k, num / c.Stride[i]})
		}
	}
	return taps
}

// kwAnchors lays out W for a KWInN tile, whose GEMM rows are input
// positions along W and whose columns hold every kw: output w takes
// column kw of input (w + pad - kw*dil)/stride where that divides, and
// its anchor is input a(w) = floor((w + pad - (kernel_w-1)*dil)/stride),
// the lowest such input, whatever w's residue. A row anchors stride
// consecutive outputs, and output w's taps lie in rows a(w) to a(w) +
// WSpan. It returns the anchors along W (a(0) to a(out-1)) and, per kw,
// the offset of the last row any output anchored at q reads through it,
// q + a(0) + floor((stride-1 + (kernel_w-1-kw)*dil)/stride): at stride 1
// the taps' own offsets.
func kwAnchors(c geom.Conv, out int) (int, []dimTap) {
	s, k, dil := c.Stride[2], c.Kernel[2], c.Dilation[2]
	first, last := kwAnchor(c, 0), kwAnchor(c, out-1)
	taps := make([]dimTap, k)
	for kw := range k {
		taps[kw] = dimTap{kw, first + (s-1+(k-1-kw)*dil)/s}
	}
	return last - first + 1, taps
}

// kwAnchor is output w's anchor, a(w) above.
func kwAnchor(c geom.Conv, w int) int {
	return floorDiv(w+c.Padding[2]-(c.Kernel[2]-1)*c.Dilation[2], c.Stride[2])
}

func floorDiv(a, b int) int { return (a - mod(a, b)) / b }

func (p *Plan) planPhases() {
	c := p.Conv
	residuesW := c.Stride[2]
	if p.Tile.TW() > 0 || p.Tile.KWInN() {
		// W is not split: a thread's TW outputs hold every residue, or
		// with W taps as columns a GEMM row (an input position) feeds
		// outputs of every residue.
		residuesW = 1
	}
	// Only residues below the output extent hold outputs: at most
	// min(stride, out) per dimension, so the loops are bounded by the
	// output as well as by the stride. Each dimension's residues are
	// worked out once (a problem can have thousands of phases).
	residues := [3]int{min(c.Stride[0], p.Out[0]), min(c.Stride[1], p.Out[1]), min(residuesW, p.Out[2])}
	var q [3][]int
	var dims [3][][]dimTap
	for i := range 3 {
		q[i], dims[i] = make([]int, residues[i]), make([][]dimTap, residues[i])
		for r := range residues[i] {
			switch {
			case i == 2 && p.Tile.TW() > 0:
				q[2][r], dims[2][r] = ceilDiv(p.Out[2], p.Tile.TW()), []dimTap{{0, 0}}
			case i == 2 && p.Tile.KWInN():
				q[2][r], dims[2][r] = kwAnchors(c, p.Out[2])
			default:
				q[i][r], dims[i][r] = ceilDiv(max(0, p.Out[i]-r), c.Stride[i]), dimTaps(c, i, r)
			}
		}
	}
	phases := make([]Phase, 0, residues[0]*residues[1]*residues[2])
	for rd := range residues[0] {
		for rh := range residues[1] {
			for rw := range residues[2] {
				qp := [3]int{q[0][rd], q[1][rh], q[2][rw]}
				m := c.Batch * qp[0] * qp[1] * qp[2]
				if m == 0 {
					continue
				}
				taps := len(dims[0][rd]) * len(dims[1][rh]) * len(dims[2][rw])
				phases = append(phases, Phase{R: [3]int{rd, rh, rw}, Q: qp, M: m, Tiles: ceilDiv(m, p.Tile.BM()), TapCount: taps, Splits: 1})
			}
		}
	}
	total := 0
	for _, ph := range phases {
		total += ph.TapCount
	}
	p.Taps = make([]Tap, 0, total)
	for i := range phases {
		ph := &phases[i]
		ph.TapStart = len(p.Taps)
		for _, a := range dims[0][ph.R[0]] {
			for _, b := range dims[1][ph.R[1]] {
				for _, e := range dims[2][ph.R[2]] {
					p.Taps = append(p.Taps, Tap{
						K:    [3]int{a.k, b.k, e.k},
						Off:  [3]int{a.off, b.off, e.off},
						Flat: (a.k*c.Kernel[1]+b.k)*c.Kernel[2] + e.k,
					})
				}
			}
		}
		p.MaxTiles = max(p.MaxTiles, ph.Tiles)
	}
	p.Phases = phases
}

// planWindow finds the input columns a TW thread's (output, kw) pairs
// read, relative to ow0/stride_w, and whether loads and stores can be
// float4s. Every thread has a pair: kw = 0 reaches the j with stride_w
// dividing j + pad_w, and TW spans every residue.
func (p *Plan) planWindow() {
	c, tw := p.Conv, p.Tile.TW()
	lo, hi, reached := 1<<30, -(1 << 30), 0
	for j := range tw {
		hit := false
		for kw := range c.Kernel[2] {
			if v := j + c.Padding[2] - kw*c.Dilation[2]; mod(v, c.Stride[2]) == 0 {
				lo, hi, hit = min(lo, v/c.Stride[2]), max(hi, v/c.Stride[2]), true
			}
		}
		if hit {
			reached++
		}
	}
	w := Window{Lo: lo, Len: hi - lo + 1, Reached: reached}
	if c.In[2]%4 == 0 && (tw/c.Stride[2])%4 == 0 {
		w.Vector = true
		w.Lo = lo - mod(lo, 4)
		w.Len = 4 * ceilDiv(hi+1-w.Lo, 4)
	}
	p.Window = w
	p.Epilogue.VectorStore = p.Out[2]%4 == 0 && tw%4 == 0
}

// TapWidth is how many weight taps one entry of Taps stands for, from its
// Flat on: the kw row with Tile.TW, else one.
func (p *Plan) TapWidth() int {
	if p.Tile.TW() > 0 {
		return p.Conv.Kernel[2]
	}
	return 1
}

// planSplits shares the tile's split_k among the phases in proportion to
// their taps: the longest phase gets SplitK blocks, one with an eighth of
// its taps an eighth of them (rounded up). Equal shares would leave the
// longest phase's blocks running while the others' SMs idle (a stride-2
// kernel-3 problem's phases have 1 to 8 taps). A phase without taps gets
// one block, which writes its zeros.
func (p *Plan) planSplits() {
	n, longest := p.Tile.SplitK(), p.maxPhaseTaps()
	for i := range p.Phases {
		if ph := &p.Phases[i]; n > 1 && ph.TapCount > 0 {
			ph.Splits = ceilDiv(n*ph.TapCount, longest)
		}
	}
}

// Residues is how many residues mod stride hold outputs per dimension
// (the phases are every combination, in row-major order).
func (p *Plan) Residues() [3]int {
	var r [3]int
	for _, ph := range p.Phases {
		for d := range 3 {
			r[d] = max(r[d], ph.R[d]+1)
		}
	}
	return r
}

// SplitTable is each phase's Splits at its residues' row-major index in a
// Residues() array: where the kernels look up how many copies of an
// output the splits write.
func (p *Plan) SplitTable() []int {
	r := p.Residues()
	t := make([]int, r[0]*r[1]*r[2])
	for _, ph := range p.Phases {
		t[(ph.R[0]*r[1]+ph.R[1])*r[2]+ph.R[2]] = ph.Splits
	}
	return t
}

// maxPhaseTaps is the most taps any phase has.
func (p *Plan) maxPhaseTaps() int {
	n := 0
	for _, ph := range p.Phases {
		n = max(n, ph.TapCount)
	}
	return n
}

// CIChunks is how many BK-channel chunks cover one group's input channels.
func (p *Plan) CIChunks() int { return ceilDiv(p.CinG, p.Tile.BK()) }

func (p *Plan) String() string {
	return fmt.Sprintf("%s: out %v, %d phases, grid %v x %d threads, tile %s", p.Spec.Name, p.Out, len(p.Phases), p.Grid, p.Threads, p.Tile)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func mod(a, b int) int { return ((a % b) + b) % b }

// NextPow2 is the smallest power of two at least n (1 for n <= 1).
func NextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
