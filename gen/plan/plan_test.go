package plan_test

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// config is one nn.ConvTranspose3d configuration to plan.
type config struct {
	batch, cin, cout, groups int
	k, in, s, p, op, d       [3]int
	bias                     bool
	precision                string // "" means fp32
	tile                     string // version 1's flat tile mapping, "" for none
}

// yaml writes a spec for c with the generic reference (spec.Generic). The
// kernel.cuda line, when present, is line 41.
func (c config) yaml() string {
	prec := c.precision
	if prec == "" {
		prec = "fp32"
	}
	conv := geom.Conv{Batch: c.batch, InChannels: c.cin, OutChannels: c.cout, In: c.in, Kernel: c.k,
		Stride: c.s, Padding: c.p, OutputPadding: c.op, Dilation: c.d, Groups: c.groups, Bias: c.bias}
	y := spec.Generic("plan_test", "plan test", conv, "rand", spec.Kernel{Backends: []string{"cuda"}})
	// Written as version 1 wrote them: precision and a flat tile.
	cuda, err := spec.V1CUDA(prec, c.tile)
	if err != nil {
		panic(err)
	}
	if cuda != "" {
		y += "  cuda: " + cuda + "\n"
	}
	return y
}

func (c config) parse(t testing.TB) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("plan_test.yaml", []byte(c.yaml()))
	if err != nil {
		t.Fatalf("spec for %+v:\n%v", c, err)
	}
	return s
}

// outDim is PyTorch's documented output size, written here independently
// of geom.OutDim.
func outDim(in, k, s, p, op, d int) int { return (in-1)*s - 2*p + d*(k-1) + op + 1 }

// out is c's output size by outDim, and whether it is empty.
func (c config) out() (out [3]int, empty bool) {
	for i := range 3 {
		out[i] = outDim(c.in[i], c.k[i], c.s[i], c.p[i], c.op[i], c.d[i])
		empty = empty || out[i] <= 0
	}
	return out, empty
}

// randomConfig draws a configuration that satisfies every per-field rule;
// its output may still be empty when the padding is large.
func randomConfig(r *rand.Rand, maxIn, maxK, maxS, maxD int) config {
	c := config{batch: 1 + r.Intn(4), groups: 1 + r.Intn(4), bias: r.Intn(2) == 0}
	c.cin = c.groups * (1 + r.Intn(16))
	c.cout = c.groups * (1 + r.Intn(70))
	if r.Intn(2) == 0 {
		c.precision = "3xtf32"
	}
	for i := range 3 {
		c.k[i] = 1 + r.Intn(maxK)
		c.in[i] = 1 + r.Intn(maxIn)
		c.s[i] = 1 + r.Intn(maxS)
		c.d[i] = 1 + r.Intn(maxD)
		c.op[i] = r.Intn(max(c.s[i], c.d[i]))
		c.p[i] = r.Intn(c.d[i]*(c.k[i]-1) + 3)
	}
	return c
}

