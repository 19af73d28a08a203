package choose

import (
	"fmt"
	"math"

	"convtgen/gen/plan"
)

// The cost model. A forward's time is estimated as
//
//	launches · Launch + copies / BW + max(work / (rate · util), bytes / BW, waves · steps · Step)
//
// launches: the kernels a forward runs (weight repack, input re-layout,
// bias fill, the GEMM, the sum of split_k's partial outputs; Triton: the
// re-layout and the GEMM). copies: what the re-layout kernels (and the
// sum of the splits) read and write; they run apart from the GEMM, so
// their traffic adds to its time rather than hiding under its products. work: the
// multiply-adds (×2) the kernel's tiles compute, padding included (M
// tiles past a phase's rows, N tiles past the channels, K steps past the
// channels or taps, the zero pairs of kw_in_n and fused W phases; tap-less
// phases compute nothing). rate: the family's measured rate at a tile of
// N columns and a reduction K deep, Rate.R · min(1, N/64)^A · K/(K+K0),
// times the option factors below. util: how much of the machine the grid
// keeps busy: blocks over waves of SMs · resident blocks, and below one
// wave, an SM saturated by two resident blocks. bytes: input, weight and
// output once, with each re-laid tensor read in its new form. steps: the
// serial reduction steps of one block, which bound a grid too small to
// hide them.

// Rate is one family's measured throughput on a target.
type Rate struct {
	R    float64 // FLOP/s of tile work at N ≥ 64 and deep K
	A    float64 // exponent of min(1, N/64): narrow tiles run slower
	K0   float64 // reduction depth at which the rate is half R
	Step float64 // seconds per reduction step of a block running alone
}

// Machine is one target's constants: docs/perf/calibration.md says where
// each comes from.
type Machine struct {
	SMs    int     // the target's (plan.Target.SMs)
	BW     float64 // bytes per second, DRAM
	Launch float64 // seconds per kernel launch in a forward
	// Rates by family key (spec.Family.Key()), and "triton-fp32",
	// "triton-3xtf32" for the Triton kernel by precision.
	Rates map[string]Rate
	// BulkWeights and CpAsync scale a wgmma tile's rate (sm_90a only:
	// elsewhere bulk copies are dropped).
	BulkWeights, WGMMACpAsync float64
	// DirectSingle scales the rate of a direct tile whose threads hold one
	// output position (tm 1, no window): each of its loads feeds one row
	// of FMAs and waits alone, and a block's weight staging serves half
	// the outputs of tm 2.
	DirectSingle float64
	// DirectRows and DirectRowsOneChannel scale the rate of a direct tile
	// without a window (rows of tm outputs) where W is strided, and where
	// a group has one input channel (any stride): each of a row thread's
	// input loads serves bn FMAs after its own address and phase test (and
	// with one input channel, one tap's), while a window thread loads a
	// run of input columns once for all its outputs' kw taps. The 12
	// narrow-channel zoo shapes (docs/perf/data/direct-narrow-h200-2026-12-05.json)
	// measured the best row tile at 1.5x to 2.9x the best window tile on
	// strided W and 4.5x to 6.5x with one input channel a group; at stride
	// 1 with several channels, 0.9x to 1.0x (no factor). Those tiles had
	// bn 1 to 4. Past bn 4 a load feeds more FMAs and the loss falls
	// with (4/bn)^2: the zoo's tuning run (tune-kernels-zoo.json, H100)
	// timed bn-8 rows at 1.36x the window on batch_64c8 (1.38x by the
	// rule) and 1.68x to 2.42x with one input channel on batch_128c1
	// (3.25x).
	DirectRows, DirectRowsOneChannel float64
	// DirectWideWindow scales a window tile of more than 8 outputs along
	// W: a thread holds tw·bn sums and loads a longer input run, which
	// costs registers and resident warps that the FLOP rate does not see.
	// The 12 narrow-channel shapes ran 16-wide windows at 0.95x to 1.51x
	// the time of 8-wide ones of the same block and step (geometric mean
	// 1.17x; direct-narrow-h200-2026-12-05.json).
	DirectWideWindow float64
	// DirectLoad is what a direct thread's load of one input costs in
	// FMAs of its own: each load feeds bn FMAs (bn output channels), so a
	// tile of bn < 4 (one or two channels a group) runs at
	// (1 + DirectLoad/4) / (1 + DirectLoad/bn) of the rate the family was
	// fitted at (bn 4 to 16, where the fit found no trend with bn).
	DirectLoad float64
	// MMAPresplit scales an mma.sync tile staged as TF32 parts in fragment
	// order: twice the weight bytes through shared memory and registers
	// for a split the products hide anyway. Each of the four tiles the
	// zoo's tuning run timed both ways ran slower presplit, 1.30x to
	// 1.71x (geometric mean 1.40x; tune-kernels-zoo.json, H100).
	MMAPresplit float64
	// SyncOneSlab scales the rate of a wgmma tile of one slab where it runs
	// as mma.sync (no wgmma on the target): every warp loads the weight
	// stage's fragments from shared memory for its 16 rows, and those loads
	// keep pace with the products; two slabs share them over 32 rows.
	SyncOneSlab float64
	// SyncWideN: the columns up to which a wgmma tile keeps speeding up
	// where it runs as mma.sync, past the rate law's 64: each warp splits
	// its A fragments into TF32 parts once a k8 chunk for every 8 columns,
	// so a wider tile spreads that work thinner. Measured on tiles of W
	// taps as columns; where kernel_w is 1 the columns are channels alone,
	// and such a tile of 104 ran 1.26x to 1.28x slower than two slabs of
	// 64 (video_time_k2/k3, tune-kernels-zoo.json): no speed-up there.
	SyncWideN float64
	// SyncSharedKWInN scales a tile of W taps as columns in blocks of
	// several warpgroups where it runs as mma.sync: slower than the same
	// tile in one warpgroup, where plain tiles were not.
	SyncSharedKWInN float64
}

