package plan_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// TestWGMMALayout checks a wgmma tile's plan against numbers worked out by
// hand: #61 (48 channels: no padding of channels or columns, a border of
// kernel-1 per side), a grouped, padded, dilated configuration (3 channels
// a group padded to 8, 35 output channels a group in one tile of 40
// columns, padding past the kernel's reach: no border before the input),
// and #77's geometry at stride 2 (one phase of eight holds every tap).
func TestWGMMALayout(t *testing.T) {
	f23, _ := plan.NewWinograd(3)
	// wgTile is a wgmma plan's options and block shape (bk is StepK).
	type wgTile struct {
		opts   spec.WGMMA
		bm, bn int
	}
	one := [3]int{1, 1, 1}
	for _, c := range []struct {
		conf       config
		want       plan.WGMMA
		firstTap   int // TapOffsets' first and last entries
		lastTap    int
		tile       wgTile
		grid       [3]int
		phaseTiles int // M tiles of the largest phase
	}{
		{config{batch: 8, cin: 48, cout: 48, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{64, 64, 64}, s: one, d: one, precision: "3xtf32", tile: "{wgmma: true}"},
			plan.WGMMA{EarlyA: true, Parts: 1, PartPhase: []int{0, 1}, PartStep: []int{0, 41}, CinP: 48, Lo: [3]int{2, 2, 2}, X: [3]int{68, 68, 68}, XLen: 8 * 48 * 68 * 68 * 68, GemmTaps: []int{27}, Steps: []int{41}, StepStart: []int{0}, Rows: []int{8 * 66 * 66 * 66}, Line: []int{66}, TotalSteps: 41, OutRows: 128, Tiles: (8*66*66*66 + 127) / 128, NTiles: 1,
				RelayoutStage: 68 * 49, RelayoutPos: 68, RelayoutChunks: 1, RelayoutBlocks: 8 * 68 * 68, Stage: 2 * 32 * 48, ImageLen: 41 * 2 * 32 * 48, ImagePerThread: 8, SumsPerThread: 24},
			// Tap (0,0,0) reads the output's own position; (2,2,2) two back in each dimension.
			0, -((2*68+2)*68 + 2) * 48,
			wgTile{spec.WGMMA{Slabs: 2, Span: 4, Stages: 4, MinBlocks: 1}, 128, 48},
			[3]int{(8*66*66*66 + 127) / 128, 1, 1}, (8*66*66*66 + 127) / 128},
		{config{batch: 2, cin: 6, cout: 70, groups: 2, k: [3]int{3, 2, 1}, in: [3]int{5, 6, 7}, s: one, p: [3]int{3, 0, 1}, d: [3]int{1, 2, 1},
			precision: "3xtf32", tile: "{wgmma: true, slabs: 1, span: 2}"},
			// Out: (5+2-6, 6+2, 7-2) = (1, 8, 5). Lo: max(0, (k-1)*d - p) = (0, 2, 0);
			// X: Lo + max(in, out + p) = (5, 8+2, 7) with D: max(5, 1+3) = 5.
			plan.WGMMA{EarlyA: true, Parts: 1, PartPhase: []int{0, 1}, PartStep: []int{0, 2}, CinP: 8, Lo: [3]int{0, 2, 0}, X: [3]int{5, 10, 7}, XLen: 2 * 2 * 8 * 5 * 10 * 7, GemmTaps: []int{6}, Steps: []int{2}, StepStart: []int{0}, Rows: []int{2 * 1 * 8 * 5}, Line: []int{5}, TotalSteps: 2, OneSpan: true, OutRows: 64, Tiles: 2, NTiles: 1,
				RelayoutStage: 7 * 9, RelayoutPos: 7, RelayoutChunks: 1, RelayoutBlocks: 2 * 2 * 5 * 10, Stage: 2 * 32 * 40, ImageLen: 2 * 1 * 2 * 2 * 32 * 40, ImagePerThread: 8, SumsPerThread: 20},
			// Tap (0,0,0) reads o + p = (3, 0, 1) on; tap (2,1,0) (3-2, 0-2, 1).
			((3*10+0)*7 + 1) * 8, ((1*10-2)*7 + 1) * 8,
			wgTile{spec.WGMMA{Slabs: 1, Span: 2, Stages: 4, MinBlocks: 1}, 64, 40},
			[3]int{2, 1, 2}, 2},
		// Stride 2, padding 1, dilation 2, kernel 3: outputs 2*in+1; an even
		// output (r = 0) has no tap (1 - 2k is odd), an odd one (r = 1) all
		// three, reading input q + 1 - k. So phases 0..6 have no steps and
		// phase (1,1,1), last, all 27 taps: 27*8 = 216 elements, 7 steps.
		// Lo 1; X: 1 + max(in, Q + 1) with Q = in at r = 1.
		{config{batch: 1, cin: 8, cout: 8, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{2, 3, 4}, s: [3]int{2, 2, 2}, p: one, d: [3]int{2, 2, 2},
			precision: "3xtf32", tile: "{wgmma: true}"},
			plan.WGMMA{EarlyA: true, Parts: 1, PartPhase: []int{0, 8}, PartStep: []int{0, 7}, CinP: 8, Lo: one, X: [3]int{4, 5, 6}, XLen: 8 * 4 * 5 * 6, GemmTaps: []int{0, 0, 0, 0, 0, 0, 0, 27}, Steps: []int{0, 0, 0, 0, 0, 0, 0, 7}, StepStart: make([]int, 8),
				// Phases (rd, rh, rw) in order; Q is in+1 at r = 0, in at r = 1.
				Rows: []int{3 * 4 * 5, 3 * 4 * 4, 3 * 3 * 5, 3 * 3 * 4, 2 * 4 * 5, 2 * 4 * 4, 2 * 3 * 5, 2 * 3 * 4}, Line: []int{5, 4, 5, 4, 5, 4, 5, 4},
				TotalSteps: 7, OutRows: 128, NTiles: 1,
				// The tap-less phases' outputs (the bias) come from the fill:
				// 8 channels of 5 x 7 x 9 outputs, 3 blocks of 1024. The grid
				// covers phase (1,1,1), 2*3*4 rows: one tile.
				Fill: true, FillBlocks: 3, Tiles: 1,
				RelayoutStage: 6 * 9, RelayoutPos: 6, RelayoutChunks: 1, RelayoutBlocks: 4 * 5, Stage: 2 * 32 * 8, ImageLen: 7 * 2 * 32 * 8, ImagePerThread: 8, SumsPerThread: 4},
			// Tap (0,0,0) reads q + 1 per dimension, tap (2,2,2) q - 1.
			((1*5+1)*6 + 1) * 8, -((1*5+1)*6 + 1) * 8,
			wgTile{spec.WGMMA{Slabs: 2, Span: 4, Stages: 4, MinBlocks: 1}, 128, 8},
			// Phase (0,0,0) is the largest: 3*4*5 = 60 rows, one tile.
			[3]int{1, 1, 1}, 1},
		// The same with Winograd: the one phase with taps (1,1,1) has Q =
		// (2, 3, 4), 2 pairs along W, whose d0 is input 2p - 1 (kw 2's
		// offset); 9 (d, h) taps, 3 steps a product. Rows are pairs: Line
		// ceil(Q_w/2), 3 at r_w = 0 (Q_w 5). The re-laid W is 4 x 2
		// products' inputs; tap offsets lose their W part. One slab.
		{config{batch: 1, cin: 8, cout: 8, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{2, 3, 4}, s: [3]int{2, 2, 2}, p: one, d: [3]int{2, 2, 2},
			precision: "3xtf32", tile: "{wgmma: true, winograd: true}"},
			plan.WGMMA{EarlyA: true, Parts: 1, PartPhase: []int{0, 8}, PartStep: []int{0, 12}, CinP: 8, Lo: one, X: [3]int{4, 5, 8}, XLen: 8 * 4 * 5 * 8, Pairs: 2, PairIn0: -1, Winograd: &f23, GemmTaps: []int{0, 0, 0, 0, 0, 0, 0, 9}, Steps: []int{0, 0, 0, 0, 0, 0, 0, 12}, StepStart: make([]int, 8),
				Rows: []int{3 * 4 * 3, 3 * 4 * 2, 3 * 3 * 3, 3 * 3 * 2, 2 * 4 * 3, 2 * 4 * 2, 2 * 3 * 3, 2 * 3 * 2}, Line: []int{3, 2, 3, 2, 3, 2, 3, 2},
				TotalSteps: 12, OutRows: 64, NTiles: 1, Fill: true, FillBlocks: 3, Tiles: 1,
				RelayoutStage: (2*2 + 2) * 9, RelayoutPos: 2, RelayoutChunks: 1, RelayoutBlocks: 4 * 5, Stage: 2 * 32 * 8, ImageLen: 12 * 2 * 32 * 8, ImagePerThread: 8, SumsPerThread: 4},
			((1*5+1)*8 + 0) * 8, -((1*5+1)*8 + 0) * 8,
			wgTile{spec.WGMMA{Slabs: 1, Span: 4, Stages: 4, MinBlocks: 1, Winograd: true}, 64, 8},
			[3]int{1, 1, 1}, 1},
		// kw_in_n: 24 channels by 3 kw taps make 72 columns (four stages of
		// 18 KiB: dynamic shared memory); rows are input positions along W, lines of 7 outputs
		// + 4 (dilation 2 x 2) positions; a block writes 128 - 4 rows' outputs.
		// Out: (2+2, 3+2, 4-2+4+1) = (4, 5, 7). Offsets q + p - k*d: D and H
		// 0..-2, W 1, -1, -3. Lo (2, 2, 3); X: Lo + (4, 5, 7+1).
		{config{batch: 1, cin: 8, cout: 24, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{2, 3, 5}, s: one, p: [3]int{0, 0, 1}, d: [3]int{1, 1, 2},
			precision: "3xtf32", tile: "{wgmma: true, kw_in_n: true}"},
			plan.WGMMA{EarlyA: true, Parts: 1, PartPhase: []int{0, 1}, PartStep: []int{0, 3}, CinP: 8, Lo: [3]int{2, 2, 3}, X: [3]int{6, 7, 11}, XLen: 8 * 6 * 7 * 11, GemmTaps: []int{9}, Steps: []int{3}, StepStart: []int{0},
				Rows: []int{4 * 5 * 11}, Line: []int{11}, TotalSteps: 3, OneSpan: true, CoutTile: 24, WSpan: 4, OutRows: 124, ChannelLanes: 1, SumsRow: 76, SumsVector: 4, Tiles: 2, NTiles: 1,
				RelayoutStage: 11 * 9, RelayoutPos: 11, RelayoutChunks: 1, RelayoutBlocks: 6 * 7, Stage: 2 * 32 * 72, ImageLen: 3 * 2 * 32 * 72, ImagePerThread: 8, SumsPerThread: 36},
			// Tap (0,0,0) reads W position q + 1; tap (2,2,2) (-2, -2, -3).
			((0*7+0)*11 + 1) * 8, ((-2*7-2)*11 - 3) * 8,
			wgTile{spec.WGMMA{Slabs: 2, Span: 4, Stages: 4, MinBlocks: 1, KWInN: true}, 128, 72},
			[3]int{2, 1, 1}, 2},
		// The same with one slab: a block writes 64 - 4 rows' outputs, two
		// threads a row on the way out.
		{config{batch: 1, cin: 8, cout: 24, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{2, 3, 5}, s: one, p: [3]int{0, 0, 1}, d: [3]int{1, 1, 2},
			precision: "3xtf32", tile: "{wgmma: true, kw_in_n: true, slabs: 1}"},
			plan.WGMMA{EarlyA: true, Parts: 1, PartPhase: []int{0, 1}, PartStep: []int{0, 3}, CinP: 8, Lo: [3]int{2, 2, 3}, X: [3]int{6, 7, 11}, XLen: 8 * 6 * 7 * 11, GemmTaps: []int{9}, Steps: []int{3}, StepStart: []int{0},
				Rows: []int{4 * 5 * 11}, Line: []int{11}, TotalSteps: 3, OneSpan: true, CoutTile: 24, WSpan: 4, OutRows: 60, ChannelLanes: 2, SumsRow: 76, SumsVector: 4, Tiles: 4, NTiles: 1,
				RelayoutStage: 11 * 9, RelayoutPos: 11, RelayoutChunks: 1, RelayoutBlocks: 6 * 7, Stage: 2 * 32 * 72, ImageLen: 3 * 2 * 32 * 72, ImagePerThread: 8, SumsPerThread: 36},
			((0*7+0)*11 + 1) * 8, ((-2*7-2)*11 - 3) * 8,
			wgTile{spec.WGMMA{Slabs: 1, Span: 4, Stages: 4, MinBlocks: 1, KWInN: true}, 64, 72},
			[3]int{4, 1, 1}, 3},
	} {
		p, err := plan.New(c.conf.parse(t), plan.SM90)
		if err != nil {
			t.Fatal(err)
		}
		got := p.WGMMA
		offsets := got.TapOffsets
		got.TapOffsets = nil
		if !reflect.DeepEqual(got, c.want) || p.Tile.WGMMA == nil || *p.Tile.WGMMA != c.tile.opts || p.Tile.BM() != c.tile.bm || p.Tile.BN() != c.tile.bn || p.Tile.BK() != plan.StepK || p.Grid != c.grid || p.Threads != 128 || p.MaxTiles != c.phaseTiles {
			t.Errorf("%+v:\ngot  %+v\n     %+v grid %v, %d threads, %d tiles\nwant %+v\n     %+v grid %v, 128 threads, %d tiles",
				c.conf, got, p.Tile, p.Grid, p.Threads, p.MaxTiles, c.want, c.tile, c.grid, c.phaseTiles)
		}
		if len(offsets) != len(p.Taps) || len(offsets) == 0 || offsets[0] != c.firstTap || offsets[len(offsets)-1] != c.lastTap {
			t.Errorf("%+v: tap offsets %v, want %d taps from %d to %d", c.conf, offsets, len(p.Taps), c.firstTap, c.lastTap)
		}
		smem := c.tile.opts.Stages * c.want.Stage * 4
		if c.tile.opts.KWInN {
			smem = max(smem, c.tile.bm*(c.tile.bn+3)*4) // the sums on their way out
		}
		if p.SmemBytes != smem || p.SmemBytes > plan.SM90.SmemPerBlock || (p.DynamicSmem > 0) != (smem > plan.MaxSmemBytes) {
			t.Errorf("%+v: %d bytes of shared memory for %d stages of %d floats", c.conf, p.SmemBytes, c.tile.opts.Stages, c.want.Stage)
		}
	}
}

