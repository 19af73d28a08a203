package plan

import (
	"fmt"
	"slices"
	"strconv"

	"convtgen/gen/geom"
	"convtgen/gen/spec"
)

// WGMMA is the layout of a wgmma tile's kernel: per stride phase one dense
// GEMM with M = batch * the phase's outputs, N = a group's output channels
// and K = the phase's taps * CinP, stepping StepK reduction elements at a
// time.
//
// The input is re-laid per forward as (batch, group, X[0], X[1], X[2],
// CinP): channels last, each group's channels padded with zeros to CinP (a
// multiple of 8, so that a thread's 8 consecutive reduction elements are 8
// channels of one tap, two 16-byte loads), inside a zero border of Lo
// positions before the input per dimension, wide enough that every
// (output, tap) pair of every phase reads inside it: no bounds checks in
// the GEMM.
//
// The weight is re-laid per forward as the image the tensor cores read from
// shared memory: per (group, N tile, phase, step) one Stage of TF32 high
// parts, then low parts, each as four k8 chunks of 2 x NP/8 core matrices
// (8 columns by 4 reduction elements, 128 bytes). Within a step the
// reduction order is permuted so that thread t's fragments of the four
// chunks are its 8 consecutive elements 8t..8t+7: column c of chunk j is
// element 8*(c%4) + 2j + c/4. On a target without wgmma a Stage holds the
// same parts in the order the mma.sync warps read them: per k8 chunk and
// 8-column block, lane by lane, a lane's two high and two low parts
// adjacent (one 16-byte load a product's B fragments).
//
// With Tile.Winograd a GEMM row is a pair of neighbouring outputs of its
// phase along W (its W taps read kernel_w consecutive inputs: stride_w =
// dilation_w), computed by Winograd's F(2, kernel_w) (the Winograd type:
// for kernel_w 3, from the pair's four inputs d0..d3 and the weights g0..g2
// of the taps that read d0..d2 (kw 2, 1, 0), m0 = (d0 - d2) g0,
// m1 = (d1 + d2)(g0 + g1 + g2)/2, m2 = (d2 - d1)(g0 - g1 + g2)/2,
// m3 = (d3 - d1) g2, y0 = m0 + m1 + m2, y1 = m1 - m2 + m3): kernel_w + 1
// products over the (d, h) taps and channels where the direct pair takes
// 2 kernel_w. A phase's steps are kernel_w + 1 equal runs, one per product,
// each of its own tensor-core spans, whose sums go to both outputs'
// running sums; the image holds the transformed weights. The re-laid input
// holds the transformed inputs: along W, per pair, the products' inputs,
// CinP channels each, so that a step loads one position a row as the
// direct GEMM does (computing them in the GEMM from several loads a row
// makes it feed-bound).
type WGMMA struct {
	CinP int    // input channels per group in the re-laid input, a multiple of 8
	Lo   [3]int // border before the input per dimension
	// X is the re-laid input's extent per dimension; with Winograd X[2]
	// is Products x Pairs (a pair's products' inputs), and d0 of pair p is
	// input 2p + PairIn0 along W (zero outside the input).
	X              [3]int
	XLen           int // re-laid input elements
	Pairs, PairIn0 int // with Winograd: pairs along W of every phase with taps
	// Winograd: the F(2, kernel_w) of a Winograd tile, else nil.
	Winograd      *Winograd
	RelayoutStage int // floats of the re-layout's shared memory, (positions it reads) x (CinP+1)
	// The input re-layout: a block of RelayoutBlockThreads writes
	// RelayoutPos consecutive positions of one (batch, group, X[0], X[1])
	// bordered row, all CinP channels of each: one contiguous run of
	// RelayoutPos*CinP floats of the re-laid input. A row is
	// RelayoutChunks such runs (the last one shorter where they do not
	// divide X[2]), RelayoutBlocks blocks in all. With Winograd a block
	// writes RelayoutPos pairs (Products positions each) from the
	// 2*RelayoutPos + kernel_w - 1 inputs they read.
	RelayoutPos, RelayoutChunks, RelayoutBlocks int
	// Per phase (in Plan.Phases order): its GEMM taps (all its taps, or
	// with KWInN or Winograd its (d, h) taps), its StepK-deep steps over
	// GemmTaps * CinP (the last one padded with zeros; none for a phase
	// without taps, whose outputs are the bias; Products times as many
	// with Winograd) and the first of them in the weight image; TotalSteps over
	// all phases. Its GEMM rows run along lines of Line positions: its
	// outputs along W, or with KWInN (a phase per (d, h) residue) the
	// input positions that anchor outputs, WSpan more, or with Winograd
	// its pairs of outputs along W.
	GemmTaps, Steps, StepStart, Rows, Line []int
	TotalSteps                             int
	// OneSpan: Tile.Span covers every phase's steps, so a phase's
	// tensor-core sums are its result and no fp32 running sums are kept.
	OneSpan bool
	// Parked: with Tile.ParkSums (and more than one span) the running
	// sums' floats in shared memory, from float ParkedAt on (past the
	// stages and the kw_in_n sums); else 0.
	Parked, ParkedAt int
	// BarriersAt: with Tile.BulkWeights, the float in shared memory where
	// the stages' barriers start (8 bytes each, past everything else).
	BarriersAt int
	// KWInN: N tiles of CoutTile output channels by kernel_w taps; a block
	// computes BM rows and writes the outputs anchored at its first
	// OutRows (the rest feed them: WSpan rows, kwSpan). Row q of a line
	// anchors outputs AnchorW0 + stride_w*q + rho, rho < stride_w, those
	// inside the output (0 at stride 1: row q is output q). On the way
	// out ChannelLanes threads share an output position (where a block
	// writes fewer outputs a channel than it has threads), each every
	// ChannelLanes-th channel, so each decodes its position once.
	CoutTile, WSpan, OutRows, ChannelLanes, AnchorW0 int
	// EarlyA: on Hopper a step's input loads go out while the step
	// before's products run, where the registers allow: earlyARegisters
	// more than wgmmaRegisters' estimate under min_blocks' cap, or no cap
	// but ptxas's own 255 (which two slabs of 72 columns fit), or where
	// Tile.EarlyInputs asks; else after those products, as on mma.sync.
	EarlyA bool
	// SumsRow: floats a GEMM row's sums take in shared memory on their way
	// out with KWInN, and SumsVector the channels a thread reads of it at
	// once. Where CoutTile is a multiple of 4, float4 reads (4 channels)
	// from rows of BN + 4: 16-byte aligned, and 4 past a multiple of 8, so
	// that a warp's reads of consecutive rows fill each wavefront's 32
	// banks once. Else single floats from rows of BN + 3, odd, so that a
	// warp's reads meet different banks. Either way a warp's writes of 8
	// rows by 4 column pairs (g*SumsRow + 2t) meet two to a bank at most,
	// where BN + 1 put four.
	SumsRow, SumsVector int
	// TapOffsets: per entry of Plan.Taps, where it reads in the re-laid
	// input relative to the output's own position there.
	TapOffsets []int
	// Fill: some phase has no taps. Its outputs are the bias, and a fill
	// kernel writes the bias over the whole output first, FillBlocks
	// blocks of 1024 outputs (256 threads, 4 coalesced stores each),
	// before the GEMM overwrites what taps reach: coalesced stores, where
	// the tap-less phases' own would be scattered single ones. Writing it
	// from the GEMM's blocks instead costs more in decoding each output's
	// phase than the overlap wins.
	Fill       bool
	FillBlocks int
	Tiles      int // blocks of OutRows over the largest phase with taps: the grid's x
	// Parts: the blocks a row tile's phases are shared among (Tile's
	// PhaseSplit, or the plan's choice): part k runs phases PartPhase[k]
	// up to PartPhase[k+1], whose steps in the weight image are
	// PartStep[k] up to PartStep[k+1] (Parts+1 entries each; a run of
	// consecutive phases, so that a block streams one run of the image).
	// The runs hold equal shares of the steps as nearly as phases allow.
	Parts               int
	PartPhase, PartStep []int
	NTiles              int // N tiles over a group's output channels
	Stage               int // floats of one step's weight image (hi and lo parts)
	ImageLen            int // weight image floats: groups * NTiles * TotalSteps * Stage
	// ImagePerThread: the image floats one thread of its re-layout writes,
	// as 16-byte stores: a lane's float4 of mma.sync fragments, or four
	// channels of a core-matrix column, their high and their low parts.
	ImagePerThread int
	SumsPerThread  int // accumulator floats per thread and slab: 64 * NP / 128
}

