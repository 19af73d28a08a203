package plan_test

import (
	"strings"
	"testing"

	"convtgen/gen/plan"
)

// TestWGMMALayout checks a wgmma tile's plan against numbers worked out by
// hand: #61 (48 channels: no padding of channels or columns, a border of
// kernel-1 per side) and a grouped, padded, dilated configuration (3
// channels a group padded to 8, 35 output channels a group in one tile of
// 40 columns, padding past the kernel's reach: no border before the input).
func TestWGMMALayout(t *testing.T) {
	one := [3]int{1, 1, 1}
	for _, c := range []struct {
		conf config
		want plan.WGMMA
		tile plan.Tile
		grid [3]int
	}{
		{config{batch: 8, cin: 48, cout: 48, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{64, 64, 64}, s: one, d: one, precision: "3xtf32", tile: "{wgmma: true}"},
			plan.WGMMA{CinP: 48, Lo: [3]int{2, 2, 2}, X: [3]int{68, 68, 68}, XLen: 8 * 48 * 68 * 68 * 68, KTotal: 27 * 48, Steps: 41, NTiles: 1,
				RelayoutWTiles: 3, RelayoutCTiles: 2, RelayoutBlocks: 8 * 68 * 68 * 3 * 2, Stage: 2 * 32 * 48, ImageLen: 41 * 2 * 32 * 48, Rows: 128, M: 8 * 66 * 66 * 66, SumsPerThread: 24},
			plan.Tile{WGMMA: true, BM: 128, BN: 48, BK: 32, Slabs: 2, Span: 4, Stages: 4, MinBlocks: 1},
			[3]int{(8*66*66*66 + 127) / 128, 1, 1}},
		{config{batch: 2, cin: 6, cout: 70, groups: 2, k: [3]int{3, 2, 1}, in: [3]int{5, 6, 7}, s: one, p: [3]int{3, 0, 1}, d: [3]int{1, 2, 1},
			precision: "3xtf32", tile: "{wgmma: true, slabs: 1, span: 2}"},
			// Out: (5+2-6, 6+2, 7-2) = (1, 8, 5). Lo: max(0, (k-1)*d - p) = (0, 2, 0);
			// X: Lo + max(in, out + p) = (5, 8+2, 7) with D: max(5, 1+3) = 5.
			plan.WGMMA{CinP: 8, Lo: [3]int{0, 2, 0}, X: [3]int{5, 10, 7}, XLen: 2 * 2 * 8 * 5 * 10 * 7, KTotal: 6 * 8, Steps: 2, NTiles: 1,
				RelayoutWTiles: 1, RelayoutCTiles: 1, RelayoutBlocks: 2 * 2 * 5 * 10, Stage: 2 * 32 * 40, ImageLen: 2 * 1 * 2 * 2 * 32 * 40, Rows: 64, M: 2 * 1 * 8 * 5, SumsPerThread: 20},
			plan.Tile{WGMMA: true, BM: 64, BN: 40, BK: 32, Slabs: 1, Span: 2, Stages: 4, MinBlocks: 1},
			[3]int{2, 1, 2}},
	} {
		p, err := plan.New(c.conf.parse(t))
		if err != nil {
			t.Fatal(err)
		}
		if p.WGMMA != c.want || p.Tile != c.tile || p.Grid != c.grid || p.Threads != 128 {
			t.Errorf("%+v:\ngot  %+v\n     %+v grid %v, %d threads\nwant %+v\n     %+v grid %v, 128 threads", c.conf, p.WGMMA, p.Tile, p.Grid, p.Threads, c.want, c.tile, c.grid)
		}
		if p.SmemBytes != c.tile.Stages*c.want.Stage*4 || p.SmemBytes > plan.MaxSmemBytes {
			t.Errorf("%+v: %d bytes of shared memory for %d stages of %d floats", c.conf, p.SmemBytes, c.tile.Stages, c.want.Stage)
		}
	}
}

// TestWGMMAColumnTiles: more than 64 output channels a group split into
// the fewest tiles of at most 64 columns, each a multiple of 8, with as
// many weight stages as fit 48 KiB.
func TestWGMMAColumnTiles(t *testing.T) {
	for _, c := range []struct{ cout, bn, tiles, stages int }{
		{8, 8, 1, 4}, {17, 24, 1, 4}, {64, 64, 1, 3}, {65, 40, 2, 4}, {200, 56, 4, 3},
	} {
		conf := config{batch: 1, cin: 8, cout: c.cout, groups: 1, k: [3]int{1, 1, 1}, in: [3]int{2, 2, 2}, s: [3]int{1, 1, 1}, d: [3]int{1, 1, 1},
			precision: "3xtf32", tile: "{wgmma: true}"}
		p, err := plan.New(conf.parse(t))
		if err != nil {
			t.Fatal(err)
		}
		if p.Tile.BN != c.bn || p.WGMMA.NTiles != c.tiles || p.Tile.Stages != c.stages || p.Tile.BN*p.WGMMA.NTiles < c.cout {
			t.Errorf("%d channels: bn %d in %d tiles, %d stages; want bn %d in %d tiles, %d stages", c.cout, p.Tile.BN, p.WGMMA.NTiles, p.Tile.Stages, c.bn, c.tiles, c.stages)
		}
	}
}

// TestWGMMANeedsStrideOne: the plan refuses a wgmma tile at stride 2 (the
// spec validator does too; the plan's check guards tiles set in code, as
// the tuner's candidates are).
func TestWGMMANeedsStrideOne(t *testing.T) {
	conf := config{batch: 1, cin: 8, cout: 8, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{4, 4, 4}, s: [3]int{1, 1, 1}, d: [3]int{1, 1, 1}, precision: "3xtf32", tile: "{wgmma: true}"}
	s := conf.parse(t)
	s.Problem.Conv.Stride = [3]int{1, 2, 1}
	if _, err := plan.New(s); err == nil || !strings.Contains(err.Error(), "kernel.tile.wgmma") || !strings.Contains(err.Error(), "stride 1") {
		t.Fatalf("stride (1, 2, 1): %v, want a kernel.tile.wgmma error about stride 1", err)
	}
}