// TestWGMMAColumnTiles: more than 64 output channels a group split into
// the fewest tiles of at most 64 columns, each a multiple of 8, with as
// many weight stages (up to 4) as fit 96 KiB.
func TestWGMMAColumnTiles(t *testing.T) {
	for _, c := range []struct{ cout, bn, tiles, stages int }{
		{8, 8, 1, 4}, {17, 24, 1, 4}, {64, 64, 1, 4}, {65, 40, 2, 4}, {200, 56, 4, 4},
	} {
		conf := config{batch: 1, cin: 8, cout: c.cout, groups: 1, k: [3]int{1, 1, 1}, in: [3]int{2, 2, 2}, s: [3]int{1, 1, 1}, d: [3]int{1, 1, 1},
			precision: "3xtf32", tile: "{wgmma: true}"}
		p, err := plan.New(conf.parse(t), plan.SM90)
		if err != nil {
			t.Fatal(err)
		}
		if p.Tile.BN() != c.bn || p.WGMMA.NTiles != c.tiles || p.Tile.WGMMA.Stages != c.stages || p.Tile.BN()*p.WGMMA.NTiles < c.cout {
			t.Errorf("%d channels: bn %d in %d tiles, %d stages; want bn %d in %d tiles, %d stages", c.cout, p.Tile.BN(), p.WGMMA.NTiles, p.Tile.WGMMA.Stages, c.bn, c.tiles, c.stages)
		}
	}
}