// Fixed by the instructions: a warpgroup of 4 warps computes a 64-row slab
// (m64nNk8), and a step is 4 k8 chunks deep (a thread's two float4 loads).
const (
	StepK       = 32
	slabRows    = 64
	wgmmaMaxN   = 64 // columns per block: more would not leave registers for two slabs
	wgmmaStages = 4
	// wgmmaStageBudget: the shared memory the plan's own choice of stages
	// keeps within, four stages of a 72-column weight image.
	wgmmaStageBudget = 96 * 1024

	// relayoutStageFloats: the input re-layout stages a block's positions
	// in shared memory, CinP+1 floats each, within this many floats (24
	// KiB): eight blocks of 256 threads, the 2048 threads an SM holds,
	// then fit an H200's 228 KiB.
	relayoutStageFloats = 6144
)

// chooseWGMMATile fills a wgmma tile: NP covers a group's output channels
// in as few N tiles of at most 64 columns as it can, rounded up to 8 (the
// instruction's granularity); two slabs, sums of four steps, and (unless
// the spec sets them) as many stages (up to 4) as fit 96 KiB of shared
// memory (two at least: a weight image of 112 columns and the input's two
// slabs are 44 KiB a step). With KWInN a column is a (kw, channel) pair: as
// many channels a tile as keep it within 72 columns (112 with one slab: one
// wide tile beats two narrow ones).
func chooseWGMMATile(r spec.WGMMA, coutG, kw int) Tile {
	if r.Warpgroups == 1 {
		r.Warpgroups = 0 // the default, left unwritten as specs leave it
	}
	if r.MinBlocks == 0 {
		// Left to choose, ptxas (CUDA 11.8, sm_80) caps the kernel at 128
		// registers and spills; two slabs' sums and A parts need ~200.
		r.MinBlocks = 1
	}
	if r.Slabs == 0 {
		// (A Winograd slab holds two outputs' running sums a row: two
		// would not fit 255 registers.)
		r.Slabs = 2
		if r.Winograd {
			r.Slabs = 1
		}
	}
	if r.Span == 0 {
		r.Span = 4
	}
	t := Tile{WGMMA: &r, wgmmaBN: 8 * ceilDiv(ceilDiv(coutG, ceilDiv(coutG, wgmmaMaxN)), 8)}
	if r.KWInN {
		_, coutTile := kwInNTiles(coutG, kw, r.Slabs)
		t.wgmmaBN = 8 * ceilDiv(kw*coutTile, 8)
	}
	if r.Stages == 0 {
		r.Stages = min(wgmmaStages, (wgmmaStageBudget-4*parkedFloats(t))/wgmmaStageBytes(t))
	}
	return t
}

