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

// ResidentBlocks is how many blocks of the main kernel an SM of the
// target holds at once: the least of its threads, registers (Registers)
// and shared memory (with what the runtime keeps a block) allow, at least
// one. A wgmma tile's mma.sync form runs one block an SM.
func (p *Plan) ResidentBlocks() int {
	if p.Tile.WGMMA != nil && !p.Target.WGMMA {
		return 1
	}
	n := min(maxThreadsPerSM/max(1, p.Threads), maxBlocksPerSM, regsPerSM/(max(1, p.Threads)*p.Registers()))
	n = min(n, p.Target.SmemPerSM/(p.SmemBytes+smemReservedPerBlock))
	return max(1, n)
}

// maxBlocksPerSM is the resident blocks an SM holds at most (sm_80 and
// sm_90 alike).
const maxBlocksPerSM = 32