// TestWGMMARelayoutChunks: the input re-layout gives a block a whole
// bordered row where its positions fit 6144 floats of shared memory at
// CinP+1 floats each, else the fewest even chunks that fit, covering the
// row exactly (the last chunk shorter by less than one position a chunk).
func TestWGMMARelayoutChunks(t *testing.T) {
	for _, c := range []struct {
		batch, cin, groups int
		k, in              [3]int
		x, pos, chunks     int // X[2], positions a block, blocks a row
	}{
		// #70: 96 + a border of 2, 100 positions of 48 channels (4900 floats).
		{8, 48, 1, [3]int{3, 3, 3}, [3]int{96, 96, 96}, 100, 100, 1},
		// 125 positions of 48 channels fit (6125 floats), 126 do not.
		{1, 48, 1, [3]int{1, 1, 1}, [3]int{1, 2, 125}, 125, 125, 1},
		{1, 48, 1, [3]int{1, 1, 1}, [3]int{1, 2, 126}, 126, 63, 2},
		// 301 + a border of 2 and 2 more outputs than inputs: 305 in chunks of 102, 102 and 101.
		{2, 96, 2, [3]int{1, 2, 3}, [3]int{2, 3, 301}, 305, 102, 3},
		// 8 channels (9 floats a position): 682 positions a block at most.
		{1, 8, 1, [3]int{1, 1, 1}, [3]int{1, 1, 2000}, 2000, 667, 3},
	} {
		conf := config{batch: c.batch, cin: c.cin, cout: 8 * c.groups, groups: c.groups, k: c.k, in: c.in, s: [3]int{1, 1, 1}, d: [3]int{1, 1, 1},
			precision: "3xtf32", tile: "{wgmma: true}"}
		p, err := plan.New(conf.parse(t), plan.SM90)
		if err != nil {
			t.Fatal(err)
		}
		w := p.WGMMA
		rows := c.batch * c.groups * w.X[0] * w.X[1]
		if w.X[2] != c.x || w.RelayoutPos != c.pos || w.RelayoutChunks != c.chunks || w.RelayoutBlocks != rows*c.chunks {
			t.Errorf("%+v: X[2] %d, %d positions a block, %d blocks a row, %d blocks; want %d, %d, %d, %d",
				c, w.X[2], w.RelayoutPos, w.RelayoutChunks, w.RelayoutBlocks, c.x, c.pos, c.chunks, rows*c.chunks)
		}
		if w.RelayoutPos*(w.CinP+1) > 6144 || w.RelayoutChunks*w.RelayoutPos < w.X[2] || (w.RelayoutChunks-1)*w.RelayoutPos >= w.X[2] {
			t.Errorf("%+v: %d chunks of %d positions (%d floats each) for a row of %d", c, w.RelayoutChunks, w.RelayoutPos, w.CinP+1, w.X[2])
		}
	}
}