// TestOutputShape checks plan.New's output size against PyTorch's formula
// over random configurations, and that configurations the formula leaves
// without output are refused by validation, pointing at the padding.
func TestOutputShape(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	planned, refused := 0, 0
	for range 5000 {
		c := randomConfig(r, 40, 7, 4, 4)
		want, empty := c.out()
		s, err := spec.Parse("plan_test.yaml", []byte(c.yaml()))
		if empty {
			var errs spec.Errors
			if !errors.As(err, &errs) || len(errs) != 1 || errs[0].Field != "problem.padding" ||
				!strings.Contains(errs[0].Msg, "leaves no output") {
				t.Fatalf("%+v: output %v, want one problem.padding error, got %v", c, want, err)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		p, err := plan.New(s, plan.SM90)
		if err != nil {
			t.Fatalf("%+v: default tile refused: %v", c, err)
		}
		planned++
		// A tap fold computes its leading axes as channels (TapFold).
		folded, channels := want, c.cout
		for a := range p.TapFold {
			folded[a] = 1
			channels *= p.Spec.Problem.Conv.Kernel[a]
		}
		if p.Out != folded || p.Conv.OutChannels != channels {
			t.Fatalf("%+v: Out = %v with %d channels (%d axes folded), want %v with %d", c, p.Out, p.Conv.OutChannels, p.TapFold, folded, channels)
		}
		if p.CinG != c.cin/c.groups || p.CoutG != channels/c.groups {
			t.Fatalf("%+v: CinG, CoutG = %d, %d", c, p.CinG, p.CoutG)
		}
		if p.Grid[1] != (p.CoutG+p.Tile.BN()-1)/p.Tile.BN() || p.Grid[2] != c.groups {
			t.Fatalf("%+v: grid %v with BN %d", c, p.Grid, p.Tile.BN())
		}
		if p.Threads < 32 || p.Threads%32 != 0 || p.Threads > plan.MaxThreads || p.SmemBytes > plan.MaxSmemBytes {
			t.Fatalf("%+v: default tile infeasible: %d threads, %d bytes", c, p.Threads, p.SmemBytes)
		}
	}
	if planned < 2500 || refused < 50 {
		t.Errorf("draws too lopsided: %d planned, %d refused", planned, refused)
	}
}

// pair is one (output position, input position, tap) contribution.
type pair struct {
	o, i [3]int
	flat int
}

// TestPhasesBruteForce enumerates every (output, tap) pair that
// contributes, (o + p - k*d) divisible by s with 0 <= (o+p-k*d)/s < in, and
// checks the plan's phases cover each exactly once: output o belongs to the
// phase R = o mod s at q = o / s and its taps read input q + Off.
func TestPhasesBruteForce(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	checked, pairs, tapless := 0, 0, 0
	for n := 0; checked < 300; n++ {
		c := randomConfig(r, 6, 5, 3, 3)
		c.batch, c.cin, c.cout, c.groups = 1+r.Intn(2), 2, 2, 1
		if n%3 == 0 {
			c.precision = ""
			c.tile = "{bm: 64, bn: 8, tm: 4, tn: 4}" // small tiles: several per phase
		}
		out, empty := c.out()
		if empty {
			continue
		}
		p, err := plan.New(c.parse(t), plan.SM90)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		// Where the input has one position the plan raises the stride;
		// the contributing pairs are the same at either stride
		// (geom.Conv.OnePositionStrides), the phases are the plan's.
		c.s = p.Conv.Stride
		n, err := checkPhases(c, p, out)
		if err != nil {
			t.Fatalf("%+v:\n%v", c, err)
		}
		pairs += n
		checked++
		for _, ph := range p.Phases {
			if ph.TapCount == 0 {
				tapless++ // outputs no tap reaches: written with the bias or zero
				break
			}
		}
	}
	// Guard against a generator that makes the test vacuous.
	t.Logf("%d configurations, %d pairs, %d with tapless phases", checked, pairs, tapless)
	if checked < 250 || pairs < 100000 || tapless < 10 {
		t.Errorf("weak sample: %d configurations, %d pairs, %d with tapless phases", checked, pairs, tapless)
	}
}

// contributingPairs is the brute force, straight from the definition of
// the transposed convolution: every (output, input, weight tap) that
// contributes, counted.
func contributingPairs(c config, out [3]int) map[pair]int {
	want := map[pair]int{}
	var o, k [3]int
	for o[0] = 0; o[0] < out[0]; o[0]++ {
		for o[1] = 0; o[1] < out[1]; o[1]++ {
			for o[2] = 0; o[2] < out[2]; o[2]++ {
				for k[0] = 0; k[0] < c.k[0]; k[0]++ {
					for k[1] = 0; k[1] < c.k[1]; k[1]++ {
						for k[2] = 0; k[2] < c.k[2]; k[2]++ {
							var in [3]int
							ok := true
							for i := range 3 {
								num := o[i] + c.p[i] - k[i]*c.d[i]
								ok = ok && num%c.s[i] == 0 && num >= 0 && num/c.s[i] < c.in[i]
								in[i] = num / c.s[i]
							}
							if ok {
								want[pair{o, in, (k[0]*c.k[1]+k[1])*c.k[2] + k[2]}]++
							}
						}
					}
				}
			}
		}
	}
	return want
}

// checkPhases returns the number of contributing pairs it checked, or
// the first discrepancy.
func checkPhases(c config, p *plan.Plan, out [3]int) (n int, err error) {
	type failure struct{ error }
	defer func() {
		switch f := recover().(type) {
		case nil:
		case failure:
			err = f.error
		default:
			panic(f)
		}
	}()
	fail := func(format string, args ...any) {
		panic(failure{fmt.Errorf(format, args...)})
	}
	want := contributingPairs(c, out)
	var o [3]int

	// Phases: distinct residues, each with its outputs and tiles, tap
	// slices back to back.
	seen := map[[3]int]int{}
	tap, maxTiles := 0, 0
	for j, ph := range p.Phases {
		if _, dup := seen[ph.R]; dup {
			fail("residue %v planned twice", ph.R)
		}
		seen[ph.R] = j
		var q [3]int
		for i := range 3 {
			if ph.R[i] < 0 || ph.R[i] >= c.s[i] {
				fail("phase %d residue %v outside the stride", j, ph.R)
			}
			q[i] = (out[i] - ph.R[i] + c.s[i] - 1) / c.s[i]
		}
		if ph.Q != q || ph.M != c.batch*q[0]*q[1]*q[2] || ph.M == 0 {
			fail("phase %d: Q %v M %d, want Q %v M %d", j, ph.Q, ph.M, q, c.batch*q[0]*q[1]*q[2])
		}
		if ph.Tiles != (ph.M+p.Tile.BM()-1)/p.Tile.BM() {
			fail("phase %d: %d tiles for M %d, want %d tiles of %d", j, ph.Tiles, ph.M, (ph.M+p.Tile.BM()-1)/p.Tile.BM(), p.Tile.BM())
		}
		if ph.TapStart != tap || ph.TapCount < 0 || tap+ph.TapCount > len(p.Taps) {
			fail("phase %d: taps [%d +%d), want start %d within %d", j, ph.TapStart, ph.TapCount, tap, len(p.Taps))
		}
		tap += ph.TapCount
		maxTiles = max(maxTiles, ph.Tiles)
	}
	if tap != len(p.Taps) {
		fail("phases hold %d taps, plan has %d", tap, len(p.Taps))
	}

	// The interleaved grid: block x works on phase x mod len(Phases), M tile
	// x / len(Phases). Every M tile of every phase gets exactly one block,
	// and a block with no tile is only the tail of shorter phases.
	nph := len(p.Phases)
	if p.MaxTiles != maxTiles || p.Grid[0] != nph*maxTiles {
		fail("MaxTiles %d, grid %v; want MaxTiles %d and grid x %d", p.MaxTiles, p.Grid, maxTiles, nph*maxTiles)
	}
	covered := map[[2]int]int{}
	for x := 0; x < p.Grid[0]; x++ {
		j, tile := x%nph, x/nph
		if tile < p.Phases[j].Tiles {
			covered[[2]int{j, tile}]++
		}
	}
	for j, ph := range p.Phases {
		for tile := 0; tile < ph.Tiles; tile++ {
			if covered[[2]int{j, tile}] != 1 {
				fail("phase %d tile %d has %d blocks", j, tile, covered[[2]int{j, tile}])
			}
		}
	}

	// Every output belongs to exactly one phase, and its taps, read at
	// q + Off, are exactly the contributing pairs.
	got := map[pair]int{}
	for o[0] = 0; o[0] < out[0]; o[0]++ {
		for o[1] = 0; o[1] < out[1]; o[1]++ {
			for o[2] = 0; o[2] < out[2]; o[2]++ {
				var res, q [3]int
				for i := range 3 {
					res[i], q[i] = o[i]%c.s[i], o[i]/c.s[i]
				}
				j, ok := seen[res]
				if !ok {
					fail("output %v (residue %v) is in no phase: never written", o, res)
				}
				ph := p.Phases[j]
				for _, tp := range p.Taps[ph.TapStart : ph.TapStart+ph.TapCount] {
					var in [3]int
					inside := true
					for i := range 3 {
						in[i] = q[i] + tp.Off[i]
						inside = inside && in[i] >= 0 && in[i] < c.in[i]
					}
					if tp.Flat != (tp.K[0]*c.k[1]+tp.K[1])*c.k[2]+tp.K[2] {
						fail("tap %+v: Flat does not match K", tp)
					}
					for i := range 3 {
						if tp.K[i] < 0 || tp.K[i] >= c.k[i] || (o[i]+c.p[i]-tp.K[i]*c.d[i]) != c.s[i]*in[i] {
							fail("output %v: tap %+v reads input %v, which it does not touch", o, tp, in)
						}
					}
					if inside {
						got[pair{o, in, tp.Flat}]++
					}
				}
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		for pr, n := range want {
			if got[pr] != n {
				fail("pair %+v: planned %d times, want %d", pr, got[pr], n)
			}
		}
		for pr, n := range got {
			if want[pr] == 0 {
				fail("pair %+v planned %d times but does not contribute", pr, n)
			}
		}
	}
	return len(want), nil
}

// TestPhasesCheckerCatches makes sure checkPhases is not vacuous: each
// corruption of a correct plan must be reported.
func TestPhasesCheckerCatches(t *testing.T) {
	c := config{batch: 2, cin: 2, cout: 2, groups: 1, k: [3]int{3, 2, 4}, in: [3]int{3, 4, 2},
		s: [3]int{2, 1, 3}, p: [3]int{1, 0, 2}, op: [3]int{1, 0, 1}, d: [3]int{1, 2, 1}}
	out, _ := c.out()
	fresh := func() *plan.Plan {
		p, err := plan.New(c.parse(t), plan.SM90)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := checkPhases(c, fresh(), out); err != nil {
		t.Fatalf("correct plan refused: %v", err)
	}
	for name, corrupt := range map[string]func(p *plan.Plan){
		"offset shifted":   func(p *plan.Plan) { p.Taps[0].Off[2]++ },
		"tap dropped":      func(p *plan.Plan) { p.Phases[0].TapCount-- },
		"tap duplicated":   func(p *plan.Plan) { p.Taps[1] = p.Taps[0] },
		"flat index wrong": func(p *plan.Plan) { p.Taps[0].Flat++ },
		"phase dropped":    func(p *plan.Plan) { p.Phases = p.Phases[:len(p.Phases)-1] },
		"residue swapped":  func(p *plan.Plan) { p.Phases[0].R, p.Phases[1].R = p.Phases[1].R, p.Phases[0].R },
		"tile missing":     func(p *plan.Plan) { p.Phases[0].Tiles-- },
		"grid too small":   func(p *plan.Plan) { p.Grid[0]-- },
		"max tiles wrong":  func(p *plan.Plan) { p.MaxTiles++ },
		"taps overlap":     func(p *plan.Plan) { p.Phases[1].TapStart-- },
	} {
		p := fresh()
		corrupt(p)
		if _, err := checkPhases(c, p, out); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}

// base72 is KernelBench level 1 #72: 8 input and 8 output channels per group.
var base72 = config{batch: 8, cin: 32, cout: 32, groups: 4,
	k: [3]int{3, 5, 7}, in: [3]int{12, 24, 48}, s: [3]int{2, 2, 2}, p: [3]int{1, 2, 3}, op: [3]int{1, 1, 1}, d: [3]int{1, 1, 1}}

func with(c config, edit func(*config)) config {
	edit(&c)
	return c
}

// TestTileDefaults pins the tiles the plan chooses for what the spec
// leaves out, worked out by hand from chooseTile's rules.
func TestTileDefaults(t *testing.T) {
	for _, tc := range []struct {
		name          string
		c             config
		want          plan.Tile
		threads, smem int
	}{
		// BN: the next power of two of Cout/groups (8); TN 4 below BN 64;
		// BM = 8*max(32, 256/(8/4)) capped at 512; BK = min(8, Cin/groups);
		// min_blocks 1 for every FFMA and direct tile (ptxas otherwise
		// trades registers for resident blocks and may spill).
		{"72: 8 channels per group", base72,
			plan.Tile{FFMA: &spec.FFMA{BM: 512, BN: 8, BK: 8, TM: 8, TN: 4, MinBlocks: 1}, ThreadsM: 64, ThreadsN: 2}, 128, 2 * 8 * (512 + 8) * 4},
		// BN 64 -> TN 8; BM = 8*max(32, 256/8) = 256; BK = Cin/groups = 3.
		{"64 out, 3 in", with(base72, func(c *config) { c.cin, c.cout, c.groups = 3, 64, 1 }),
			plan.Tile{FFMA: &spec.FFMA{BM: 256, BN: 64, BK: 3, TM: 8, TN: 8, MinBlocks: 1}, ThreadsM: 32, ThreadsN: 8}, 256, 2 * 3 * (256 + 64) * 4},
		// 40 in a BN of 64 wastes 24 > 64/4: BN becomes 40's largest
		// power-of-two divisor, 8.
		{"40 out: BN 8", with(base72, func(c *config) { c.cin, c.cout, c.groups = 16, 40, 1 }),
			plan.Tile{FFMA: &spec.FFMA{BM: 512, BN: 8, BK: 8, TM: 8, TN: 4, MinBlocks: 1}, ThreadsM: 64, ThreadsN: 2}, 128, 2 * 8 * (512 + 8) * 4},
		// 48 in 64 wastes exactly a quarter: BN stays 64.
		{"48 out: BN 64", with(base72, func(c *config) { c.cin, c.cout, c.groups = 32, 48, 1 }),
			plan.Tile{FFMA: &spec.FFMA{BM: 256, BN: 64, BK: 8, TM: 8, TN: 8, MinBlocks: 1}, ThreadsM: 32, ThreadsN: 8}, 256, 2 * 8 * (256 + 64) * 4},
		// 3 channels: BN 4 (at least 4), one thread column, BM capped at 512.
		{"3 out, 1 in", with(base72, func(c *config) { c.cin, c.cout, c.groups = 1, 3, 1 }),
			plan.Tile{FFMA: &spec.FFMA{BM: 512, BN: 4, BK: 1, TM: 8, TN: 4, MinBlocks: 1}, ThreadsM: 64, ThreadsN: 1}, 64, 2 * 1 * (512 + 4) * 4},
		// Only bn given: TN 8 for BN >= 64, BM = 8*min(max(32, 256/32), 512/32)
		// = 128: 512 threads, not 1024 (64 registers would not hold 64 sums).
		{"bn 256 given", with(base72, func(c *config) { c.tile = "{bn: 256}" }),
			plan.Tile{FFMA: &spec.FFMA{BM: 128, BN: 256, BK: 8, TM: 8, TN: 8, MinBlocks: 1}, ThreadsM: 16, ThreadsN: 32}, 512, 2 * 8 * (128 + 256) * 4},
		// A full tile is taken as given, min_blocks too.
		{"all given", with(base72, func(c *config) { c.tile = "{bm: 64, bn: 16, bk: 3, tm: 4, tn: 4, min_blocks: 4}" }),
			plan.Tile{FFMA: &spec.FFMA{BM: 64, BN: 16, BK: 3, TM: 4, TN: 4, MinBlocks: 4}, ThreadsM: 16, ThreadsN: 4}, 64, 2 * 3 * (64 + 16) * 4},
		// 3xtf32: warp tiles WM 64 x WN min(32, BN); about four warps;
		// BK a multiple of 8; rows padded by 8 floats; min_blocks 1, as for
		// every tile (ptxas spilled 256-thread blocks trimmed to 64 and 128
		// registers).
		{"3xtf32, 72", with(base72, func(c *config) { c.precision = "3xtf32" }),
			plan.Tile{MMA: &spec.MMA{BM: 256, BN: 8, BK: 8, WM: 64, WN: 8, MinBlocks: 1}, WarpsM: 4, WarpsN: 1, Pad: 8}, 128, 2 * 8 * (256 + 8 + 16) * 4},
		{"3xtf32, 64 out, 3 in", with(base72, func(c *config) { c.cin, c.cout, c.groups, c.precision = 3, 64, 1, "3xtf32" }),
			plan.Tile{MMA: &spec.MMA{BM: 128, BN: 64, BK: 8, WM: 64, WN: 32, MinBlocks: 1}, WarpsM: 2, WarpsN: 2, Pad: 8}, 128, 2 * 8 * (128 + 64 + 16) * 4},
		{"3xtf32, min_blocks given", with(base72, func(c *config) {
			c.cin, c.cout, c.groups, c.precision, c.tile = 3, 64, 1, "3xtf32", "{min_blocks: 2}"
		}),
			plan.Tile{MMA: &spec.MMA{BM: 128, BN: 64, BK: 8, WM: 64, WN: 32, MinBlocks: 2}, WarpsM: 2, WarpsN: 2, Pad: 8}, 128, 2 * 8 * (128 + 64 + 16) * 4},
		// Direct: BN the group's channels (8), four rows per thread at 8
		// channels or fewer, 128 threads, BK 8; every phase's weights fit
		// (at most 24 taps of 8x8 floats).
		{"direct, 72", with(base72, func(c *config) { c.tile = "{direct: true}" }),
			plan.Tile{Direct: &spec.Direct{BM: 512, BN: 8, BK: 8, TM: 4, MinBlocks: 1}, ThreadsM: 128, ThreadsN: 1, TapChunk: 24}, 128, 24 * 8 * 8 * 4},
		// 20 channels: BN 16, two rows per thread; a tap's weights are
		// 64x16 floats, so 12 of the 24 taps are staged at once.
		{"direct, 64 in, 20 out", with(base72, func(c *config) { c.cin, c.cout, c.groups, c.tile = 64, 20, 1, "{direct: true}" }),
			plan.Tile{Direct: &spec.Direct{BM: 256, BN: 16, BK: 8, TM: 2, MinBlocks: 1}, ThreadsM: 128, ThreadsN: 1, TapChunk: 12}, 128, 12 * 64 * 16 * 4},
		{"direct, 2x4 sums", with(base72, func(c *config) { c.cin, c.cout, c.groups, c.tile = 16, 4, 1, "{direct: true, bm: 512, tm: 2, bk: 4}" }),
			plan.Tile{Direct: &spec.Direct{BM: 512, BN: 4, BK: 4, TM: 2, MinBlocks: 1}, ThreadsM: 256, ThreadsN: 1, TapChunk: 24}, 256, 24 * 16 * 4 * 4},
		{"direct, 64 threads", with(base72, func(c *config) { c.cin, c.cout, c.groups, c.tile = 64, 20, 1, "{direct: true, bm: 256, tm: 4, bk: 4}" }),
			plan.Tile{Direct: &spec.Direct{BM: 256, BN: 16, BK: 4, TM: 4, MinBlocks: 1}, ThreadsM: 64, ThreadsN: 1, TapChunk: 12}, 64, 12 * 64 * 16 * 4},
		// W-window: one row of tw outputs per thread, 128 threads, two
		// channels' windows at once; a chunk holds every
		// (d, h) tap of a phase (2 x 3 at most) with all 7 kw.
		{"direct, tw 8, 72", with(base72, func(c *config) { c.tile = "{direct: true, tw: 8}" }),
			plan.Tile{Direct: &spec.Direct{BM: 128, BN: 8, BK: 2, TW: 8, MinBlocks: 1}, ThreadsM: 128, ThreadsN: 1, TapChunk: 6}, 128, 6 * 8 * 7 * 8 * 4},
		// 512 threads leave 128 registers each: 8 outputs by 4 channels and
		// one float4 window of 12 columns at a time fit (8 by 8 do not, see
		// TestTileFeasibility).
		{"direct, tw 8, 512 threads", with(base72, func(c *config) { c.tile = "{direct: true, tw: 8, bn: 4, bk: 1, bm: 512}" }),
			plan.Tile{Direct: &spec.Direct{BM: 512, BN: 4, BK: 1, TW: 8, MinBlocks: 1}, ThreadsM: 512, ThreadsN: 1, TapChunk: 6}, 512, 6 * 8 * 7 * 4 * 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.New(tc.c.parse(t), plan.SM90)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Tile, tc.want) || p.Threads != tc.threads || p.SmemBytes != tc.smem {
				t.Errorf("tile %s %+v, %d threads, %d bytes\nwant %s %+v, %d threads, %d bytes", p.Tile, p.Tile.Family(), p.Threads, p.SmemBytes, tc.want, tc.want.Family(), tc.threads, tc.smem)
			}
		})
	}
}

// TestTileFeasibility: tiles that pass the spec's per-field ranges but not
// the block's limits, with diagnostics pointing at kernel.cuda.<family>.<field>
// (or at the family's mapping when the field was left to the plan). The
// kernel.cuda line is line 41.
func TestTileFeasibility(t *testing.T) {
	const smemRule = "floats, padded); sm_80 allows 49152 of static shared memory"
	for _, tc := range []struct {
		name, precision, tile string
		want                  []string
	}{
		{"too many threads", "", "{bm: 1024, bn: 256, bk: 4, tm: 4, tn: 4}", []string{
			"plan_test.yaml:41:21: kernel.cuda.ffma.bm: gives (bm/tm)*(bn/tn) = 16384 threads; a block needs a multiple of 32, at most 1024 (got 1024)",
		}},
		{"threads not a multiple of 32", "", "{bm: 64, bn: 4, tm: 8, tn: 4}", []string{
			"plan_test.yaml:41:21: kernel.cuda.ffma.bm: gives (bm/tm)*(bn/tn) = 8 threads; a block needs a multiple of 32, at most 1024 (got 64)",
		}},
		{"shared memory over 48 KiB", "", "{bm: 512, bk: 64}", []string{
			"plan_test.yaml:41:30: kernel.cuda.ffma.bk: needs 266240 bytes of shared memory (two stages of bk x (bm+bn) " + smemRule + " (got 64)",
		}},
		{"shared memory, bk left to the plan", "", "{bm: 1024, bn: 64, tm: 8, tn: 8}", []string{
			"plan_test.yaml:41:16: kernel.cuda.ffma.bk: needs 69632 bytes of shared memory (two stages of bk x (bm+bn) " + smemRule + " (got 8)",
		}},
		{"bn not a multiple of tn", "", "{bn: 4, tn: 8}", []string{
			"plan_test.yaml:41:21: kernel.cuda.ffma.bn: must be a multiple of tn=8 (got 4)",
		}},
		// BUG (plan.go, checkTile): errors must come in file order, like
		// the spec's (spec.Errors is documented "in file order"); checkTile
		// returns them in the order it checks.
		{"two at once, in file order", "", "{bk: 64, bm: 1024, bn: 256, tm: 4, tn: 4}", []string{
			"plan_test.yaml:41:21: kernel.cuda.ffma.bk: needs 655360 bytes of shared memory (two stages of bk x (bm+bn) " + smemRule + " (got 64)",
			"plan_test.yaml:41:29: kernel.cuda.ffma.bm: gives (bm/tm)*(bn/tn) = 16384 threads; a block needs a multiple of 32, at most 1024 (got 1024)",
		}},
		{"3xtf32 accumulators", "3xtf32", "{bn: 64, wm: 64, wn: 64}", []string{
			"plan_test.yaml:41:28: kernel.cuda.mma.wm: wm*wn/32 = 128 accumulators per thread; at most 64 fit in registers (got 64)",
		}},
		// 512 threads at bk 16: nvcc 11.8 spilled 8 bytes at 128 registers.
		{"3xtf32 registers", "3xtf32", "{bm: 256, bn: 64, bk: 16, wm: 32, wn: 32}", []string{
			"plan_test.yaml:41:20: kernel.cuda.mma.bm: gives 512 threads, 128 registers each (min_blocks 1), but a 32x32 warp tile with bk 16 (32 sums, 64 fragment registers, 2 weight loads in flight) needs about 146 (got 256)",
		}},
		// More than any block size leaves: a shallower step is the fix
		// (spilled 44 bytes at 255 on sm_90; 64x32 at bk 24 spilled too).
		{"3xtf32 presplit registers", "3xtf32", "{bm: 128, bn: 32, bk: 16, wm: 64, wn: 32, presplit: true}", []string{
			"plan_test.yaml:41:37: kernel.cuda.mma.bk: a 64x32 warp tile with bk 16 (64 sums, 96 fragment registers, 8 weight loads in flight) needs about 264 registers per thread; a thread has at most 255 (got 16)",
		}},
		{"3xtf32 registers, min_blocks", "3xtf32", "{bn: 64, wm: 64, wn: 32, min_blocks: 4}", []string{
			"plan_test.yaml:41:52: kernel.cuda.mma.min_blocks: gives 128 threads, 128 registers each (min_blocks 4), but a 64x32 warp tile with bk 8 (64 sums, 48 fragment registers, 4 weight loads in flight) needs about 168 (got 4)",
		}},
		{"3xtf32 bk", "3xtf32", "{bk: 12}", []string{
			"plan_test.yaml:41:20: kernel.cuda.mma.bk: must be a multiple of 8 with 3xtf32 (m16n8k8 fragments) (got 12)",
		}},
		{"3xtf32 bm below wm", "3xtf32", "{bm: 32}", []string{
			"plan_test.yaml:41:20: kernel.cuda.mma.bm: must be a multiple of wm=64 (got 32)",
		}},
		{"direct accumulators", "", "{direct: true, bn: 32, tm: 4}", []string{
			"plan_test.yaml:41:23: kernel.cuda.direct.bn: tm*bn = 128 accumulators per thread (direct: a thread holds all bn columns); at most 64 fit in registers (got 32)",
		}},
		{"direct threads", "", "{direct: true, bm: 64, tm: 4}", []string{
			"plan_test.yaml:41:23: kernel.cuda.direct.bm: gives bm/tm = 16 threads; a block needs a multiple of 32, at most 1024 (got 64)",
		}},
		// #72 has stride 2 along W.
		{"tw not a multiple of stride_w", "", "{direct: true, tw: 5}", []string{
			"plan_test.yaml:41:23: kernel.cuda.direct.tw: must be a multiple of stride_w=2 (a thread's outputs then start at residue 0) (got 5)",
		}},
		// Registers: 512 threads leave 128 each; 8 outputs by 8 channels and
		// two float4 windows of 12 columns (#72: kw 7, stride 2) need more.
		{"tw registers", "", "{direct: true, bn: 8, tw: 8, bm: 512}", []string{
			"plan_test.yaml:41:37: kernel.cuda.direct.bm: gives 512 threads, 128 registers each (min_blocks 1), but 64 sums, two batches of 2 windows of 12 input columns and 56 weights need about 196 (got 512)",
		}},
		{"tw registers, min_blocks", "", "{direct: true, bn: 8, tw: 8, min_blocks: 4}", []string{
			"plan_test.yaml:41:45: kernel.cuda.direct.min_blocks: gives 128 threads, 128 registers each (min_blocks 4), but 64 sums, two batches of 2 windows of 12 input columns and 56 weights need about 196 (got 4)",
		}},
		// FFMA: 1024 threads leave 64 registers; 32 sums do not fit (a
		// random tile of this shape spilled 8 bytes).
		{"ffma registers", "", "{bm: 512, bn: 64, bk: 3, tm: 4, tn: 8, cp_async: true}", []string{
			"plan_test.yaml:41:21: kernel.cuda.ffma.bm: gives 1024 threads, 64 registers each (min_blocks 1), but 32 sums, 12 operands and 0 loads in flight need about 84 (got 512)",
		}},
		{"ffma registers, min_blocks", "", "{bm: 128, bn: 64, tm: 8, tn: 8, min_blocks: 8}", []string{
			"plan_test.yaml:41:60: kernel.cuda.ffma.min_blocks: gives 128 threads, 64 registers each (min_blocks 8), but 64 sums, 16 operands and 12 loads in flight need about 132 (got 8)",
		}},
		{"direct registers", "", "{direct: true, bm: 1024, tm: 1, bn: 16, bk: 8}", []string{
			"plan_test.yaml:41:23: kernel.cuda.direct.bm: gives 1024 threads, 64 registers each (min_blocks 1), but 16 sums and 8 inputs per batch of loads need about 76 (got 1024)",
		}},
		{"tw accumulators", "", "{direct: true, bn: 8, tw: 16}", []string{
			"plan_test.yaml:41:23: kernel.cuda.direct.bn: tw*bn = 128 accumulators per thread (direct: a thread holds all bn columns); at most 64 fit in registers (got 8)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := with(base72, func(c *config) { c.precision, c.tile = tc.precision, tc.tile })
			p, err := plan.New(c.parse(t), plan.SM90)
			var errs spec.Errors
			if p != nil || !errors.As(err, &errs) {
				t.Fatalf("New = %v, %v; want spec.Errors", p, err)
			}
			if got := strings.Split(errs.Error(), "\n"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestWindowWeightsOverSharedMemory: a W-window tile stages a (d, h) tap's
// weights for every kw, and says so when they cannot fit.
func TestWindowWeightsOverSharedMemory(t *testing.T) {
	c := with(base72, func(c *config) { c.cin, c.groups, c.tile = 512, 1, "{direct: true, bn: 4, tw: 8}" })
	_, err := plan.New(c.parse(t), plan.SM90)
	want := "plan_test.yaml:41:23: kernel.cuda.direct.bn: needs 57344 bytes of shared memory for one (d, h) tap's weights (512 input channels x 7 kw x bn floats); sm_80 allows 49152 of static shared memory (got 4)"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestTileRulesInCode: a spec built in code gets the rules a spec file
// gets (tm is 4 or 8, so at most 64 accumulators a thread), at the field's
// node.
func TestTileRulesInCode(t *testing.T) {
	s := with(base72, func(c *config) { c.tile = "{bm: 512, bn: 64, tm: 8, tn: 8}" }).parse(t)
	f := s.Kernel.CUDA.Family.(spec.FFMA)
	f.TM = 16
	s.Kernel.CUDA.Family = f
	_, err := plan.New(s, plan.SM90)
	want := "plan_test.yaml:41:38: kernel.cuda.ffma.tm: must be 4 or 8 (each thread reads its rows as float4) (got 16)"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestMMAWarpTileWholeFragments: a 3xtf32 warp tile must hold whole n8
// fragments (kNT = WN/8 in the template). bn: 4 is a valid spec value, and
// the plan must not derive WN = min(32, BN) = 4 from it (zero fragments:
// the block would compute nothing).
func TestMMAWarpTileWholeFragments(t *testing.T) {
	for _, tile := range []string{"{bn: 4}", "{bm: 64, bn: 4, bk: 8}"} {
		p, err := plan.New(with(base72, func(c *config) { c.precision, c.tile = "3xtf32", tile }).parse(t), plan.SM90)
		if err == nil {
			if p.Tile.WN()%8 != 0 || p.Tile.WM()%16 != 0 || p.Tile.WN() == 0 {
				t.Errorf("tile %s: planned WM %d x WN %d, not whole m16n8 fragments", tile, p.Tile.WM(), p.Tile.WN())
			}
			continue
		}
		var errs spec.Errors
		if !errors.As(err, &errs) || errs[0].Field != "kernel.cuda.mma.bn" {
			t.Errorf("tile %s: want an error at kernel.cuda.mma.bn, got %v", tile, err)
		}
	}
}

// TestRandomConfigsPlanFeasible: every tile the plan accepts fits the
// target, over random explicit tiles of both kinds.
func TestRandomTilesFeasible(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	pick := func(xs ...int) int { return xs[r.Intn(len(xs))] }
	accepted := 0
	for range 2000 {
		c := base72
		c.cin, c.cout, c.groups = 1+r.Intn(64), 1+r.Intn(128), 1
		if r.Intn(2) == 0 {
			c.tile = fmt.Sprintf("{bm: %d, bn: %d, bk: %d, tm: %d, tn: %d}", pick(16, 32, 64, 128, 256, 512, 1024),
				pick(4, 8, 16, 32, 64, 128, 256), 1+r.Intn(64), pick(4, 8), pick(4, 8))
		} else {
			c.precision = "3xtf32"
			c.tile = fmt.Sprintf("{bm: %d, bn: %d, bk: %d, wm: %d, wn: %d}", pick(16, 32, 64, 128, 256, 512),
				pick(8, 16, 32, 64, 128), 8*(1+r.Intn(8)), pick(16, 32, 64), pick(8, 16, 32, 64))
		}
		p, err := plan.New(c.parse(t), plan.SM90)
		if err != nil {
			continue
		}
		accepted++
		tl := p.Tile
		if p.Threads < 32 || p.Threads%32 != 0 || p.Threads > plan.MaxThreads || p.SmemBytes > plan.MaxSmemBytes {
			t.Fatalf("%s: accepted %d threads, %d bytes", c.tile, p.Threads, p.SmemBytes)
		}
		if tl.MMA != nil {
			if tl.BM()%tl.WM() != 0 || tl.BN()%tl.WN() != 0 || tl.BK()%8 != 0 || tl.WN()%8 != 0 || tl.WM()%16 != 0 ||
				p.Threads != 32*(tl.BM()/tl.WM())*(tl.BN()/tl.WN()) {
				t.Fatalf("%s: accepted %s", c.tile, tl)
			}
		} else if tl.BM()%tl.TM() != 0 || tl.BN()%tl.TN() != 0 || tl.TM()*tl.TN() > 64 || p.Threads != (tl.BM()/tl.TM())*(tl.BN()/tl.TN()) {
			t.Fatalf("%s: accepted %s", c.tile, tl)
		}
	}
	if accepted < 200 {
		t.Errorf("only %d of 2000 random tiles accepted", accepted)
	}
}

// TestSplitKRefusals: split_k shares a phase's steps among blocks, so the
// plan refuses more splits than the longest phase has steps, and partial
// outputs past MaxWorkspaceBytes; a split it accepts is laid out along z
// as (group, split) pairs, with the kernel that adds the splits, and
// each phase gets splits in proportion to its taps.
func TestSplitKRefusals(t *testing.T) {
	planWith := func(c config, f spec.MMA) (*plan.Plan, error) {
		s := c.parse(t)
		s.Kernel.CUDA = spec.CUDA{Family: f}
		return plan.New(s, plan.SM80)
	}
	p, err := planWith(base72, spec.MMA{SplitK: 4})
	if err != nil {
		t.Fatal(err)
	}
	if p.Blocks[2] != 4*base72.groups || p.Names.AddSplits == "" || p.WorkspaceLen() != 4*p.Conv.OutputLen() || p.MainBias() {
		t.Errorf("split_k 4: blocks %v, add kernel %q, workspace %d of output %d", p.Blocks, p.Names.AddSplits, p.WorkspaceLen(), p.Conv.OutputLen())
	}
	// The phases' taps (kernel 3x5x7, stride 2, padding 1,2,3) run from 6
	// to 24: the longest gets the 4 splits, the others their share of
	// them, rounded up; SplitTable lists them by residue, row-major.
	want := map[[3]int]int{{0, 0, 0}: 2, {1, 0, 1}: 4, {0, 1, 0}: 1, {1, 1, 1}: 3}
	table, res := p.SplitTable(), p.Residues()
	if res != [3]int{2, 2, 2} || len(table) != 8 {
		t.Fatalf("split table %v over residues %v", table, res)
	}
	for _, ph := range p.Phases {
		if n, ok := want[ph.R]; ok && ph.Splits != n {
			t.Errorf("phase %v (%d taps): %d splits, want %d", ph.R, ph.TapCount, ph.Splits, n)
		}
		if at := table[(ph.R[0]*2+ph.R[1])*2+ph.R[2]]; at != ph.Splits {
			t.Errorf("phase %v: split table says %d, the phase %d", ph.R, at, ph.Splits)
		}
	}
	one := with(base72, func(c *config) { c.k, c.s, c.p, c.op = [3]int{1, 1, 1}, [3]int{1, 1, 1}, [3]int{}, [3]int{} })
	huge := with(base72, func(c *config) { c.in = [3]int{24, 48, 96} })
	for _, tc := range []struct {
		c    config
		f    spec.MMA
		want string
	}{
		{one, spec.MMA{SplitK: 2}, "kernel.cuda.mma.split_k: shares a phase's reduction steps among blocks, and the longest phase has 1 (taps x input channels in steps of bk 8): at most 1 (got 2)"},
		{huge, spec.MMA{SplitK: 16}, "kernel.cuda.mma.split_k: writes 16 partial outputs of"},
	} {
		_, err := planWith(tc.c, tc.f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("split_k %d: error %v, want %q", tc.f.SplitK, err, tc.want)
		}
	}
	if _, err := planWith(huge, spec.MMA{SplitK: 2}); err != nil {
		t.Errorf("split_k 2 of a large output: %v", err)
	}
}
