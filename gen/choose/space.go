package choose

import (
	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// The tuning space: the candidate kernel choices tuning times on a GPU
// (gen's WriteTune) and the chooser ranks by its cost model. Both read
// these lists, so the space is stated once; tuning's labels number them
// in the order CUDASpace gives, so entries are appended, never inserted.

// CUDAKernels lists the choices tried besides the spec's own: the
// plan's defaults in both precisions, 3xtf32 with narrower warp tiles
// (more warps, fewer registers each), also with deeper reduction steps,
// 3xtf32 with presplit staging, the 3xtf32 default with cp.async copies
// (cudaCandidates adds the spec's own tile with them too), and direct
// kernels with 4 (the default), 2, 8 and 1 rows per thread, then 2 and 4
// rows with 4 channels loaded at once and 2 rows by 256 threads.
func CUDAKernels() []spec.Family {
	return []spec.Family{
		spec.FFMA{},
		spec.MMA{},
		spec.MMA{BM: 128, WM: 32},
		spec.MMA{BK: 32, WM: 32},
		spec.MMA{WM: 32, Presplit: true, MinBlocks: 1},
		spec.MMA{BM: 128, WM: 32, Presplit: true, MinBlocks: 1},
		spec.MMA{CpAsync: true},
		spec.Direct{},
		spec.Direct{TM: 2},
		spec.Direct{TM: 8},
		spec.Direct{BM: 256, TM: 1},
		spec.Direct{TM: 2, BK: 4},
		spec.Direct{BM: 512, TM: 2},
		spec.Direct{TM: 4, BK: 4},
	}
}

// WithCpAsync is a family's choice with its tiles copied by cp.async
// (unchanged where it has none, or presplit, Winograd or early inputs
// take the tiles through registers).
func WithCpAsync(f spec.Family) spec.Family {
	switch t := f.(type) {
	case spec.FFMA:
		t.CpAsync = true
		return t
	case spec.MMA:
		t.CpAsync = !t.Presplit
		return t
	case spec.WGMMA:
		t.CpAsync = !t.Winograd && !t.EarlyInputs
		return t
	}
	return f
}

// WGMMAKernels are the wgmma tiles tried: the default, one slab, and
// shorter and longer tensor-core sums; then the kernel's W taps as
// columns with two slabs and one; then the input staged by cp.async,
// with two slabs and one, and the same with W taps as columns; then sums
// of 16 steps (one sum a phase where the phases are that short: no fp32
// running sums) with fewer stages for more blocks per SM, with W taps as
// columns and without, parked sums, and one slab at three stages, four
// blocks an SM; then blocks of two and four warpgroups sharing the
// weight stages, with W taps as columns and without; last, parked sums
// of 12 and 16 steps at four blocks an SM, where the registers the sums
// leave free let the inputs load during the products, and the same sums
// in blocks of two warpgroups sharing the weight stages; then Winograd's
// F(2, kernel_w) along W (where the W taps allow it) with parked sums at four
// blocks an SM, running sums in registers at two, parked sums in blocks of
// two warpgroups, the first with the weights by bulk copies, and the
// first two with the inputs loaded during the products whatever the
// register estimate says; then Winograd with two slabs and parked sums
// at one block an SM (as mma.sync, a warp's weight loads serve 32 rows);
// last, the Winograd tiles again with sums of 4 steps, the longest F(2,5)
// allows (plan.WinogradMaxSpan).
func WGMMAKernels() []spec.Family {
	var out []spec.Family
	for _, t := range []spec.WGMMA{{}, {Slabs: 1}, {Span: 2}, {Span: 8}, {KWInN: true}, {KWInN: true, Slabs: 1},
		{CpAsync: true}, {Slabs: 1, CpAsync: true}, {KWInN: true, CpAsync: true}, {KWInN: true, Slabs: 1, CpAsync: true},
		{KWInN: true, Span: 16}, {KWInN: true, Span: 16, Stages: 5}, {KWInN: true, Span: 16, MinBlocks: 3},
		{KWInN: true, Slabs: 1, Span: 16, Stages: 2, MinBlocks: 4}, {KWInN: true, ParkSums: true, Stages: 3, Span: 8, MinBlocks: 3},
		{Slabs: 1, ParkSums: true, Stages: 2, MinBlocks: 4}, {Slabs: 1, ParkSums: true, Stages: 2, Span: 8, MinBlocks: 4},
		{Slabs: 1, Stages: 3, MinBlocks: 4}, {Slabs: 1, ParkSums: true, Stages: 3, Span: 8, MinBlocks: 4},
		{KWInN: true, Slabs: 1, Warpgroups: 2, Span: 16, Stages: 2, MinBlocks: 2}, {KWInN: true, Slabs: 1, Warpgroups: 4, Span: 16, Stages: 2},
		{KWInN: true, Slabs: 1, Warpgroups: 2, Span: 16, Stages: 3, MinBlocks: 2}, {Slabs: 1, Warpgroups: 2, Stages: 3, MinBlocks: 2},
		{Slabs: 1, Warpgroups: 4, Stages: 3}, {Slabs: 1, Warpgroups: 2, Stages: 4, MinBlocks: 2}, {Slabs: 1, Warpgroups: 2, Span: 16, Stages: 3, MinBlocks: 2},
		{Slabs: 1, ParkSums: true, Stages: 2, Span: 12, MinBlocks: 4}, {Slabs: 1, ParkSums: true, Stages: 2, Span: 16, MinBlocks: 4},
		{Slabs: 1, Warpgroups: 2, ParkSums: true, Span: 16, Stages: 3, MinBlocks: 2}, {Slabs: 1, Warpgroups: 2, ParkSums: true, Span: 16, Stages: 4, MinBlocks: 2},
		{Winograd: true, Slabs: 1, ParkSums: true, Span: 16, Stages: 2, MinBlocks: 4}, {Winograd: true, Slabs: 1, Span: 16, Stages: 3, MinBlocks: 2},
		{Winograd: true, Slabs: 1, Warpgroups: 2, ParkSums: true, Span: 16, Stages: 2, MinBlocks: 2},
		{Winograd: true, Slabs: 1, ParkSums: true, Span: 16, Stages: 2, MinBlocks: 4, BulkWeights: true},
		{Winograd: true, Slabs: 1, ParkSums: true, Span: 16, Stages: 2, MinBlocks: 4, EarlyInputs: true},
		{Winograd: true, Slabs: 1, ParkSums: true, Span: 16, Stages: 2, MinBlocks: 4, BulkWeights: true, EarlyInputs: true},
		{Winograd: true, Slabs: 2, ParkSums: true, Span: 16, Stages: 2, MinBlocks: 1},
		{Winograd: true, Slabs: 1, Stages: 3, MinBlocks: 2}, {Winograd: true, Slabs: 1, ParkSums: true, Stages: 2, MinBlocks: 4},
		{Winograd: true, Slabs: 2, ParkSums: true, Stages: 3, MinBlocks: 1}} {
		out = append(out, t)
	}
	return out
}

// WindowKernels are the W-window direct kernels tried: about 8 outputs
// along W by 8 channels (at 128, 256 and 64 threads, one channel's window
// loaded at a time, and 256 threads loading 8 channels' windows a step:
// a quarter of the steps where the group has many input channels), 4 by
// 16 and 16 by 4. tw is rounded up to a
// multiple of stride_w (down where that passes 16) and bn halved until a
// thread's sums fit in 64 registers, so every one is feasible; bn stops at
// the group's coutG output channels (the next power of two), which
// computes no column past them.
func WindowKernels(strideW, coutG int) []spec.Family {
	var out []spec.Family
	for _, c := range []struct{ tw, bn, bm, bk int }{{8, 8, 0, 0}, {8, 8, 256, 0}, {8, 8, 64, 0}, {8, 8, 0, 1}, {8, 8, 256, 8}, {4, 16, 0, 0}, {16, 4, 0, 0}} {
		tw := strideW * ((c.tw + strideW - 1) / strideW)
		if tw > 16 {
			tw -= strideW
		}
		bn := min(c.bn, plan.NextPow2(coutG))
		for tw*bn > 64 {
			bn /= 2
		}
		out = append(out, spec.Direct{TW: tw, BN: bn, BM: c.bm, BK: c.bk})
	}
	return out
}

// TritonCandidates lists the Triton choices tried besides the spec's own:
// 3xtf32 in both layouts, then with channels last (both operands
// contiguous along the reduction, as the tensor cores' 32-bit operands
// want them) at other block heights and warp counts, and fp32 channels
// last; then the spec's own choice with a padded input, with its W phases
// fused, and with both, and fused padded channels-last tiles of three
// heights (the view drops fusing at stride_w 1 and the border at other
// strides, and a candidate that becomes a duplicate with them);
// then the spec's own choice with the weight split outside tl.dot, alone
// and with a padded input (3xtf32 only); then the spec's own choice with
// a flat (tap, channel) reduction 32 and 64 deep, and channels last,
// padded, split and flat; last, the spec's own choice one step away in
// each tiling knob (block height doubled and halved, the other warp
// count, one stage less and more, a block twice as deep, flat with 8
// warps); then the spec's own choice with its W phases fused and 2 or 4
// outputs per W residue folded into the columns (at default and 64-high
// blocks, 128 columns wide, and with 8 warps); then the spec's own
// choice reading the input channels first, in its border and as it is
// (no input copy at all). Appended, never inserted: labels name
// candidates across runs.
func TritonCandidates(own spec.Triton) []spec.Triton {
	flat := func(t spec.Triton, depth int) spec.Triton {
		t.FlatK, t.BlockK = true, depth
		return t
	}
	split := func(t spec.Triton, pad bool) spec.Triton {
		t.SplitWeight, t.PadInput = t.Precision == "3xtf32", t.PadInput || pad
		return t
	}
	tiled := func(t spec.Triton, blockM, warps, stages, blockK int) spec.Triton {
		t.BlockM, t.Warps, t.Stages, t.BlockK = blockM, warps, stages, blockK
		return t
	}
	with := func(t spec.Triton, fuse, pad bool) spec.Triton {
		if fuse && !t.FuseW {
			t.BlockN = 0 // the default then counts the phases' columns
		}
		t.FuseW, t.PadInput = t.FuseW || fuse, t.PadInput || pad
		return t
	}
	fold := func(t spec.Triton, outputs, blockM, blockN, warps int) spec.Triton {
		// Block depth and width by default: the columns count the folded
		// phases, and the fused reduction steps over whole channel chunks.
		t.FuseW, t.FoldW, t.FlatK, t.BlockK, t.BlockN = true, outputs, false, 0, blockN
		if blockM != 0 {
			t.BlockM = blockM
		}
		if warps != 0 {
			t.Warps = warps
		}
		return t
	}
	channelsFirst := func(t spec.Triton, pad bool) spec.Triton {
		t.ChannelsLast, t.PadInput = false, pad
		return t
	}
	channelsLast := own
	channelsLast.ChannelsLast = true
	return []spec.Triton{
		{Precision: "3xtf32"},
		{Precision: "3xtf32", ChannelsLast: true},
		{Precision: "3xtf32", ChannelsLast: true, Warps: 8},
		{Precision: "3xtf32", ChannelsLast: true, BlockM: 64},
		{Precision: "3xtf32", ChannelsLast: true, BlockM: 256, Warps: 8},
		{Precision: "fp32", ChannelsLast: true},
		with(own, false, true),
		with(own, true, false),
		with(own, true, true),
		{Precision: "3xtf32", ChannelsLast: true, FuseW: true, PadInput: true},
		{Precision: "3xtf32", ChannelsLast: true, FuseW: true, PadInput: true, BlockM: 64},
		{Precision: "3xtf32", ChannelsLast: true, FuseW: true, PadInput: true, BlockM: 128, Warps: 8},
		split(own, false),
		split(own, true),
		flat(own, 32),
		flat(own, 64),
		flat(split(channelsLast, true), 32),
		flat(split(channelsLast, true), 64),
		tiled(own, own.BlockM*2, own.Warps, own.Stages, own.BlockK),
		tiled(own, own.BlockM/2, own.Warps, own.Stages, own.BlockK),
		tiled(own, own.BlockM, 12-own.Warps, own.Stages, own.BlockK),
		tiled(own, own.BlockM, own.Warps, own.Stages-1, own.BlockK),
		tiled(own, own.BlockM, own.Warps, own.Stages+1, own.BlockK),
		tiled(own, own.BlockM, own.Warps, own.Stages, own.BlockK*2),
		tiled(flat(own, 32), own.BlockM, 8, own.Stages, 32),
		fold(own, 2, 0, 0, 0),
		fold(own, 4, 0, 0, 0),
		fold(own, 2, 64, 0, 0),
		fold(own, 2, 0, 128, 0),
		fold(own, 2, 0, 0, 8),
		channelsFirst(own, own.PadInput),
		channelsFirst(own, false),
	}
}

// CUDASpace is the CUDA tuning space of convolution c, around the spec's
// own choice own, in tuning's label order (t1
// is its first entry): CUDAKernels, own with cp.async (where it has none
// or cannot take it, own again: a duplicate the caller skips, so the
// labels after it stay put), WindowKernels, WGMMAKernels, then own
// wgmma tile with its weight stages filled the other way (bulk copies or
// cp.async), else own again; last the spectral kernel. The chooser weighs
// SplitKernels too, which tuning lists after the space (and after its
// bulk-weight twins on sm90), so that these labels stay put.
func CUDASpace(c geom.Conv, own spec.Family) []spec.Family {
	kernels := CUDAKernels()
	kernels = append(kernels, WithCpAsync(own))
	kernels = append(kernels, WindowKernels(c.Stride[2], c.OutChannels/c.Groups)...)
	kernels = append(kernels, WGMMAKernels()...)
	if w, ok := own.(spec.WGMMA); ok {
		w.BulkWeights = !w.BulkWeights
		kernels = append(kernels, w)
	} else {
		kernels = append(kernels, own)
	}
	return append(kernels, spec.Spectral{})
}

// SplitKernels are the FFMA and mma.sync defaults and two of
// CUDAKernels' mma.sync tiles (narrower warps; and deeper steps) with the
// longest phase's reduction shared among 2, 4, 8 and 16 blocks (the
// others' in proportion to their taps): for grids that leave SMs idle
// through long reductions (small outputs, many input channels).
func SplitKernels() []spec.Family {
	var out []spec.Family
	for _, n := range []int{2, 4, 8, 16} {
		out = append(out, spec.FFMA{SplitK: n}, spec.MMA{SplitK: n}, spec.MMA{BM: 128, WM: 32, SplitK: n}, spec.MMA{BK: 32, WM: 32, SplitK: n})
	}
	return out
}

// PhaseSplits is own's tile with a row tile's phases shared among 1, 2, 4
// and 8 blocks where own is a wgmma tile (else none). Tuning times them
// after the split tiles; the chooser weighs each wgmma tile with the
// plan's own split only (plan.choosePhaseSplit; on sm90 small problems
// alone, as the model's utilisation term overrates the split's blocks).
func PhaseSplits(own spec.Family) []spec.Family {
	w, ok := own.(spec.WGMMA)
	if !ok {
		return nil
	}
	var out []spec.Family
	for _, n := range []int{1, 2, 4, 8} {
		w.PhaseSplit = n
		out = append(out, w)
	}
	return out
}