// kwInNMaxN: the most columns a KWInN tile takes, by slabs.
var kwInNMaxN = [3]int{1: 112, 2: 72}

// kwInNTiles splits a group's output channels into the fewest N tiles of
// a KWInN tile, evenly: tiles, and channels a tile.
func kwInNTiles(coutG, kw, slabs int) (tiles, coutTile int) {
	tiles = ceilDiv(coutG, max(1, kwInNMaxN[slabs]/kw))
	return tiles, ceilDiv(coutG, tiles)
}

// parkedFloats: the running sums a ParkSums tile keeps in shared memory,
// every thread's of every slab (with Winograd, of a pair's second output;
// the first's stay in registers).
func parkedFloats(t Tile) int {
	if !t.WGMMA.ParkSums {
		return 0
	}
	return t.BM() * t.BN()
}

// outsPerRow: the outputs a GEMM row holds sums of, a Winograd pair or one.
func outsPerRow(t Tile) int {
	if t.WGMMA.Winograd {
		return 2
	}
	return 1
}

// wgmmaStageBytes: one step's shared memory: the weight image, hi and lo
// parts of StepK x BN, and with CpAsync the input's, StepK x BM.
func wgmmaStageBytes(t Tile) int {
	b := 2 * StepK * t.BN() * 4
	if t.WGMMA.CpAsync {
		b += StepK * t.BM() * 4
	}
	return b
}

