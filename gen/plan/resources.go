package plan

// Registers is the estimated registers a thread of the main kernel needs,
// the estimate the plan holds against ptxas's cap (checkTile,
// checkWGMMAResources); a wgmma tile's mma.sync form on a target without
// wgmma needs mmaSyncExtraRegisters more. The chooser counts resident
// blocks from it.
func (p *Plan) Registers() int {
	t := p.Tile
	var n int
	switch {
	case t.WGMMA != nil:
		n, _ = p.wgmmaRegisters()
		if !p.Target.WGMMA {
			n += mmaSyncExtraRegisters
		}
	case t.MMA != nil:
		n, _ = p.mmaRegisters()
	case t.Direct != nil:
		n, _ = p.directRegisters()
	case t.Spectral != nil:
		// The energy kernel: a complex sum per sample and channel held,
		// as many again for the chunk's weights in flight and addresses
		// (ptxas: 128 at 16 samples and two channels).
		n = 4 * EnergyWarpChans * p.Spectral.Samples
	default:
		n, _ = p.ffmaRegisters()
	}
	return min(n, maxRegsPerThread)
}

// MMASyncSpills reports whether a wgmma tile on a target without wgmma
// is one whose mma.sync code ptxas spills on some shapes, which the
// chooser and tuning leave out (a spec may still name it; the compile
// check then reports the spill): Winograd pairs of two slabs past 48
// columns, whose running sums, A parts and 16-byte weight fragments fill
// the registers; two slabs past 48 columns with sums of two steps (CUDA
// 13 spilled 8 to 24 bytes on all 12 zoo shapes of 64 columns, and fit
// 32 columns in 166 registers); and tiles whose wgmma estimate reaches
// mmaSyncFitsBelow for their slabs.
func (p *Plan) MMASyncSpills() bool {
	t := p.Tile.WGMMA
	if p.Target.WGMMA || t == nil {
		return false
	}
	if t.Slabs == 2 && p.Tile.BN() > 48 && (t.Winograd || t.Span == 2 && !p.WGMMA.OneSpan) {
		return true
	}
	need, _ := p.wgmmaRegisters()
	limit, ok := mmaSyncFitsBelow[t.Slabs]
	return ok && need >= limit
}

// mmaSyncFitsBelow is, by slabs, the wgmma register estimate from which
// mma.sync code spills: ptxas's 255 less the most the sm_80 cubins took
// over the estimate on the tiles that fit (docs/perf/calibration.md).
var mmaSyncFitsBelow = map[int]int{1: 188, 2: 240}

// ResidentBlocks is how many blocks of the main kernel the chooser's
// cost model counts an SM of the target running at once: FitBlocks, but
// one for a wgmma tile's mma.sync form (its rate was fitted so).
func (p *Plan) ResidentBlocks() int {
	if p.Tile.WGMMA != nil && !p.Target.WGMMA {
		return 1
	}
	return p.FitBlocks()
}

// FitBlocks is how many blocks of the main kernel an SM of the target
// holds at once: the least of its threads, registers (Registers) and
// shared memory (with what the runtime keeps a block) allow, at least one.
func (p *Plan) FitBlocks() int {
	n := min(maxThreadsPerSM/max(1, p.Threads), maxBlocksPerSM, regsPerSM/(max(1, p.Threads)*p.Registers()))
	n = min(n, p.Target.SmemPerSM/(p.SmemBytes+smemReservedPerBlock))
	return max(1, n)
}

// maxBlocksPerSM is the resident blocks an SM holds at most (sm_80 and
// sm_90 alike).
const maxBlocksPerSM = 32