// Machines are the targets' constants, by plan.Target.Name.
//
// sm90 (H200, measured): the family fits of docs/perf/calibration.md,
// refitted with work counted as the tiles compute it (padding included),
// on the level-1 times of out/gpu/kernels.json, tune-kernels*.json and
// PERF.md v1/v2 (FFMA), v8 (mma.sync), v15/v19 (direct), v3/v5 and
// e2e.json (Triton); Launch and Step from the 100 timed random
// configurations of out/gpu/random-kernels-*.json; BW from PERF.md v20;
// the option factors from PERF.md's "measurements behind the generator's
// choices" (bulk weights), tune-kernels-cp_async.json (cp.async) and the
// zoo's direct tiles of one output a thread against their neighbours on
// the same shape (zoo.json; TestModelAgainstZooPairs).
//
// sm80 (A100, derived): 108 SMs; the same fits scaled by the A100's peak
// over the H200's for the unit each family runs on (FFMA 19.5/67 TFLOP/s;
// TF32 tensor 156/305, the H200's measured mma.sync rate, PERF.md v35;
// DRAM 2.0/4.3 TB/s); wgmma is its mma.sync form there, at the rate its
// sm80 files measured on the H200 (PERF.md v35: 1.37x to 2.3x the sm90
// times) scaled the same way; SyncOneSlab from the sm80 files' tiles of one
// slab against the same tiles with two (TestModelSM80Slabs).
var Machines = map[string]Machine{
	"sm90": {SMs: plan.SM90.SMs, BW: 4.0e12, Launch: 4e-6, BulkWeights: 1.06, WGMMACpAsync: 0.87, DirectSingle: 0.8, DirectRows: 0.4, DirectRowsOneChannel: 0.1, DirectWideWindow: 1 / 1.17, DirectLoad: 1, MMAPresplit: 1 / 1.4, SyncOneSlab: 1, Rates: map[string]Rate{
		"ffma":          {R: 25e12, A: 0.15, K0: 64, Step: 0.5e-6},
		"direct":        {R: 24e12, A: 0, K0: 0, Step: 0.3e-6},
		"mma":           {R: 33e12, A: 0.25, K0: 32, Step: 0.5e-6},
		"wgmma":         {R: 92e12, A: 0.55, K0: 96, Step: 0.4e-6},
		"triton-3xtf32": {R: 90e12, A: 0.35, K0: 384, Step: 0.5e-6},
		"triton-fp32":   {R: 34e12, A: 0.25, K0: 128, Step: 0.5e-6},
		"spectral":      {R: 12.5e12, Step: 0.5e-6},
	}},
	"sm80": {SMs: plan.SM80.SMs, BW: 1.9e12, Launch: 4e-6, BulkWeights: 1, WGMMACpAsync: 0.87, DirectSingle: 0.8, DirectRows: 0.4, DirectRowsOneChannel: 0.1, DirectWideWindow: 1 / 1.17, DirectLoad: 1, MMAPresplit: 1 / 1.4, SyncOneSlab: 0.87, SyncWideN: 96, SyncSharedKWInN: 0.86, Rates: map[string]Rate{
		"ffma":          {R: 25e12 * ffmaA100, A: 0.15, K0: 64, Step: 0.5e-6},
		"direct":        {R: 24e12 * ffmaA100, A: 0, K0: 0, Step: 0.3e-6},
		"mma":           {R: 33e12 * tensorA100, A: 0.25, K0: 32, Step: 0.5e-6},
		"wgmma":         {R: 56e12 * tensorA100, A: 0.55, K0: 96, Step: 0.8e-6},
		"triton-3xtf32": {R: 50e12 * tensorA100, A: 0.35, K0: 384, Step: 0.8e-6},
		"triton-fp32":   {R: 34e12 * ffmaA100, A: 0.25, K0: 128, Step: 0.5e-6},
		"spectral":      {R: 12.5e12 * ffmaA100, Step: 0.5e-6},
	}},
}