// TestWGMMARelayoutChannelsOverSharedMemory: a group of more channels
// than one position's staging fits static shared memory is an error.
func TestWGMMARelayoutChannelsOverSharedMemory(t *testing.T) {
	one := [3]int{1, 1, 1}
	c := config{batch: 1, cin: 12288, cout: 8, groups: 1, k: one, in: one, s: one, d: one, precision: "3xtf32", tile: "{wgmma: true}"}
	_, err := plan.New(c.parse(t), plan.SM90)
	want := "gives 12288 channels a group, padded to 12288: the input re-layout would stage 49156 bytes of shared memory for one position; sm_80 allows 49152 of static shared memory (got 12288)"
	if err == nil || !strings.HasSuffix(err.Error(), "problem.in_channels: "+want) {
		t.Errorf("error:\n%v\nwant one at problem.in_channels ending\n%s", err, want)
	}
	c.cin = 12280
	if _, err := plan.New(c.parse(t), plan.SM90); err != nil {
		t.Errorf("12280 channels: %v", err)
	}
}

// TestRepackBlocks: the wgmma image, one thread an element, and one block even with none
// (a grid of no blocks is an invalid launch).
func TestRepackBlocks(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 256: 1, 257: 2, 64512: 252} {
		if got := plan.ImageBlocks(n); got != want {
			t.Errorf("ImageBlocks(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestWGMMASumsAndStages: a span that covers every phase's steps keeps no
// running sums (one tensor-core sum a phase); parked sums take one float a
// thread's sum past the stages and the kw_in_n sums (#58's two slabs of 56
// columns: 3 stages of 14336 bytes, 128 x 60 sums on their way out, 128 x
// 56 parked); set stages replace the plan's; and stages past sm_80's
// 163 KiB a block or a min_blocks that an SM's shared memory cannot hold
// are refused on their fields.
func TestWGMMASumsAndStages(t *testing.T) {
	one := [3]int{1, 1, 1}
	c58 := config{batch: 1, cin: 32, cout: 16, groups: 1, k: [3]int{3, 5, 7}, in: [3]int{4, 6, 10}, s: one, d: one, precision: "3xtf32"}
	for _, c := range []struct {
		tile                           string
		oneSpan                        bool
		stages, parked, parkedAt, smem int
	}{
		{"{wgmma: true, kw_in_n: true, slabs: 1, span: 16, stages: 2, min_blocks: 4}", true, 2, 0, 0, 2 * 28672},
		{"{wgmma: true, kw_in_n: true, park_sums: true, stages: 3}", false, 3, 128 * 56, 3 * 14336 / 4, 3*14336 + 4*128*56},
		{"{wgmma: true, kw_in_n: true, park_sums: true, span: 15}", true, 4, 0, 0, 4 * 14336},
		// The plan's stages leave room for the parked sums: (96 KiB - 28
		// KiB) / 14336 bytes is 4.
		{"{wgmma: true, kw_in_n: true, park_sums: true}", false, 4, 128 * 56, 4 * 14336 / 4, 4*14336 + 4*128*56},
		// Bulk copies' barriers, 8 bytes a stage, past the parked sums.
		{"{wgmma: true, kw_in_n: true, park_sums: true, stages: 3, bulk_weights: true}", false, 3, 128 * 56, 3 * 14336 / 4, 3*14336 + 4*128*56 + 8*3},
	} {
		conf := c58
		conf.tile = c.tile
		p, err := plan.New(conf.parse(t), plan.SM90)
		if err != nil {
			t.Fatalf("%s: %v", c.tile, err)
		}
		w := p.WGMMA
		if w.OneSpan != c.oneSpan || p.Tile.WGMMA.Stages != c.stages || w.Parked != c.parked || w.ParkedAt != c.parkedAt || p.SmemBytes != c.smem {
			t.Errorf("%s: one span %v, %d stages, %d parked at %d, %d bytes; want %v, %d, %d at %d, %d",
				c.tile, w.OneSpan, p.Tile.WGMMA.Stages, w.Parked, w.ParkedAt, p.SmemBytes, c.oneSpan, c.stages, c.parked, c.parkedAt, c.smem)
		}
		if p.Tile.WGMMA.BulkWeights {
			// 8-byte aligned, the last thing in shared memory.
			if want := p.SmemBytes/4 - 2*p.Tile.WGMMA.Stages; w.BarriersAt != want || w.BarriersAt%2 != 0 {
				t.Errorf("%s: barriers at float %d; want %d (8-byte aligned)", c.tile, w.BarriersAt, want)
			}
		} else if w.BarriersAt != 0 {
			t.Errorf("%s: barriers at float %d without bulk_weights", c.tile, w.BarriersAt)
		}
	}

	// A shared choice of bulk copies planned for sm80, which has none: the
	// tile sm80 runs (cp.async weights), written as kernel.sm80 may write
	// it, with no barriers' shared memory; sm90 keeps the copies.
	bulk := c58
	bulk.tile = "{wgmma: true, kw_in_n: true, park_sums: true, stages: 3, bulk_weights: true}"
	p80, err := plan.New(bulk.parse(t), plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	p90, err := plan.New(bulk.parse(t), plan.SM90)
	if err != nil {
		t.Fatal(err)
	}
	if p80.Tile.WGMMA.BulkWeights || strings.Contains(p80.Tile.Choice().String(), "bulk_weights") || p80.WGMMA.BarriersAt != 0 || p80.SmemBytes != 3*14336+4*128*56 {
		t.Errorf("sm80 plans %s with barriers at %d, %d bytes; want no bulk copies, %d bytes", p80.Tile.Choice(), p80.WGMMA.BarriersAt, p80.SmemBytes, 3*14336+4*128*56)
	}
	if !p90.Tile.WGMMA.BulkWeights {
		t.Errorf("sm90 plans %s: bulk copies lost", p90.Tile.Choice())
	}

	// Each target's limits: sm80 opts a block in to 163 KiB (and asks one
	// block an SM), sm90 to 227 KiB of the 228 an SM holds.
	conf := c58
	conf.tile = "{wgmma: true, kw_in_n: true, slabs: 1, stages: 6, min_blocks: 2}"
	for target, wants := range map[plan.Target][]string{
		plan.SM80: {"kernel.cuda.wgmma.stages: needs 172032 bytes of shared memory (28672 a step); a block on sm80 opts in to at most 166912 (got 6)",
			"kernel.cuda.wgmma.min_blocks: asks for 1 blocks per SM, but each needs 173056 bytes of shared memory with what the runtime keeps: an SM of sm80 holds 167936 (fewer stages need less) (got 2)"},
		plan.SM90: {"kernel.cuda.wgmma.min_blocks: asks for 2 blocks per SM, but each needs 173056 bytes of shared memory with what the runtime keeps: an SM of sm90 holds 233472 (fewer stages need less) (got 2)"},
	} {
		_, err := plan.New(conf.parse(t), target)
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error:\n%v\nwant it to hold:\n%s", target.Name, err, want)
			}
		}
		if target == plan.SM90 && strings.Contains(fmt.Sprint(err), "kernel.cuda.wgmma.stages") {
			t.Errorf("sm90: stages refused within its 227 KiB: %v", err)
		}
	}
}

// TestWGMMARegisters: min_blocks caps a wgmma thread's registers, and the
// plan refuses a cap its estimate passes: two slabs of 72 columns and one
// span at three blocks an SM (170 registers; needs about 181: it spilled
// 220 bytes at 168), while the one-slab 112-column tile at four (about 117
// of 128) and #77's slab of 64 columns with running sums (125 of 128) fit.
func TestWGMMARegisters(t *testing.T) {
	one := [3]int{1, 1, 1}
	c61 := config{batch: 1, cin: 48, cout: 48, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{4, 4, 8}, s: one, d: one, precision: "3xtf32",
		tile: "{wgmma: true, kw_in_n: true, span: 16, stages: 3, min_blocks: 3}"}
	_, err := plan.New(c61.parse(t), plan.SM90)
	want := "kernel.cuda.wgmma.min_blocks: gives 128 threads, 170 registers each, but 2 slab(s) of 36 sums and running sums, A parts and inputs need about 181 (got 3)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error:\n%v\nwant it to hold:\n%s", err, want)
	}
	c58 := config{batch: 1, cin: 32, cout: 16, groups: 1, k: [3]int{3, 5, 7}, in: [3]int{4, 6, 10}, s: one, d: one, precision: "3xtf32",
		tile: "{wgmma: true, kw_in_n: true, slabs: 1, span: 16, stages: 2, min_blocks: 4}"}
	c77 := config{batch: 1, cin: 32, cout: 64, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{4, 5, 5}, s: [3]int{2, 2, 2}, p: one, d: [3]int{2, 2, 2},
		precision: "3xtf32", tile: "{wgmma: true, slabs: 1, stages: 3, min_blocks: 4}"}
	// #58's tile also loads a step's inputs during the products before it
	// (about 117 + 8 registers); #77's, at 125 of 128, after them, unless
	// the spec asks (early_inputs). #77's Winograd tile with parked sums
	// keeps the first output's sums in registers (125 of 128) and its
	// stages and the second's in 48 KiB: four blocks an SM.
	c77early := with(c77, func(c *config) { c.tile = "{wgmma: true, slabs: 1, stages: 3, min_blocks: 4, early_inputs: true}" })
	c77wino := with(c77, func(c *config) {
		c.tile = "{wgmma: true, winograd: true, park_sums: true, span: 16, stages: 2, min_blocks: 4}"
	})
	for _, c := range []struct {
		conf  config
		early bool
	}{{c58, true}, {c77, false}, {c77early, true}, {c77wino, false}} {
		p, err := plan.New(c.conf.parse(t), plan.SM90)
		if err != nil {
			t.Errorf("%s: %v", c.conf.tile, err)
		} else if p.WGMMA.EarlyA != c.early {
			t.Errorf("%s: inputs loaded during the products before: %v, want %v", c.conf.tile, p.WGMMA.EarlyA, c.early)
		}
	}
}