// planWGMMA lays out the re-laid tensors and the grid of a wgmma tile over
// the phases planPhases found.
func (p *Plan) planWGMMA() {
	c, t := p.Conv, p.Tile
	w := WGMMA{CinP: 8 * ceilDiv(p.CinG, 8), NTiles: ceilDiv(p.CoutG, t.BN()), SumsPerThread: t.BN() / 2}
	// Output q of a phase reads input q + Off through each of its taps:
	// the border holds the lowest such index, the extent the highest.
	// (A Winograd line's last pair reads as if its second output were
	// there.)
	var hi [3]int
	for _, ph := range p.Phases {
		q := ph.Q
		q[2] = outsPerRow(t) * ceilDiv(q[2], outsPerRow(t))
		for _, tp := range p.Taps[ph.TapStart : ph.TapStart+ph.TapCount] {
			for i := range 3 {
				w.Lo[i] = max(w.Lo[i], -tp.Off[i])
				hi[i] = max(hi[i], q[i]+tp.Off[i])
			}
		}
	}
	w.XLen = c.Batch * c.Groups * w.CinP
	for i := range 3 {
		w.X[i] = w.Lo[i] + max(c.In[i], hi[i])
	}
	if t.WGMMA.Winograd {
		// Every phase with taps has the one W residue that has taps, so
		// the same pairs and the same lowest W offset, its last kw's (one
		// pair of zeros where no phase has taps).
		wino, _ := NewWinograd(c.Kernel[2])
		w.Winograd = &wino
		w.Pairs = 1
		for _, ph := range p.Phases {
			if ph.TapCount > 0 {
				w.Pairs = ceilDiv(ph.Q[2], 2)
				w.PairIn0 = p.Taps[ph.TapStart+wino.R-1].Off[2]
			}
		}
		w.X[2] = wino.Products() * w.Pairs
	}
	for i := range 3 {
		w.XLen *= w.X[i]
	}
	// A whole row a block where it fits, else the fewest chunks that do.
	if wino := w.Winograd; wino != nil {
		w.RelayoutChunks = ceilDiv(w.Pairs, max(1, (relayoutStageFloats/(w.CinP+1)-wino.R+1)/2))
		w.RelayoutPos = ceilDiv(w.Pairs, w.RelayoutChunks)
		w.RelayoutStage = wino.ReadPos(w.RelayoutPos) * (w.CinP + 1)
	} else {
		w.RelayoutChunks = ceilDiv(w.X[2], max(1, relayoutStageFloats/(w.CinP+1)))
		w.RelayoutPos = ceilDiv(w.X[2], w.RelayoutChunks)
		w.RelayoutStage = w.RelayoutPos * (w.CinP + 1)
	}
	w.RelayoutBlocks = w.XLen / (w.X[2] * w.CinP) * w.RelayoutChunks
	w.Tiles = 1 // with no taps at all, one block that skips every phase
	w.OutRows = t.BM()
	perTap, products := 1, 1
	if wino := w.Winograd; wino != nil {
		// A phase's taps come (d, h) by (d, h), kw innermost (planPhases):
		// kernel_w a pair, the last at the lowest W offset.
		perTap, products = wino.R, wino.Products()
	}
	if t.WGMMA.KWInN {
		w.WSpan = kwSpan(c)
		w.OutRows -= w.WSpan
		w.AnchorW0 = c.Stride[2]*kwAnchor(c, 0) + (c.Kernel[2]-1)*c.Dilation[2] - c.Padding[2] // row 0's first output
		perTap = c.Kernel[2]                                                                   // every phase has every kw, innermost (kwAnchors)
		w.NTiles, w.CoutTile = kwInNTiles(p.CoutG, c.Kernel[2], t.WGMMA.Slabs)
		w.ChannelLanes = max(1, wgmmaThreads(t)/(w.OutRows*c.Stride[2])) // OutRows > BM/2: the plan refuses a longer reach
		w.SumsRow, w.SumsVector = t.BN()+3, 1
		if w.CoutTile%4 == 0 {
			w.SumsRow, w.SumsVector = t.BN()+4, 4
		}
	}
	for _, ph := range p.Phases {
		taps := ph.TapCount / perTap
		line := ceilDiv(ph.Q[2], outsPerRow(t)) + w.WSpan
		w.GemmTaps = append(w.GemmTaps, taps)
		w.Line = append(w.Line, line)
		w.Rows = append(w.Rows, c.Batch*ph.Q[0]*ph.Q[1]*line)
		w.StepStart = append(w.StepStart, w.TotalSteps)
		w.Steps = append(w.Steps, products*ceilDiv(taps*w.CinP, StepK))
		w.TotalSteps += w.Steps[len(w.Steps)-1]
		if taps == 0 {
			w.Fill = true
		} else {
			w.Tiles = max(w.Tiles, ceilDiv(w.Rows[len(w.Rows)-1], w.OutRows))
		}
	}
	w.OneSpan = !t.WGMMA.Winograd // (its products' sums add to different outputs)
	for _, n := range w.Steps {
		w.OneSpan = w.OneSpan && n <= t.WGMMA.Span
	}
	if w.Fill {
		w.FillBlocks = ceilDiv(c.OutputLen(), FillPerBlock)
	}
	for _, tp := range p.Taps {
		offW := tp.Off[2]
		if t.WGMMA.Winograd {
			offW = 0 // (the transformed inputs of the row's own pair)
		}
		w.TapOffsets = append(w.TapOffsets, ((tp.Off[0]*w.X[1]+tp.Off[1])*w.X[2]+offW)*w.CinP)
	}
	w.Stage = 2 * StepK * t.BN()
	w.ImageLen = c.Groups * w.NTiles * w.TotalSteps * w.Stage
	w.ImagePerThread = 4
	if p.Target.WGMMA {
		w.ImagePerThread = 8
	}
	p.WGMMA = w
	p.Threads = wgmmaThreads(t)
	need, _ := p.wgmmaRegisters()
	capped := registersPerThread(p.Threads, t.WGMMA.MinBlocks)
	p.WGMMA.EarlyA = !t.WGMMA.CpAsync && (t.WGMMA.EarlyInputs || capped == maxRegsPerThread || need+earlyARegisters <= capped)
	p.SmemBytes = t.WGMMA.Stages * wgmmaStageBytes(t)
	if t.WGMMA.KWInN {
		// The block's sums pass through the stages' memory on their way
		// out, SumsRow floats per GEMM row.
		p.SmemBytes = max(p.SmemBytes, t.BM()*w.SumsRow*4)
	}
	if t.WGMMA.ParkSums && !w.OneSpan {
		p.WGMMA.Parked, p.WGMMA.ParkedAt = parkedFloats(t), p.SmemBytes/4
		p.SmemBytes += 4 * p.WGMMA.Parked
	}
	if t.WGMMA.BulkWeights {
		p.WGMMA.BarriersAt = ceilDiv(p.SmemBytes, 8) * 2
		p.SmemBytes = 4*p.WGMMA.BarriersAt + 8*t.WGMMA.Stages
	}
	if p.SmemBytes > MaxSmemBytes {
		p.DynamicSmem = p.SmemBytes
	}
}