// The A100's peaks over the H200's: FFMA 19.5 over 67 TFLOP/s, TF32
// tensor 156 over 305 (the H200's measured mma.sync rate).
const (
	ffmaA100   = 19.5 / 67
	tensorA100 = 156.0 / 305
)

// Estimate is one candidate's estimated time and its terms.
type Estimate struct {
	Seconds                 float64
	Launches                int
	Work                    float64 // FLOPs the tiles compute, padding included
	Useful                  float64 // FLOPs of the convolution
	Rate                    float64 // FLOP/s the family reaches at this tile
	Util                    float64 // share of the machine the grid keeps busy
	Bytes                   float64 // what the GEMM kernel moves
	Copies                  float64 // seconds of the re-layout kernels before it
	Steps                   int     // serial reduction steps of one block
	Waves                   int
	Compute, Memory, Serial float64 // the three bounds, seconds
}

// Bound names the term that decides the estimate.
func (e Estimate) Bound() string {
	switch max(e.Compute, e.Memory, e.Serial) {
	case e.Compute:
		return "compute"
	case e.Memory:
		return "memory"
	}
	return "serial"
}

// String is the estimate as explain prints it.
func (e Estimate) String() string {
	return fmt.Sprintf("%8.3f ms  %-7s  launches %d  copies %.3f  compute %.3f (%.1f TFLOP/s at %.0f%% busy, padding %.2fx)  memory %.3f  serial %.3f (%d steps x %d waves)",
		e.Seconds*1e3, e.Bound(), e.Launches, e.Copies*1e3, e.Compute*1e3, e.Rate/1e12, 100*e.Util, e.Work/math.Max(1, e.Useful), e.Memory*1e3, e.Serial*1e3, e.Steps, e.Waves)
}

// rate is a family's rate at a tile n columns wide and k deep.
func (r Rate) at(n, k int) float64 {
	v := r.R * math.Pow(math.Min(1, float64(n)/64), r.A)
	if r.K0 > 0 {
		v *= float64(k) / (float64(k) + r.K0)
	}
	return v
}

// finish combines the terms.
func (m Machine) finish(e Estimate, blocks, resident int, step float64) Estimate {
	slots := m.SMs * max(1, resident)
	e.Waves = max(1, ceilDiv(blocks, slots))
	if e.Waves > 1 {
		e.Util = float64(blocks) / float64(e.Waves*slots)
	} else {
		e.Util = math.Min(1, float64(blocks)/float64(m.SMs*min(2, max(1, resident))))
	}
	e.Compute = e.Work / (e.Rate * math.Max(e.Util, 1e-9))
	e.Memory = e.Bytes / m.BW
	e.Serial = float64(e.Waves) * float64(e.Steps) * step
	e.Seconds = float64(e.Launches)*m.Launch + e.Copies + max(e.Compute, e.Memory, e.Serial)
	return e
}