// TestWGMMAKWInNStride: W taps as columns at stride_w 2, #73's geometry
// small (input 2x3x5, kernel 3, stride 2, padding 1: output 3x5x9). The
// anchors run from a(0) = floor((0+1-2)/2) = -1 to a(8) = 3: 5 a line,
// and a reach of (1 + 2)/2 = 1 row, so lines of 6; row q anchors outputs
// -1 + 2q and 2q. kw 2 reads one position before its anchor (border 1),
// kw 0 and 1 the anchor's own. One GEMM per (d, h) phase, of 1, 2, 2
// and 4 taps, every W residue in it.
func TestWGMMAKWInNStride(t *testing.T) {
	conf := config{batch: 1, cin: 8, cout: 8, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{2, 3, 5}, s: [3]int{2, 2, 2}, p: [3]int{1, 1, 1},
		d: [3]int{1, 1, 1}, precision: "3xtf32", tile: "{wgmma: true, kw_in_n: true, slabs: 1}"}
	p, err := plan.New(conf.parse(t), plan.SM90)
	if err != nil {
		t.Fatal(err)
	}
	w := p.WGMMA
	var rs [][3]int
	for _, ph := range p.Phases {
		rs = append(rs, ph.R)
	}
	if !reflect.DeepEqual(rs, [][3]int{{0, 0, 0}, {0, 1, 0}, {1, 0, 0}, {1, 1, 0}}) {
		t.Errorf("phases %v, want one per (d, h) residue", rs)
	}
	got := []any{w.GemmTaps, w.Steps, w.Line, w.Rows, w.WSpan, w.OutRows, w.AnchorW0, w.ChannelLanes, w.Lo[2], w.X[2], p.Tile.BN(), p.Phases[0].Q[2]}
	want := []any{[]int{1, 2, 2, 4}, []int{1, 1, 1, 1}, []int{6, 6, 6, 6}, []int{2 * 3 * 6, 2 * 2 * 6, 1 * 3 * 6, 1 * 2 * 6}, 1, 63, -1, 1, 1, 6, 24, 5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gemm taps, steps, lines, rows, reach, out rows, anchor w0, channel lanes, border, extent, bn, anchors:\ngot  %v\nwant %v", got, want)
	}
	// The sums on their way out: 8 channels a tile, read 4 at a time from
	// rows of 24 + 4 floats; 10 channels (30 columns, 32 with padding)
	// one at a time from rows of 32 + 3.
	for _, c := range []struct{ cout, row, vector int }{{8, 28, 4}, {10, 35, 1}} {
		conf.cout = c.cout
		p, err := plan.New(conf.parse(t), plan.SM90)
		if err != nil {
			t.Fatal(err)
		}
		if w := p.WGMMA; w.SumsRow != c.row || w.SumsVector != c.vector {
			t.Errorf("%d channels: sums rows of %d read %d at a time, want %d and %d", c.cout, w.SumsRow, w.SumsVector, c.row, c.vector)
		}
	}
}

