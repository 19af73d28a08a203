package plan

import (
	"convtgen/gen/geom"
	"convtgen/gen/spec"
)

// Launch is how to run one spec's CUDA kernel: the record the verifier
// needs, and the one place that decides which plan fields it gets (the
// generated registry and specs planned on the fly both come from here).
type Launch struct {
	Spec      string // spec name, the folder under out/
	Target    string // the target the file is built for (Target.Name)
	SpecPath  string // spec file, relative to the repository root
	File      string // emitted CUDA submission
	Function  string // main kernel's name
	Repack    string // weight re-layout kernel's name, launched first
	RepackLen int    // elements it writes
	// RepackBlocks is its grid, blocks of RepackBlockThreads
	// (Plan.RepackBlocks).
	RepackBlocks int
	// Relayout, when set, is the input re-layout kernel's name, launched
	// after the repack as RelayoutBlocks blocks of RelayoutBlockThreads
	// (with barriers) that write the RelaidLen elements of the re-laid
	// input; the main kernel then reads that copy, not x.
	Relayout       string
	RelaidLen      int
	RelayoutBlocks int
	// Fill, when set, is the bias fill kernel's name, launched after the
	// re-layout as FillBlocks blocks of FillBlockThreads with (bias, y).
	Fill       string
	FillBlocks int
	// BiasEvery output channels share one bias value (Plan.BiasEvery):
	// the kernel reads a bias of Conv.OutChannels / BiasEvery elements.
	BiasEvery int
	// AddSplits, when set, is the kernel that adds the main kernel's
	// partial outputs (split_k): the main kernel then writes them to a
	// workspace of WorkspaceLen elements (one copy of the output a split,
	// in split order) in place of y, and AddSplits, launched after it as
	// AddSplitsBlocks blocks of AddSplitsBlockThreads with (workspace,
	// bias, y), writes y.
	AddSplits       string
	WorkspaceLen    int
	AddSplitsBlocks int
	// StoreExtras are the lengths of the tensors the main kernel's (and
	// the fill's) store reads for the ops it applies (Epilogue.Extras),
	// its parameters between the bias and y, in order; 0 past the last.
	StoreExtras [MaxStoreExtras]int
	Grid        [3]int
	Threads     int
	SmemBytes   int
	// DynamicSmem: the main kernel's dynamic shared memory in bytes (0:
	// static), opted in to before it is launched with it.
	DynamicSmem int
	Precision   string
	Tile        string // the tile as the plan resolved it, in the flat form the reports record (spec.FlatV1)
	Conv        geom.Conv
	Out         [3]int
	FLOPs       float64
	MinBytes    float64
}

// Launch returns the launch record of the plan's CUDA submission in file.
func (p *Plan) Launch(file string) Launch {
	var store [MaxStoreExtras]int
	for i, e := range p.Epilogue.Extras {
		store[i] = p.Epilogue.Chain.Extras[e.Arg].Len
	}
	return Launch{
		Spec:            p.Spec.Name,
		Target:          p.Target.Name,
		SpecPath:        p.Spec.Path,
		File:            file,
		Function:        p.Names.Kernel,
		Repack:          p.Names.Repack,
		RepackLen:       p.RepackLen(),
		RepackBlocks:    p.RepackBlocks(),
		Relayout:        p.Names.Relayout,
		RelaidLen:       p.WGMMA.XLen,
		RelayoutBlocks:  p.WGMMA.RelayoutBlocks,
		Fill:            p.Names.Fill,
		FillBlocks:      p.WGMMA.FillBlocks,
		BiasEvery:       p.BiasEvery(),
		AddSplits:       p.Names.AddSplits,
		WorkspaceLen:    p.WorkspaceLen(),
		AddSplitsBlocks: p.AddSplitsBlocks(),
		StoreExtras:     store,
		Grid:            p.Grid,
		Threads:         p.Threads,
		SmemBytes:       p.SmemBytes,
		DynamicSmem:     p.DynamicSmem,
		Precision:       p.Tile.Family().Precision(),
		Tile:            spec.FlatV1(p.Tile.Family()),
		Conv:            p.Conv,
		Out:             p.Out,
		FLOPs:           p.Conv.FLOPs(),
		MinBytes:        p.Conv.MinBytes(),
	}
}

// RepackBlockThreads is the weight re-layout's block size, one thread an
// element (the host wrapper's launch in templates/cuda.py.tmpl).
const RepackBlockThreads = 256

// ImageBlocks is the grid of a wgmma tile's weight re-layout, one thread
// for each of its n units (ImagePerThread floats each): at least one
// block, as a grid of none is an invalid launch, and a plan whose phases
// have no taps at all (every output the bias) has an empty image.
func ImageBlocks(n int) int { return max(1, ceilDiv(n, RepackBlockThreads)) }