// EstimateCUDA is a CUDA plan's estimated time on its target.
func EstimateCUDA(p *plan.Plan) Estimate {
	m := Machines[p.Target.Name]
	if p.Spectral != nil {
		return estimateSpectral(p, m)
	}
	c := p.Conv
	t := p.Tile
	e := Estimate{Useful: c.FLOPs(), Launches: 1}
	blocks := p.Blocks[0] * p.Blocks[1] * p.Blocks[2]
	// A phase's blocks: its M tiles, each shared by its splits, by the N
	// tiles and groups.
	phaseBlocks := func(ph plan.Phase) int { return ph.Tiles * ph.Splits * p.Blocks[1] * c.Groups }
	if p.Names.Repack != "" {
		e.Launches++ // the weight re-layout
	}
	// A re-layout reads its source and writes the copy the GEMM reads.
	bytes, copies := c.MinBytes(), 0.0
	if n := p.RepackLen(); n > 0 {
		copies += 4 * float64(c.WeightLen()+n)
		bytes += 4 * float64(n-c.WeightLen())
	}
	var k, n int
	if t.WGMMA != nil {
		w := p.WGMMA
		e.Launches++ // the input re-layout
		if w.Fill {
			e.Launches++
		}
		copies += 4 * float64(c.InputLen()+w.XLen)
		bytes += 4 * float64(w.XLen-c.InputLen())
		work := 0.0
		for i := range p.Phases {
			if w.Steps[i] == 0 {
				continue
			}
			work += float64(ceilDiv(w.Rows[i], w.OutRows) * t.BM() * w.Steps[i] * plan.StepK)
			e.Steps = max(e.Steps, w.Steps[i])
		}
		e.Work = 2 * work * float64(t.BN()*w.NTiles*c.Groups)
		k, n = e.Steps*plan.StepK, t.BN()
	} else {
		bk, tw := t.BK(), max(1, t.TW())
		chunks := ceilDiv(p.CinG, bk)
		kpad := float64(chunks*bk) / float64(p.CinG)
		if t.Direct != nil {
			kpad = 1 // a direct thread loads exactly its group's channels
		}
		work, rows := 0.0, 0.0
		for _, ph := range p.Phases {
			taps := ph.TapCount * p.TapWidth()
			work += float64(ph.Tiles*t.BM()) * float64(taps)
			rows += float64(ph.M) * float64(taps)
			e.Steps = max(e.Steps, ph.TapCount*chunks)
			k = max(k, taps*p.CinG)
		}
		mpad := 1.0
		if rows > 0 {
			mpad = work / rows
		}
		if tw > 1 {
			// A window thread's TW outputs along W: the last window of a
			// row past the output, and the taps only reached ones compute.
			mpad *= float64(ceilDiv(p.Out[2], tw)*tw) / float64(p.Out[2])
		}
		npad := float64(ceilDiv(p.CoutG, t.BN())*t.BN()) / float64(p.CoutG)
		e.Work = e.Useful * mpad * npad * kpad
		n = t.BN()
		if splits := t.SplitK(); splits > 1 {
			// Each block runs its share of the steps, over a reduction
			// that much shallower; each phase's partial outputs (a copy
			// a split) are written, then read and added by one more
			// launch, which writes y. Only the blocks with a share run.
			e.Steps, k = ceilDiv(e.Steps, splits), k/splits
			e.Launches++
			out, part := 4*float64(c.OutputLen()), 0.0
			blocks = 0
			for _, ph := range p.Phases {
				part += 4 * float64(ph.Splits*ph.M*c.OutChannels)
				blocks += phaseBlocks(ph)
			}
			bytes += part - out
			copies += part + out
		}
	}
	r := m.Rates[t.Family().Key()]
	e.Rate = r.at(n, k)
	if t.WGMMA != nil {
		if t.WGMMA.BulkWeights && p.Target.WGMMA {
			e.Rate *= m.BulkWeights
		}
		if t.WGMMA.CpAsync {
			e.Rate *= m.WGMMACpAsync
		}
		if t.WGMMA.Slabs == 1 && !p.Target.WGMMA {
			e.Rate *= m.SyncOneSlab
		}
		if !p.Target.WGMMA && t.WGMMA.KWInN && t.WGMMA.PerBlock() > 1 {
			e.Rate *= m.SyncSharedKWInN
		}
		if !p.Target.WGMMA && n > 64 && c.Kernel[2] > 1 {
			e.Rate *= math.Pow(math.Min(float64(n), m.SyncWideN)/64, r.A)
		}
	}
	if t.Presplit() {
		e.Rate *= m.MMAPresplit
	}
	if t.Direct != nil && t.TW() == 0 && t.TM() == 1 {
		e.Rate *= m.DirectSingle
	}
	if t.Direct != nil && t.TW() > 8 {
		e.Rate *= m.DirectWideWindow
	}
	if t.Direct != nil && t.TW() == 0 {
		loss := 0.0 // the row tile's extra time, over the window's
		switch {
		case p.CinG == 1:
			loss = 1/m.DirectRowsOneChannel - 1
		case c.Stride[2] > 1:
			loss = 1/m.DirectRows - 1
		}
		e.Rate /= 1 + loss*math.Min(1, math.Pow(4/float64(t.BN()), 2))
	}
	if t.Direct != nil && t.BN() < 4 {
		e.Rate *= (1 + m.DirectLoad/4) / (1 + m.DirectLoad/float64(t.BN()))
	}
	e.Bytes, e.Copies = bytes, copies/m.BW
	step, resident := r.Step, p.ResidentBlocks()
	if t.FFMA != nil || t.MMA != nil {
		// Where the blocks that run steps (those of phases with taps) fit
		// in one wave, the longest block's steps are the time, and a step
		// cannot run faster than its SM computes the tile's BK-deep
		// product, shared with the blocks it holds at once (over more
		// waves the compute term holds that throughput).
		busy := 0
		for _, ph := range p.Phases {
			if ph.TapCount > 0 {
				busy += phaseBlocks(ph)
			}
		}
		if busy <= m.SMs*resident {
			held := min(resident, max(1, ceilDiv(busy, m.SMs)))
			step = max(step, 2*float64(t.BM()*t.BN()*t.BK()*held)*float64(m.SMs)/e.Rate)
		}
	}
	return m.finish(e, blocks, resident, step)
}