// wgmmaThreads: a block's threads, a warpgroup's 128 each.
func wgmmaThreads(t Tile) int { return 128 * t.WGMMA.PerBlock() }

// kwSpan: the input positions along W past an output's anchor that its
// taps reach with W taps as columns (kwAnchors), dilation_w x (kernel_w-1)
// at stride 1.
func kwSpan(c geom.Conv) int {
	return (c.Stride[2] - 1 + (c.Kernel[2]-1)*c.Dilation[2]) / c.Stride[2]
}

// smemReservedPerBlock is what the runtime keeps of an SM's shared memory
// for each resident block.
const smemReservedPerBlock = 1024

// wgmmaRegisters estimates what a wgmma thread needs on sm_90a and says
// what it holds: per slab its tensor-core sums, as many fp32 running sums
// per output of a row (none when one span covers every phase or they are
// parked; with Winograd, parked, the first output's), the A parts of a
// step's four k8 chunks (32) and its 8 inputs of two rows (16), and 13
// more. Fitted to the tiles with min_blocks above 1 that the tuning runs
// compiled (CUDA 13, sm_90a): it refuses those that spilled and none that
// fit.
func (p *Plan) wgmmaRegisters() (int, string) {
	t, w := p.Tile, p.WGMMA
	sums := w.SumsPerThread
	switch {
	case t.WGMMA.Winograd && t.WGMMA.ParkSums:
		sums *= 2
	case !w.OneSpan && !t.WGMMA.ParkSums:
		sums *= 1 + outsPerRow(t)
	}
	return t.WGMMA.Slabs*(sums+48) + 13, fmt.Sprintf("%d slab(s) of %d sums and running sums, A parts and inputs", t.WGMMA.Slabs, sums)
}