// Transpose is the plain weight re-layout (every tile but wgmma's), which
// per group transposes PyTorch's (Cin/groups x Cout/groups) by taps matrix
// to taps by (Cin/groups x Cout/groups). A block moves a tile of Rows rows
// by Cols taps through shared memory, so that its reads run along the taps
// and its writes along the rows, both in whole runs: one thread an output
// element read a 32-byte sector for each 4-byte weight wherever taps >= 8.
type Transpose struct {
	Rows, Cols int // a block's tile: Cols = min(taps, 32), Rows*Cols <= 1024
	// Pitch is a tile row in shared memory, odd, so that the threads
	// reading a column meet 32 different banks.
	Pitch          int
	TilesR, TilesT int // tiles along the rows and the taps, per group
	// RaggedR, RaggedT: the last tile along the rows, the taps, passes
	// the matrix, and the tiles' elements are guarded.
	RaggedR, RaggedT bool
}

// Transpose returns the plain re-layout's tiling (zero where there is
// none: a wgmma image, or PyTorch's layout read as it is).
func (p *Plan) Transpose() Transpose {
	if p.RepackLen() == 0 || p.Tile.WGMMA != nil {
		return Transpose{}
	}
	rows, taps := p.CinG*p.CoutG, p.Conv.Taps()
	cols := min(taps, 32)
	t := Transpose{Rows: 32 * (32 / cols), Cols: cols, Pitch: cols | 1}
	t.TilesR, t.TilesT = ceilDiv(rows, t.Rows), ceilDiv(taps, cols)
	t.RaggedR, t.RaggedT = rows%t.Rows != 0, taps%cols != 0
	return t
}

// RepackBlocks is the weight re-layout's grid, blocks of
// RepackBlockThreads: the wgmma image's ImageBlocks, or a block a tile of
// the transpose (0 without a re-layout).
func (p *Plan) RepackBlocks() int {
	if p.Tile.WGMMA != nil {
		return ImageBlocks(p.WGMMA.ImageLen / p.WGMMA.ImagePerThread)
	}
	t := p.Transpose()
	return p.Conv.Groups * t.TilesR * t.TilesT
}

// RelayoutBlockThreads and FillBlockThreads are the input re-layout's
// and the bias fill's block sizes (the host wrapper's launches in
// templates/cuda_wgmma.tmpl); a fill block writes FillPerBlock
// consecutive outputs, a thread every FillBlockThreads-th of them.
const (
	RelayoutBlockThreads = 256
	FillBlockThreads     = 256
	FillPerBlock         = 1024
)

// AddSplitsBlockThreads is the block size of the kernel that adds the
// split_k partial outputs, one thread an output.
const AddSplitsBlockThreads = 256

// AddSplitsBlocks is that kernel's grid (0 without split_k).
func (p *Plan) AddSplitsBlocks() int {
	if p.Tile.SplitK() == 1 {
		return 0
	}
	return ceilDiv(p.Conv.OutputLen(), AddSplitsBlockThreads)
}

// WorkspaceLen is the elements of the split_k partial outputs: Splits
// copies of the output (0 without split_k).
func (p *Plan) WorkspaceLen() int {
	if p.Tile.SplitK() == 1 {
		return 0
	}
	return p.Tile.SplitK() * p.Conv.OutputLen()
}

// RepackLen is the number of elements the weight re-layout writes: the
// weight image of a wgmma tile, else the weight in its new order; 0 where
// the kernel reads PyTorch's layout (no re-layout).
func (p *Plan) RepackLen() int {
	if p.ReadsTorchWeight() {
		return 0
	}
	if p.Tile.WGMMA != nil {
		return p.WGMMA.ImageLen
	}
	return p.Conv.WeightLen()
}

// CUDA's grid limits: up to 2^31-1 blocks along x, 65535 along y and z. A
// launch past them runs nothing.
const (
	MaxGridX  = 1<<31 - 1
	MaxGridYZ = 65535
)

// setGrid sets the main kernel's launch from its logical grid of blocks
// (x, y, z). A grid whose y or z passes 65535 (groups 65536, or 2^24
// output channels in tiles of 64) is folded into x: launch block x' is
// logical block (x' mod X, x'/X mod Y, x'/(X*Y)), which the kernel decodes
// (Fold). Past 2^31-1 blocks in all there is no launch: an error on the
// spec, as are the one-dimensional launches' grids past the limit.
func (p *Plan) setGrid(blocks [3]int) error {
	p.Blocks, p.Grid, p.Fold = blocks, blocks, false
	if blocks[1] > MaxGridYZ || blocks[2] > MaxGridYZ {
		p.Grid, p.Fold = [3]int{blocks[0] * blocks[1] * blocks[2], 1, 1}, true
	}
	s := p.Spec
	var errs spec.Errors
	if p.Grid[0] > MaxGridX || p.Grid[0] < 0 {
		errs = append(errs, s.Errorf("problem", "", "needs a grid of %d x %d x %d blocks of %d threads (%d in all): CUDA launches at most %d",
			blocks[0], blocks[1], blocks[2], p.Threads, p.Grid[0], MaxGridX))
	}
	for _, l := range []struct {
		name   string
		blocks int
	}{{"weight re-layout", p.RepackBlocks()}, {"input re-layout", p.WGMMA.RelayoutBlocks}, {"bias fill", p.WGMMA.FillBlocks}, {"sum of the splits", p.AddSplitsBlocks()}} {
		if l.blocks > MaxGridX {
			errs = append(errs, s.Errorf("problem", "", "the %s needs %d blocks: CUDA launches at most %d", l.name, l.blocks, MaxGridX))
		}
	}
	if errs != nil {
		return errs
	}
	return nil
}