// estimateSpectral: the transforms and the GEMM per frequency at the
// spectral rate (#77's 26 GFLOP in 2.1 ms on the H200, PERF.md v41); the
// bytes are the input and the weight once and every transform buffer
// written and read once; a step is a chunk of input channels of the
// energy kernel.
func estimateSpectral(p *plan.Plan, m Machine) Estimate {
	s, c := p.Spectral, p.Conv
	e := Estimate{Launches: 9, Work: p.SpectralFLOPs()}
	e.Useful = e.Work
	e.Bytes = 4*float64(c.InputLen()+c.WeightLen()) + 2*float64(s.WorkspaceBytes())
	e.Steps = ceilDiv(p.CinG, s.ChanChunk) * ceilDiv(c.Batch, s.Samples)
	r := m.Rates["spectral"]
	e.Rate = r.R
	return m.finish(e, p.Blocks[0]*p.Blocks[1]*p.Blocks[2], p.ResidentBlocks(), r.Step)
}

// TritonShape is what a Triton choice's kernels do, as the generator lays
// them out (gen's Triton view): the facts the model needs.
type TritonShape struct {
	Precision string
	BlockN    int     // columns of a program's tile
	K         int     // reduction depth of the deepest program (steps x block_k)
	Steps     int     // reduction steps of the deepest program
	Programs  int     // programs of the GEMM launch
	Work      float64 // FLOPs its tiles compute, padding included
	// CopyBytes: what the re-layout writes (the input copy, the re-laid
	// weight, its TF32 parts), read back by the GEMM in place of
	// SourceBytes, what it reads (the input, the weight).
	CopyBytes, SourceBytes float64
	Warps                  int
}

// EstimateTriton is a Triton choice's estimated time on target.
func EstimateTriton(target string, p *plan.Plan, s TritonShape) Estimate {
	m := Machines[target]
	r := m.Rates["triton-"+s.Precision]
	e := Estimate{Useful: p.Conv.FLOPs(), Launches: 2, Work: s.Work, Steps: s.Steps}
	e.Rate = r.at(s.BlockN, s.K)
	e.Bytes = p.Conv.MinBytes() + s.CopyBytes - s.SourceBytes
	e.Copies = (s.SourceBytes + s.CopyBytes) / m.BW
	// Programs of 4 warps or fewer: about four resident an SM; 8: two.
	resident := max(1, 16/max(1, s.Warps))
	return m.finish(e, s.Programs, resident, r.Step)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