// TestWGMMAWarpgroups: warpgroups sharing a block's weight stages, on
// #73's geometry small (32 channels; kernel 3, stride 2: lines of 6).
// Two with kw taps as columns (96): 256 threads and 128 rows, of which
// the first 127 are written (a reach of one row); the sums on their way
// out (128 x 100 floats: 32 channels a tile, read 4 at a time) outgrow
// the two stages (2 x 24576 bytes) and 48
// KiB; two blocks an SM leave 128 registers a thread. Four of one span
// over 32 columns: 512 threads, 256 rows, 16 sums a thread (about 77
// registers, 122 on sm_80: within the 128 that 512 threads leave). Four
// with kw taps as columns (48 sums: about 109, 154 on sm_80) are refused,
// and so are four at two blocks an SM (64 registers).
func TestWGMMAWarpgroups(t *testing.T) {
	base := config{batch: 1, cin: 32, cout: 32, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{2, 3, 5}, s: [3]int{2, 2, 2}, p: [3]int{1, 1, 1},
		d: [3]int{1, 1, 1}, precision: "3xtf32"}
	for _, c := range []struct {
		tile                                         string
		threads, bm, outRows, smem, dynamic, regsCap int
	}{
		{"{wgmma: true, kw_in_n: true, slabs: 1, warpgroups: 2, span: 16, stages: 2, min_blocks: 2}", 256, 128, 127, 128 * 100 * 4, 128 * 100 * 4, 128},
		{"{wgmma: true, slabs: 1, warpgroups: 4, span: 16, stages: 3}", 512, 256, 256, 3 * 2 * 32 * 32 * 4, 0, 128},
	} {
		conf := base
		conf.tile = c.tile
		p, err := plan.New(conf.parse(t), plan.SM90)
		if err != nil {
			t.Fatalf("%s: %v", c.tile, err)
		}
		got := []int{p.Threads, p.Tile.BM(), p.WGMMA.OutRows, p.SmemBytes, p.DynamicSmem, 65536 / (max(1, p.Tile.MinBlocks()) * p.Threads)}
		want := []int{c.threads, c.bm, c.outRows, c.smem, c.dynamic, c.regsCap}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: threads, rows, written rows, shared memory, dynamic, registers a thread:\ngot  %v\nwant %v", c.tile, got, want)
		}
	}
	for _, c := range []struct {
		tile   string
		target plan.Target
		want   string
	}{
		{"{wgmma: true, kw_in_n: true, slabs: 1, warpgroups: 4, span: 16, stages: 2}", plan.SM80,
			"kernel.cuda.wgmma.warpgroups: gives 512 threads, 128 registers each on sm80, but its mma.sync code needs about 154 (fewer warpgroups or sums) (got 4)"},
		{"{wgmma: true, slabs: 1, warpgroups: 4, span: 16, stages: 3, min_blocks: 2}", plan.SM90,
			"kernel.cuda.wgmma.min_blocks: gives 512 threads, 64 registers each, but 1 slab(s) of 16 sums and running sums, A parts and inputs need about 77 (got 2)"},
	} {
		conf := base
		conf.tile = c.tile
		_, err := plan.New(conf.parse(t), c.target)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error:\n%v\nwant it to hold:\n%s", c.tile, err, c.want)
		}
	}
}

// TestNewChecksFamilyOptions: a kernel section set in code (tuning's and
// the chooser's candidates, which no decoder reads) gets the checks a
// spec file's gets: Winograd with cp.async, both at once, is refused with
// the spec's message at the option's field, whatever the target.
func TestNewChecksFamilyOptions(t *testing.T) {
	conf := config{batch: 1, cin: 8, cout: 8, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{4, 4, 4}, s: [3]int{1, 1, 1}, d: [3]int{1, 1, 1}, precision: "3xtf32"}
	s := conf.parse(t)
	for _, tg := range []plan.Target{plan.SM80, plan.SM90} {
		s.Kernel = spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: spec.WGMMA{Winograd: true, CpAsync: true}}}
		_, err := plan.New(s, tg)
		errs, ok := err.(spec.Errors)
		if !ok || len(errs) != 1 || errs[0].Field != "kernel.cuda.wgmma.winograd" || !strings.Contains(errs[0].Msg, "cp_async stages one in shared memory") {
			t.Errorf("%s: winograd with cp_async: %v", tg.Name, err)
		}
		s.Kernel.CUDA = spec.CUDA{Family: spec.WGMMA{Winograd: true}}
		if _, err := plan.New(s, tg); err != nil {
			t.Errorf("%s: winograd alone: %v", tg.Name, err)
		}
	}
}