// earlyARegisters: what loading a step's inputs during the products
// before it costs (CUDA 13, sm_90a): 5 or 6 registers past those of
// loading after them, with a margin.
const earlyARegisters = 8

// mmaSyncExtraRegisters: what the sm_80 code (mma.sync) needs beyond
// the wgmma estimate (CUDA 13): up to 43 over the tuned tiles, with a
// margin.
const mmaSyncExtraRegisters = 45

// checkWGMMAResources refuses stages whose shared memory passes what the
// kernel may opt in to on the target, and a min_blocks that an SM could
// not hold for shared memory (its registers would be capped for residency
// that never comes) or under which the registers would not fit (a spill).
// On sm80 the tile's products go to mma.sync, which needs more registers
// from the same fragments, and the kernel asks for one block an SM (a cap
// of 128 registers is too few there): min_blocks is sm90's.
func (p *Plan) checkWGMMAResources() error {
	t, s, tg := p.Tile, p.Spec, p.Target
	var errs spec.Errors
	need, what := p.wgmmaRegisters()
	minBlocks := t.WGMMA.MinBlocks
	if tg.WGMMA {
		if need > registersPerThread(p.Threads, minBlocks) {
			errs = append(errs, s.Errorf(p.field("min_blocks"), strconv.Itoa(minBlocks),
				"gives %d threads, %d registers each, but %s need about %d", p.Threads, registersPerThread(p.Threads, minBlocks), what, need))
		}
	} else {
		minBlocks = 1
		// A concern only where a block's threads cap the registers below
		// ptxas's own 255 (more than 256 threads), under which every tile
		// measured fit.
		if capped := registersPerThread(p.Threads, 1); capped < maxRegsPerThread && need+mmaSyncExtraRegisters > capped {
			errs = append(errs, s.Errorf(p.field("warpgroups"), strconv.Itoa(t.WGMMA.PerBlock()),
				"gives %d threads, %d registers each on %s, but its mma.sync code needs about %d (fewer warpgroups or sums)", p.Threads, capped, tg.Name, need+mmaSyncExtraRegisters))
		}
	}
	if p.SmemBytes > tg.SmemPerBlock {
		errs = append(errs, s.Errorf(p.field("stages"), strconv.Itoa(t.WGMMA.Stages),
			"needs %d bytes of shared memory (%d a step); a block on %s opts in to at most %d", p.SmemBytes, wgmmaStageBytes(t), tg.Name, tg.SmemPerBlock))
	}
	if perBlock := p.SmemBytes + smemReservedPerBlock; minBlocks*perBlock > tg.SmemPerSM {
		errs = append(errs, s.Errorf(p.field("min_blocks"), strconv.Itoa(t.WGMMA.MinBlocks),
			"asks for %d blocks per SM, but each needs %d bytes of shared memory with what the runtime keeps: an SM of %s holds %d (fewer stages need less)",
			minBlocks, perBlock, tg.Name, tg.SmemPerSM))
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// splitPhases shares each row tile's phases among WGMMA.Parts blocks:
// the tile's PhaseSplit, or where it leaves the choice, the count whose
// grid finishes soonest (choosePhaseSplit). Parts past the phases with
// taps would have nothing to compute.
func (p *Plan) splitPhases() error {
	w, t := &p.WGMMA, p.Tile.WGMMA
	var steps []int // per phase with taps
	for _, n := range w.Steps {
		if n > 0 {
			steps = append(steps, n)
		}
	}
	parts := t.PhaseSplit
	if parts > max(1, len(steps)) {
		return spec.Errors{p.Spec.Errorf(p.field("phase_split"), strconv.Itoa(parts),
			"shares a row tile's phases among %d blocks, but %d phases have taps: at most %d", parts, len(steps), max(1, len(steps)))}
	}
	chosen := p.choosePhaseSplit(steps)
	if parts == 0 {
		parts = chosen
	}
	// The tile names the split where it shares (as the plan chose or as
	// given), or where the spec keeps one block from a plan that would
	// share; one block the plan chose too is left unwritten (as version
	// 1 knew every such tile).
	t.PhaseSplit = parts
	if parts == 1 && chosen == 1 {
		t.PhaseSplit = 0
	}
	w.Parts = parts
	// Part k starts at the phase with taps runs[k] (phase 0 for the
	// first: tap-less phases are skipped wherever they fall).
	runs := balancedRuns(steps, parts)
	w.PartPhase, w.PartStep = []int{0}, []int{0}
	seen := 0
	for i, n := range w.Steps {
		if n == 0 {
			continue
		}
		if k := len(w.PartPhase); k < parts && seen == runs[k] {
			w.PartPhase, w.PartStep = append(w.PartPhase, i), append(w.PartStep, w.StepStart[i])
		}
		seen++
	}
	w.PartPhase, w.PartStep = append(w.PartPhase, len(w.Steps)), append(w.PartStep, w.TotalSteps)
	return nil
}

// balancedRuns splits weights (each at least 1) into parts runs of
// consecutive entries (parts from 1 to len(weights)), the largest run's
// sum as small as it can be: the first entry of each run. The least
// largest sum that runs of at most parts reach is found by bisection
// (greedy runs test a bound); the runs close early where the entries
// left are just enough for one a run.
func balancedRuns(weights []int, parts int) []int {
	fits := func(bound int) bool {
		runs, sum := 1, 0
		for _, v := range weights {
			if sum+v > bound {
				runs, sum = runs+1, 0
			}
			sum += v
		}
		return runs <= parts
	}
	lo, hi := 0, 0
	for _, v := range weights {
		lo, hi = max(lo, v), hi+v
	}
	for lo < hi {
		if mid := (lo + hi) / 2; fits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	starts, sum := []int{0}, 0
	for i, v := range weights {
		if i > 0 && len(starts) < parts && (sum+v > lo || len(weights)-i == parts-len(starts)) {
			starts, sum = append(starts, i), 0
		}
		sum += v
	}
	return starts
}

// choosePhaseSplit is the plan's share of a row tile's phases (whose
// steps, of the phases with taps, are given): on sm80 the parts, at most
// the phases and spec.MaxPhaseSplit, whose grid finishes soonest by
// phaseSplitTime, the fewest among equals, where that saves splitGain;
// else 1.
func (p *Plan) choosePhaseSplit(steps []int) int {
	if p.Target.WGMMA && 4*p.smallTiles() >= p.Target.SMs {
		// On sm_90a one warpgroup's asynchronous products already keep
		// much of an SM busy: splits paid only on problems of a 64 x 64
		// tile for every few SMs, and elsewhere the chooser's utilisation
		// term, crediting every extra block, ranked split tiles over faster
		// unsplit ones (docs/perf/calibration.md). smallTiles measures the
		// problem, so that no tile becomes eligible by its own size.
		return 1
	}
	if len(steps) == 0 || slices.Max(steps) < p.Tile.WGMMA.Stages {
		// Phases shorter than the pipeline are mostly their epilogues and
		// fills, which more blocks do not shorten: sr_x3's 27 phases of 2
		// steps ran 1.1x to 1.2x slower in 2 to 8 runs than in one block.
		return 1
	}
	unsplit := p.phaseSplitTime(steps, 1)
	best, bestTime := 1, unsplit
	for parts := 2; parts <= min(len(steps), spec.MaxPhaseSplit); parts++ {
		if v := p.phaseSplitTime(steps, parts); v < bestTime {
			best, bestTime = parts, v
		}
	}
	if bestTime > splitGain*unsplit {
		return 1
	}
	return best
}

// smallTiles: the blocks of a grid of 64-row, 64-column tiles over the
// largest phase with taps, whatever the tile: a measure of the problem,
// so that every tile of it is split, or none, and the chooser compares
// them alike.
func (p *Plan) smallTiles() int {
	rows := 0
	for i, n := range p.WGMMA.Steps {
		if n > 0 {
			rows = max(rows, p.WGMMA.Rows[i])
		}
	}
	return ceilDiv(rows, slabRows) * ceilDiv(p.CoutG, wgmmaMaxN) * p.Conv.Groups
}

// splitGain: a split the plan chooses must save a tenth of the time at
// least. Smaller gains are within what phaseSplitTime cannot see (each
// block's own epilogue and pipeline start, the stores of neighbouring
// outputs meeting in L2), and tipped the chooser between tiles whose
// estimates lay within that of each other.
const splitGain = 0.9

// phaseSplitTime is a grid's time in steps with its row tiles' phases in
// parts runs: an SM's blocks (the grid over the target's SMs) run
// FitBlocks at once, which share its tensor cores; fewer run as fast as
// one, so a grid that leaves SMs idle or some with fewer blocks gains by
// more, shorter blocks. A block takes its longest run's steps and the
// fill of its pipeline (fitted on zoo tiles timed at 1, 2, 4 and 8 runs:
// docs/perf/calibration.md).
func (p *Plan) phaseSplitTime(steps []int, parts int) float64 {
	runs := balancedRuns(steps, parts)
	longest := 0
	for k, start := range runs {
		end := len(steps)
		if k+1 < len(runs) {
			end = runs[k+1]
		}
		n := 0
		for _, v := range steps[start:end] {
			n += v
		}
		longest = max(longest, n)
	}
	blocks := p.WGMMA.Tiles * p.WGMMA.NTiles * p.Conv.Groups * parts
	perSM := float64(ceilDiv(blocks, p.Target.SMs)) / float64(p.FitBlocks())
	return float64(longest+p.Tile.WGMMA.Stages-1) * max(1, perSM)
}