// TestMMASyncSpills: zoo_vgan_up's two-slab tile of W taps as columns
// (72 columns, running sums: a wgmma estimate of 253 registers) spilled 16
// bytes as mma.sync under CUDA 13; one slab (104 columns) fits, and
// on sm90, where it is wgmma code, neither is a concern.
func TestMMASyncSpills(t *testing.T) {
	conf := config{batch: 16, cin: 512, cout: 256, groups: 1, k: [3]int{4, 4, 4}, in: [3]int{2, 4, 4}, s: [3]int{2, 2, 2}, p: [3]int{1, 1, 1},
		d: [3]int{1, 1, 1}, precision: "3xtf32", tile: "{wgmma: true, kw_in_n: true, slabs: 2, span: 4, stages: 4}"}
	for _, c := range []struct {
		slabs  int
		target plan.Target
		want   bool
	}{{2, plan.SM80, true}, {1, plan.SM80, false}, {2, plan.SM90, false}} {
		conf.tile = fmt.Sprintf("{wgmma: true, kw_in_n: true, slabs: %d, span: 4, stages: 4}", c.slabs)
		p, err := plan.New(conf.parse(t), c.target)
		if err != nil {
			t.Fatal(err)
		}
		if c.slabs == 2 && p.Tile.BN() != 72 {
			t.Errorf("two slabs: %d columns, want 72", p.Tile.BN())
		}
		if got := p.MMASyncSpills(); got != c.want {
			t.Errorf("%d slab(s) on %s: spills %v, want %v", c.slabs, c.target.Name, got, c.want)
		}
	}
}

// TestMMASyncSpillsSpanTwo: a plain tile of two slabs with sums of two
// steps spilled 8 to 24 bytes as mma.sync (CUDA 13) on all 12 zoo shapes
// where it was 64 columns wide (video_time_k3 among them: 512 channels);
// at 32 columns (dil_k3_d3) it fit in 166 registers, and sums of four
// steps fit at 64.
func TestMMASyncSpillsSpanTwo(t *testing.T) {
	for _, c := range []struct {
		cout, span int
		want       bool
	}{{512, 2, true}, {32, 2, false}, {512, 4, false}} {
		conf := config{batch: 1, cin: 512, cout: c.cout, groups: 1, k: [3]int{3, 1, 1}, in: [3]int{8, 32, 32}, s: [3]int{2, 1, 1}, p: [3]int{1, 0, 0},
			d: [3]int{1, 1, 1}, precision: "3xtf32", tile: fmt.Sprintf("{wgmma: true, slabs: 2, span: %d, stages: 4}", c.span)}
		p, err := plan.New(conf.parse(t), plan.SM80)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.MMASyncSpills(); got != c.want {
			t.Errorf("cout %d, span %d (%d columns): spills %v, want %v", c.cout, c.span, p.Tile.BN(), got, c.want)
		}
	}
}

// TestWGMMAPhaseSplit: a row tile's phases shared among blocks. #73's
// geometry (kernel 3, stride 2, padding 1) at 32 channels gives phases
// of 1, 2, 2, 4, 2, 4, 4 and 8 steps (a tap each); in 3 runs the least
// largest run is 10 steps: (1 2 2 4) (2 4 4) (8), the grid's z three
// blocks a group. More runs than phases with taps are refused, and left
// to the plan (sm80) a grid of one row tile takes the fewest runs that
// reach the longest phase (4), while one that fills the GPU many times
// over keeps one block; on sm90 the plan splits only problems of fewer
// 64 x 64 tiles than a quarter of the SMs. A split of 1 given where the
// plan would split is written in the tile.
func TestWGMMAPhaseSplit(t *testing.T) {
	three := [3]int{3, 3, 3}
	two, one := [3]int{2, 2, 2}, [3]int{1, 1, 1}
	c := config{batch: 1, cin: 32, cout: 32, groups: 2, k: three, in: [3]int{2, 3, 5}, s: two, p: one, d: one,
		precision: "3xtf32", tile: "{wgmma: true, phase_split: 3}"}
	c.cin, c.cout = 64, 64 // 32 a group
	p, err := plan.New(c.parse(t), plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	w := p.WGMMA
	if !reflect.DeepEqual(w.Steps, []int{1, 2, 2, 4, 2, 4, 4, 8}) {
		t.Fatalf("steps %v: not the geometry this test assumes", w.Steps)
	}
	if w.Parts != 3 || !reflect.DeepEqual(w.PartPhase, []int{0, 4, 7, 8}) || !reflect.DeepEqual(w.PartStep, []int{0, 9, 19, 27}) ||
		p.Blocks[2] != 2*3 || p.Tile.WGMMA.PhaseSplit != 3 {
		t.Errorf("split 3: parts %d, phases %v, steps %v, blocks %v, tile %+v; want 3, [0 4 7 8], [0 9 19 27], z 6",
			w.Parts, w.PartPhase, w.PartStep, p.Blocks, *p.Tile.WGMMA)
	}

	c.tile = "{wgmma: true, phase_split: 9}"
	if _, err := plan.New(c.parse(t), plan.SM80); err == nil || !strings.Contains(err.Error(), "8 phases have taps") {
		t.Errorf("split 9 of 8 phases with taps: %v", err)
	}

	c.tile = "{wgmma: true}"
	p, err = plan.New(c.parse(t), plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	if p.WGMMA.Parts != 4 || p.Tile.WGMMA.PhaseSplit != 4 {
		t.Errorf("one row tile of 2 groups on 108 SMs: %d parts (tile %d), want 4 (runs of 8 steps at most, the last phase's)", p.WGMMA.Parts, p.Tile.WGMMA.PhaseSplit)
	}
	if p, err = plan.New(c.parse(t), plan.SM90); err != nil || p.WGMMA.Parts != 4 {
		t.Errorf("sm90, 2 tiles of 64 x 64 (under a quarter of 132 SMs): %v, %d parts, want 4", err, p.WGMMA.Parts)
	}
	c.in = [3]int{12, 12, 12} // 27 tiles of 64 rows in the largest phase, 54 with the groups: no split on sm90
	if p, err = plan.New(c.parse(t), plan.SM90); err != nil || p.WGMMA.Parts != 1 || p.Tile.WGMMA.PhaseSplit != 0 {
		t.Errorf("sm90, 54 tiles of 64 x 64: %v, want one block, left unwritten", err)
	}
	c.in = [3]int{2, 3, 5}
	c.batch, c.in = 16, [3]int{32, 32, 32}
	p, err = plan.New(c.parse(t), plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	if p.WGMMA.Parts != 1 || p.Tile.WGMMA.PhaseSplit != 0 {
		t.Errorf("%d row tiles: %d parts (tile %d), want one block, left unwritten", p.WGMMA.Tiles, p.WGMMA.Parts, p.Tile.WGMMA.PhaseSplit)
	}
	c.tile = "{wgmma: true, phase_split: 1}"
	c.batch, c.in = 1, [3]int{2, 3, 5}
	if p, err = plan.New(c.parse(t), plan.SM80); err != nil || p.WGMMA.Parts != 1 || p.Tile.WGMMA.PhaseSplit != 1 {
		t.Errorf("split 1 given where the plan would split: %v, want one block, written", err)
	}
}

// TestTranspose: the plain re-layout's tiles cover each group's (Cin/groups
// x Cout/groups) by taps matrix exactly, a block at most 1024 elements
// (256 threads, 4 each), reads along the taps in runs of min(taps, 32),
// an odd pitch, guards only where a last tile passes the matrix, and a
// wgmma image keeps its one-thread-a-unit grid.
func TestTranspose(t *testing.T) {
	one := [3]int{1, 1, 1}
	for _, c := range []struct {
		conf       config
		rows, cols int
	}{
		// 27 taps: a tile of 32 rows by all 27 taps; 6*4 = 24 rows, one ragged tile.
		{config{batch: 1, cin: 6, cout: 4, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{4, 4, 4}, s: one, d: one, tile: "{bm: 64, bn: 8, bk: 8, tm: 4, tn: 4}"}, 32, 27},
		// 8 taps: 128 rows by 8; groups 2 of 16 x 8 rows each.
		{config{batch: 1, cin: 32, cout: 16, groups: 2, k: [3]int{2, 2, 2}, in: [3]int{4, 4, 4}, s: [3]int{2, 2, 2}, d: one, tile: "{bm: 64, bn: 8, bk: 8, tm: 4, tn: 4}"}, 128, 8},
		// 105 taps: tiles of 32 taps, the last one ragged (105 = 3*32 + 9).
		{config{batch: 1, cin: 8, cout: 8, groups: 4, k: [3]int{3, 5, 7}, in: [3]int{6, 6, 6}, s: one, d: one, tile: "{bm: 64, bn: 8, bk: 8, tm: 4, tn: 4}"}, 32, 32},
		// Two taps: 512 rows by 2 (a pitch of 3); 40*40 rows, the last tile ragged.
		{config{batch: 1, cin: 40, cout: 40, groups: 1, k: [3]int{1, 1, 2}, in: [3]int{4, 4, 4}, s: one, d: one, tile: "{bm: 64, bn: 8, bk: 8, tm: 4, tn: 4}"}, 512, 2},
	} {
		p, err := plan.New(c.conf.parse(t), plan.SM80)
		if err != nil {
			t.Fatalf("%+v: %v", c.conf, err)
		}
		if p.ReadsTorchWeight() {
			t.Fatalf("%s: reads PyTorch's layout: no re-layout to check", p)
		}
		tr := p.Transpose()
		rows, taps := p.CinG*p.CoutG, p.Conv.Taps()
		if tr.Rows != c.rows || tr.Cols != c.cols || tr.Rows*tr.Cols > 4*plan.RepackBlockThreads || tr.Pitch%2 == 0 || tr.Pitch < tr.Cols {
			t.Errorf("%s: tile %+v, want %d x %d, at most %d elements, an odd pitch of at least its columns", p, tr, c.rows, c.cols, 4*plan.RepackBlockThreads)
		}
		if tr.TilesR*tr.Rows < rows || (tr.TilesR-1)*tr.Rows >= rows || tr.TilesT*tr.Cols < taps || (tr.TilesT-1)*tr.Cols >= taps {
			t.Errorf("%s: %d x %d tiles of %d x %d do not cover %d rows by %d taps exactly", p, tr.TilesR, tr.TilesT, tr.Rows, tr.Cols, rows, taps)
		}
		if tr.RaggedR != (rows%tr.Rows != 0) || tr.RaggedT != (taps%tr.Cols != 0) {
			t.Errorf("%s: ragged %v, %v for %d rows and %d taps in tiles of %d x %d", p, tr.RaggedR, tr.RaggedT, rows, taps, tr.Rows, tr.Cols)
		}
		if got, want := p.RepackBlocks(), p.Conv.Groups*tr.TilesR*tr.TilesT; got != want || p.RepackLen() != p.Conv.WeightLen() {
			t.Errorf("%s: %d blocks for %d elements, want %d blocks for the weight's %d", p, got, p.RepackLen(), want, p.Conv.WeightLen())
		}
	}
	// The wgmma image: a thread writes a lane's float4 of mma.sync
	// fragments (sm80), or four channels' high and low parts (sm90).
	for _, c := range []struct {
		target    plan.Target
		perThread int
	}{{plan.SM80, 4}, {plan.SM90, 8}} {
		target, perThread := c.target, c.perThread
		w, err := plan.New(config{batch: 1, cin: 8, cout: 8, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{4, 4, 4}, s: one, d: one, precision: "3xtf32", tile: "{wgmma: true}"}.parse(t), target)
		if err != nil {
			t.Fatal(err)
		}
		want := plan.ImageBlocks(w.RepackLen() / perThread)
		if (w.Transpose() != plan.Transpose{}) || w.WGMMA.ImagePerThread != perThread || w.RepackLen()%perThread != 0 || w.RepackBlocks() != want {
			t.Errorf("wgmma %s: transpose %+v, %d of the image's %d floats a thread, %d blocks; want none, %d a thread and %d blocks",
				target.Name, w.Transpose(), w.WGMMA.ImagePerThread, w.RepackLen(), w.RepackBlocks(), perThread, want)
		}
	}
}
