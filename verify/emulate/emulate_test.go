package emulate_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/mutate"
	"convtgen/gen/plan"
	"convtgen/gen/ref"
	"convtgen/gen/spec"
	"convtgen/verify"
	"convtgen/verify/emulate"
	"convtgen/verify/gpu"
)

// small draws random valid configurations (both precisions, random tiles)
// small enough to emulate quickly. The cost is mostly barriers: one per
// block and reduction step, two per emulated mma.sync, three per wait
// for a warpgroup's wgmma products.
func small(t *testing.T, n int, seed int64) []gen.Loaded {
	return smallWhere(t, n, seed, func(*plan.Plan) bool { return true })
}

// smallWhere is small's draws of plans that keep accepts (from 30n
// draws at most).
func smallWhere(t *testing.T, n int, seed int64, keep func(*plan.Plan) bool) []gen.Loaded {
	t.Helper()
	all, err := gen.Random(30*n, seed)
	if err != nil {
		t.Fatal(err)
	}
	var out []gen.Loaded
	for _, l := range all {
		p := l.Plans[0] // a draw is planned for one target
		if !keep(p) {
			continue
		}
		steps := 0
		for _, ph := range p.Phases {
			steps = max(steps, ph.TapCount*p.CIChunks())
		}
		perStep := 1
		if p.Tile.MMA != nil {
			perStep += 2 * 3 * (p.Tile.BK() / 8) * (p.Tile.WM() / 16) * (p.Tile.WN() / 8)
		}
		if p.Tile.WGMMA != nil {
			// sm80's products are mma.sync: 3 per k8 chunk, 8-column block
			// and slab; sm90's wait for a step's wgmma products once.
			steps = slices.Max(p.WGMMA.Steps)
			perStep += 2 * 3 * 4 * (p.Tile.BN() / 8) * p.Tile.WGMMA.Slabs
			if p.Target.WGMMA {
				perStep = 1 + 3
			}
		}
		barriers := p.Grid[0] * p.Grid[1] * p.Grid[2] * (steps + 1) * perStep
		if p.Conv.OutputLen() <= 40000 && p.Threads <= 256 && barriers <= 20000 && len(out) < n {
			out = append(out, l)
		}
	}
	return out
}

func cxx(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ on PATH")
	}
	return path
}

// emulated is one emulated run: the output, the float64 reference's, the
// run's order seed, and the run's error (an output written other than
// once, a store past the output, a deadlock).
type emulated struct {
	y    []float32
	want []float64
	seed uint64
	err  error
}

// runCUDA renders p's CUDA submission, runs its kernel on the CPU on
// inputs of problem (p's own, or the unmutated plan's when p carries a
// planted bug) and returns the run.
func runCUDA(t *testing.T, r *gen.Renderer, dir string, p, problem *plan.Plan, specPath string) emulated {
	t.Helper()
	src, err := mutate.RenderCUDA(r, p, specPath)
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := verify.KernelSource(src)
	if err != nil {
		t.Fatal(err)
	}
	return emulateSource(t, dir, kernel, p.Launch(""), problem)
}

func emulateSource(t *testing.T, dir, kernel string, l plan.Launch, problem *plan.Plan) emulated {
	t.Helper()
	prog, err := emulate.Build(context.Background(), cxx(t), dir, kernel, l)
	if err != nil {
		t.Fatal(err)
	}
	c := problem.Conv
	in := gpu.MakeInputs(c, problem.Spec.Problem.InputDist, 7)
	y, err := prog.Run(context.Background(), in.X, in.W, in.B)
	return emulated{y, ref.Forward(c, in.X, in.W, in.B), prog.Seed, err}
}

// check fails t unless the run wrote every output once with fp32-level
// error against float64, naming the seed that reproduces it.
func (e emulated) check(t *testing.T, what fmt.Stringer) {
	t.Helper()
	if e.err != nil {
		t.Fatalf("%s: %v", what, e.err)
	}
	if nan := nanCount(e.y); nan > 0 {
		t.Fatalf("%s (seed %d): %d of %d outputs not written", what, e.seed, nan, len(e.y))
	}
	if err := ref.RelL2(e.y, e.want); err > 1e-5 {
		t.Fatalf("%s (seed %d): relative L2 error %.2e > 1e-5", what, e.seed, err)
	}
}

// caught reports how a run with a planted bug came out wrong ("" if not).
func (e emulated) caught() string {
	switch {
	case e.err != nil:
		lines := strings.SplitN(e.err.Error(), "\n", 3)
		return lines[min(1, len(lines)-1)]
	case nanCount(e.y) > 0:
		return fmt.Sprintf("%d outputs NaN", nanCount(e.y))
	case ref.RelL2(e.y, e.want) >= 1e-3:
		return fmt.Sprintf("relative error %.2e", ref.RelL2(e.y, e.want))
	}
	return ""
}

func nanCount(y []float32) int {
	n := 0
	for _, v := range y {
		if math.IsNaN(float64(v)) {
			n++
		}
	}
	return n
}

// TestKernelsMatchReference runs the emitted kernels of random
// configurations (any stride, padding, output_padding, dilation, groups,
// bias, asymmetric sizes, both precisions, random tiles) on the CPU: every
// output written, fp32-level error against float64.
func TestKernelsMatchReference(t *testing.T) {
	n := 12
	if testing.Short() {
		n = 4
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, l := range small(t, n, 11) {
		t.Run(l.Spec().Name, func(t *testing.T) {
			t.Log(l.Plans[0].Target.Name, l.Plans[0])
			runCUDA(t, r, dir, l.Plans[0], l.Plans[0], l.Path).check(t, l.Plans[0])
		})
	}
}

// TestSM90WGMMAKernelsMatchReference runs random sm90 wgmma tiles
// (warpgroup products, bulk weight copies where drawn) as
// TestKernelsMatchReference runs every family's.
func TestSM90WGMMAKernelsMatchReference(t *testing.T) {
	n := 8
	if testing.Short() {
		n = 3
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	draws := smallWhere(t, n, 13, func(p *plan.Plan) bool { return p.Target.WGMMA && p.Tile.WGMMA != nil })
	if len(draws) < n {
		t.Fatalf("%d sm90 wgmma draws small enough to emulate, want %d", len(draws), n)
	}
	for _, l := range draws {
		t.Run(l.Spec().Name, func(t *testing.T) {
			t.Log(l.Plans[0])
			runCUDA(t, r, dir, l.Plans[0], l.Plans[0], l.Path).check(t, l.Plans[0])
		})
	}
}

// TestMutantsAreCaught plants each bug of gen/mutate in emulated kernels:
// every mutant must come out wrong (large error or unwritten outputs), so a
// kernel that passes TestKernelsMatchReference is not passing by accident.
func TestMutantsAreCaught(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tried := map[string]int{}
	perMutation := 2
	if testing.Short() {
		perMutation = 1
	}
	type config struct {
		p    *plan.Plan
		path string
	}
	var configs []config
	for _, l := range small(t, 10, 12) {
		configs = append(configs, config{l.Plans[0], l.Path})
	}
	// sm90's wgmma tiles (warpgroup products, bulk copies).
	for _, l := range smallWhere(t, 2, 13, func(p *plan.Plan) bool { return p.Target.WGMMA && p.Tile.WGMMA != nil }) {
		configs = append(configs, config{l.Plans[0], l.Path})
	}
	// A split_k tile (no random draw above splits), with bias and groups.
	split := geom.Conv{Batch: 2, InChannels: 6, OutChannels: 4, In: [3]int{3, 4, 5}, Kernel: [3]int{3, 2, 3}, Stride: [3]int{2, 1, 2},
		Padding: [3]int{1, 0, 1}, Dilation: [3]int{1, 1, 1}, Groups: 2, Bias: true}
	configs = append(configs, config{planConv(t, "split_mutants", split, spec.MMA{BM: 64, BN: 16, BK: 8, WM: 16, WN: 8, SplitK: 3}), "split_mutants.yaml"})
	for _, c := range configs {
		for _, m := range mutate.For(c.p) {
			if tried[m.Name] >= perMutation && !c.p.Target.WGMMA {
				continue
			}
			tried[m.Name]++
			t.Run(c.p.Spec.Name+"~"+m.Name, func(t *testing.T) {
				run := runCUDA(t, r, dir, m.On(c.p), c.p, c.path)
				how := run.caught()
				if how == "" {
					t.Fatalf("mutant %s of %s gives relative error %.2e with every output written once: not caught", m.Name, c.p, ref.RelL2(run.y, run.want))
				}
				t.Logf("caught: %s", how)
			})
		}
	}
	for _, m := range mutate.All() {
		if tried[m.Name] == 0 {
			t.Errorf("mutation %s applied to no configuration", m.Name)
		}
	}
}

// TestPresplitMatchesReference runs 3xtf32 configurations with their tiles
// staged presplit, in fragment order, over tiles with several warps along
// M and N and reduction steps of one and two k8 slices.
func TestPresplitMatchesReference(t *testing.T) {
	var kernels []spec.Family
	for _, tile := range []spec.MMA{
		{BM: 64, BN: 16, BK: 16, WM: 32, WN: 8},
		{BM: 128, BN: 32, BK: 16, WM: 32, WN: 16},
		{BM: 64, BN: 64, BK: 8, WM: 32, WN: 32},
		{BM: 256, BN: 8, BK: 8, WM: 64, WN: 8},
	} {
		tile.Presplit = true
		kernels = append(kernels, tile)
	}
	emulateKernels(t, 13, kernels, "split_tf32(v, hi, lo)")
}

// TestCpAsyncMatchesReference runs FFMA and mma.sync with their tiles copied
// by cp.async (the emulator copies at once; the kernel's ordering of waits
// and barriers is what the GPU run checks), with one and several steps per
// tap and loads that do not divide evenly among the threads.
func TestCpAsyncMatchesReference(t *testing.T) {
	kernels := []spec.Family{
		spec.FFMA{CpAsync: true},
		spec.FFMA{BM: 64, BN: 8, BK: 3, TM: 4, TN: 4, CpAsync: true},
		spec.MMA{CpAsync: true},
		spec.MMA{BM: 64, BN: 16, BK: 8, WM: 32, WN: 8, CpAsync: true},
	}
	emulateKernels(t, 14, kernels, "cp_async_f32(&a_tile[buf]")
}

// TestSplitKMatchesReference runs FFMA and mma.sync tiles whose phases'
// reduction steps are shared among blocks (split_k), with their tiles
// staged through registers, by cp.async and presplit, on random
// configurations that have steps enough for the split (tap-less phases
// and steps that do not divide evenly among the splits among them): each
// split's partial outputs written once, then each output once by the
// kernel that adds them.
func TestSplitKMatchesReference(t *testing.T) {
	kernels := []spec.Family{
		spec.FFMA{SplitK: 2},
		spec.FFMA{BM: 64, BN: 8, BK: 3, TM: 4, TN: 4, CpAsync: true, SplitK: 3},
		spec.MMA{SplitK: 4},
		spec.MMA{BM: 64, BN: 16, BK: 8, WM: 32, WN: 8, CpAsync: true, SplitK: 2},
		spec.MMA{BM: 64, BN: 16, BK: 16, WM: 32, WN: 8, Presplit: true, SplitK: 3},
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n, fewer := 0, 0
	for _, l := range small(t, 60, 15) {
		if n == 2*len(kernels) {
			break
		}
		s := *l.Spec()
		s.Kernel.CUDA = spec.CUDA{Family: kernels[n%len(kernels)]}
		p, err := plan.New(&s, plan.SM80)
		if err != nil {
			continue // too few steps for the split: refused (TestSplitKRefusals)
		}
		n++
		for _, ph := range p.Phases {
			if ph.Splits < p.Tile.SplitK() {
				fewer++
				break
			}
		}
		t.Run(s.Name, func(t *testing.T) {
			t.Log(p)
			runCUDA(t, r, dir, p, p, l.Path).check(t, p)
		})
	}
	if n < 2*len(kernels) {
		t.Fatalf("%d of %d configurations took the split", n, 2*len(kernels))
	}
	if fewer < 2 {
		t.Fatalf("%d configurations have a phase with fewer splits than the longest: the shares in proportion to taps went untested", fewer)
	}
}

// emulateKernels runs each kernel choice on two small random
// configurations (seeded), checking that the rendered source has marker
// (the feature under test is really there), that every output is written,
// and fp32-level error.
func emulateKernels(t *testing.T, seed int64, kernels []spec.Family, marker string) {
	t.Helper()
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	n := 0
	for _, l := range small(t, 40, seed) {
		if n == 2*len(kernels) {
			break
		}
		s := *l.Spec()
		k := kernels[n%len(kernels)]
		s.Kernel.CUDA = spec.CUDA{Family: k}
		p, err := plan.New(&s, plan.SM80)
		if err != nil {
			t.Fatalf("%s with %s: %v", s.Name, s.Kernel.CUDA, err)
		}
		n++
		t.Run(s.Name, func(t *testing.T) {
			t.Log(p)
			src, err := mutate.RenderCUDA(r, p, l.Path)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), marker) {
				t.Fatalf("the kernel has no %q", marker)
			}
			runCUDA(t, r, dir, p, p, l.Path).check(t, p)
		})
	}
}

// TestWGMMAKernelMatchesReference runs wgmma tiles (stride 1) of the sm80
// files on the CPU, whose fragments go through mma.sync: a reduction whose last step is
// partial, channels that are no multiple of 8 (padded in the re-laid input
// and the weight image), groups, padding and dilation (a border on one
// side, none on the other), several N tiles, one and two slabs, spans of
// one and several steps, a last block of rows past the end, re-layout
// rows in several chunks, strides, the input staged by cp.async, the
// running sums parked in shared memory, one sum a phase, warpgroups
// sharing a block's weight stages, and Winograd's pairs.
func TestWGMMAKernelMatchesReference(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, c := range []struct {
		conv geom.Conv
		tile spec.Family
	}{
		{geom.Conv{Batch: 2, InChannels: 16, OutChannels: 16, In: [3]int{3, 4, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{}},
		{geom.Conv{Batch: 1, InChannels: 6, OutChannels: 10, In: [3]int{3, 5, 4}, Kernel: [3]int{2, 3, 1}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{1, 0, 0}, Dilation: [3]int{1, 2, 1}, Groups: 2},
			spec.WGMMA{Slabs: 1, Span: 1}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 70, In: [3]int{2, 3, 4}, Kernel: [3]int{1, 2, 2}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{0, 1, 1}, Dilation: [3]int{1, 2, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Span: 2}},
		{geom.Conv{Batch: 2, InChannels: 12, OutChannels: 4, In: [3]int{4, 5, 6}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{2, 1, 2}, Dilation: [3]int{1, 1, 1}, Groups: 1},
			spec.WGMMA{Slabs: 1}},
		// A bordered row longer than the input re-layout's block: 304
		// positions (2 of border before the input's 300, 2 after) of 38
		// channels padded to 40 (41 floats a position staged), in chunks
		// of 102, 102 and 100; whole border rows along H.
		{geom.Conv{Batch: 1, InChannels: 38, OutChannels: 8, In: [3]int{1, 2, 300}, Kernel: [3]int{1, 2, 3}, Stride: [3]int{1, 1, 1},
			Dilation: [3]int{1, 1, 1}, Groups: 1},
			spec.WGMMA{Slabs: 1}},
		// Strides: #73's geometry (phases of 1, 2, 4 and 8 taps), #77's
		// (seven phases without taps: the bias), and uneven strides with
		// output padding, groups and an asymmetric dilated kernel.
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1}},
		{geom.Conv{Batch: 1, InChannels: 16, OutChannels: 12, In: [3]int{2, 2, 3}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{2, 2, 2}, Groups: 1, Bias: true},
			spec.WGMMA{}},
		{geom.Conv{Batch: 2, InChannels: 6, OutChannels: 10, In: [3]int{3, 2, 4}, Kernel: [3]int{2, 3, 1}, Stride: [3]int{3, 1, 2},
			Padding: [3]int{0, 2, 0}, OutputPadding: [3]int{1, 0, 1}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Slabs: 1, Span: 1}},
		// The kernel's W taps as columns: dilated along W with padding;
		// strided along D with groups and lines that wrap inside a block;
		// two column tiles of 10 channels by 7 taps, with tap-less phases.
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 24, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{0, 0, 1}, Dilation: [3]int{1, 1, 2}, Groups: 1, Bias: true},
			spec.WGMMA{KWInN: true}},
		{geom.Conv{Batch: 2, InChannels: 12, OutChannels: 10, In: [3]int{2, 2, 40}, Kernel: [3]int{3, 2, 4}, Stride: [3]int{2, 1, 1},
			Padding: [3]int{1, 0, 2}, OutputPadding: [3]int{1, 0, 0}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Slabs: 1, Span: 2, KWInN: true}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 20, In: [3]int{2, 2, 9}, Kernel: [3]int{3, 1, 7}, Stride: [3]int{2, 1, 1},
			Padding: [3]int{1, 0, 0}, Dilation: [3]int{2, 1, 1}, Groups: 1},
			spec.WGMMA{KWInN: true}},
		// The input staged by cp.async: a partial last step (zeros in its
		// slots), strides with tap-less phases and several phases of taps
		// each filling its own pipeline, two slabs; and with kw taps as
		// columns.
		{geom.Conv{Batch: 2, InChannels: 12, OutChannels: 4, In: [3]int{4, 5, 6}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{2, 1, 2}, Dilation: [3]int{1, 1, 1}, Groups: 1},
			spec.WGMMA{Slabs: 1, CpAsync: true}},
		{geom.Conv{Batch: 2, InChannels: 6, OutChannels: 10, In: [3]int{3, 2, 4}, Kernel: [3]int{2, 3, 1}, Stride: [3]int{3, 1, 2},
			Padding: [3]int{0, 2, 0}, OutputPadding: [3]int{1, 0, 1}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Span: 1, CpAsync: true}},
		{geom.Conv{Batch: 2, InChannels: 12, OutChannels: 10, In: [3]int{2, 2, 40}, Kernel: [3]int{3, 2, 4}, Stride: [3]int{2, 1, 1},
			Padding: [3]int{1, 0, 2}, OutputPadding: [3]int{1, 0, 0}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Span: 2, KWInN: true, CpAsync: true}},
		// W taps as columns at stride_w above 1, every W residue from one
		// GEMM per (d, h) phase: #73's geometry (outputs of one and two
		// kw), #77's (dilation 2: every other output the bias alone),
		// uneven strides with output padding, groups and a dilated W, and
		// a W reach of five rows (stride 2, kernel 4, dilation 3).
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1, KWInN: true}},
		{geom.Conv{Batch: 1, InChannels: 16, OutChannels: 12, In: [3]int{2, 2, 3}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{2, 2, 2}, Groups: 1, Bias: true},
			spec.WGMMA{KWInN: true}},
		{geom.Conv{Batch: 2, InChannels: 6, OutChannels: 10, In: [3]int{3, 2, 4}, Kernel: [3]int{2, 3, 3}, Stride: [3]int{3, 1, 3},
			Padding: [3]int{0, 2, 1}, OutputPadding: [3]int{1, 0, 2}, Dilation: [3]int{1, 2, 2}, Groups: 2, Bias: true},
			spec.WGMMA{Span: 1, KWInN: true}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 6, In: [3]int{1, 2, 9}, Kernel: [3]int{1, 2, 4}, Stride: [3]int{1, 1, 2},
			Padding: [3]int{0, 0, 2}, OutputPadding: [3]int{0, 0, 1}, Dilation: [3]int{1, 1, 3}, Groups: 1},
			spec.WGMMA{Slabs: 1, KWInN: true, CpAsync: true}},
		// The running sums parked in shared memory: 14 spans of one step
		// (the first replaces, the middle ones add, the last takes them
		// back) at two stages; #73's geometry, phases of one step (first
		// span and last) and of two, at three stages; with kw taps as
		// columns and the input staged. Then one tensor-core sum a phase
		// (span 16 over 14 steps: no running sums at all).
		{geom.Conv{Batch: 2, InChannels: 16, OutChannels: 16, In: [3]int{3, 4, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Span: 1, Stages: 2, ParkSums: true}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1, Span: 1, Stages: 3, ParkSums: true}},
		{geom.Conv{Batch: 2, InChannels: 12, OutChannels: 10, In: [3]int{2, 2, 40}, Kernel: [3]int{3, 2, 4}, Stride: [3]int{2, 1, 1},
			Padding: [3]int{1, 0, 2}, OutputPadding: [3]int{1, 0, 0}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Span: 1, KWInN: true, CpAsync: true, ParkSums: true}},
		{geom.Conv{Batch: 2, InChannels: 16, OutChannels: 16, In: [3]int{3, 4, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1, Span: 16, Stages: 2}},
		// Warpgroups sharing the weight stages: four of one slab, each
		// phase's rows split between them; two with the running sums
		// parked, the input staged and kw taps as columns; two on #73's
		// geometry (lines of 71 rows across the warpgroups' halves); two
		// of two slabs, strides with tap-less phases, the input staged.
		{geom.Conv{Batch: 2, InChannels: 16, OutChannels: 16, In: [3]int{3, 4, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1, Warpgroups: 4, Span: 2}},
		{geom.Conv{Batch: 2, InChannels: 12, OutChannels: 10, In: [3]int{2, 2, 40}, Kernel: [3]int{3, 2, 4}, Stride: [3]int{2, 1, 1},
			Padding: [3]int{1, 0, 2}, OutputPadding: [3]int{1, 0, 0}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Slabs: 1, Warpgroups: 2, Span: 1, KWInN: true, CpAsync: true, ParkSums: true}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 70}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1, Warpgroups: 2, Span: 16, Stages: 2, KWInN: true}},
		{geom.Conv{Batch: 2, InChannels: 6, OutChannels: 10, In: [3]int{3, 2, 4}, Kernel: [3]int{2, 3, 1}, Stride: [3]int{3, 1, 2},
			Padding: [3]int{0, 2, 0}, OutputPadding: [3]int{1, 0, 1}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Warpgroups: 2, Span: 1, CpAsync: true}},
		// Winograd's F(2,3) along W: #77's geometry (one phase of taps,
		// seven of the bias; an odd phase width, so the last pair's second
		// output is past the line) with parked sums and early inputs;
		// stride 1 with channels no multiple of 8, groups, spans of one
		// step (three spans a product) and a last block of rows past the
		// end; a re-layout row in several chunks of pairs, two
		// warpgroups; strides with output padding and a W border.
		{geom.Conv{Batch: 1, InChannels: 16, OutChannels: 12, In: [3]int{2, 2, 3}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{2, 2, 2}, Groups: 1, Bias: true},
			spec.WGMMA{Winograd: true, ParkSums: true, Span: 16, Stages: 2, EarlyInputs: true}},
		{geom.Conv{Batch: 2, InChannels: 10, OutChannels: 14, In: [3]int{3, 2, 7}, Kernel: [3]int{2, 2, 3}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{1, 0, 1}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Winograd: true, Span: 1}},
		{geom.Conv{Batch: 1, InChannels: 40, OutChannels: 8, In: [3]int{1, 2, 300}, Kernel: [3]int{1, 2, 3}, Stride: [3]int{1, 1, 1},
			Dilation: [3]int{1, 1, 1}, Groups: 1},
			spec.WGMMA{Winograd: true, Warpgroups: 2, ParkSums: true, Span: 2}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 1, 3}, Stride: [3]int{2, 1, 3},
			Padding: [3]int{1, 0, 4}, OutputPadding: [3]int{1, 0, 2}, Dilation: [3]int{1, 1, 3}, Groups: 1, Bias: true},
			spec.WGMMA{Winograd: true, ParkSums: true}},
		// F(2,5): kernel_w 5 at stride 1 with groups and channels no
		// multiple of 8, parked sums; at stride_w = dilation_w = 2 with
		// output padding and a W border; a re-layout row in chunks.
		{geom.Conv{Batch: 2, InChannels: 10, OutChannels: 14, In: [3]int{2, 2, 9}, Kernel: [3]int{2, 1, 5}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{1, 0, 2}, Dilation: [3]int{1, 1, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Winograd: true, ParkSums: true, Span: 2}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 2, 6}, Kernel: [3]int{1, 2, 5}, Stride: [3]int{2, 1, 2},
			Padding: [3]int{0, 0, 3}, OutputPadding: [3]int{1, 0, 1}, Dilation: [3]int{1, 1, 2}, Groups: 1, Bias: true},
			spec.WGMMA{Winograd: true, Span: 1}},
		{geom.Conv{Batch: 1, InChannels: 40, OutChannels: 8, In: [3]int{1, 1, 300}, Kernel: [3]int{1, 2, 5}, Stride: [3]int{1, 1, 1},
			Dilation: [3]int{1, 1, 1}, Groups: 1},
			spec.WGMMA{Winograd: true, Warpgroups: 2, Span: 4}},
		// A row tile's phases shared among blocks (tiny grids: the plan
		// shares most of the cases above too): #73's geometry in one block
		// as given, and in 3 runs of 2, 3 and 3 phases (steps 4, 4, 4)
		// with parked sums of one step; tap-less phases inside the runs
		// with the input staged (each phase its own pipeline); W taps as
		// columns on #73's geometry (a phase per (d, h) residue), a block
		// each; Winograd over 2 phases of taps.
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1, PhaseSplit: 1}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1, Span: 1, Stages: 2, ParkSums: true, PhaseSplit: 3}},
		{geom.Conv{Batch: 2, InChannels: 6, OutChannels: 10, In: [3]int{3, 2, 4}, Kernel: [3]int{2, 3, 1}, Stride: [3]int{3, 1, 2},
			Padding: [3]int{0, 2, 0}, OutputPadding: [3]int{1, 0, 1}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true},
			spec.WGMMA{Span: 1, CpAsync: true, PhaseSplit: 2}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.WGMMA{Slabs: 1, KWInN: true, PhaseSplit: 4}},
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 1, 3}, Stride: [3]int{2, 1, 3},
			Padding: [3]int{1, 0, 4}, OutputPadding: [3]int{1, 0, 2}, Dilation: [3]int{1, 1, 3}, Groups: 1, Bias: true},
			spec.WGMMA{Winograd: true, ParkSums: true, PhaseSplit: 2}},
		// No tap reaches any output (the only H residue with one, 2, is
		// past the output's 2 rows): every output the bias, an empty
		// weight image, a repack of one idle block.
		{geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{2, 2, 3}, Kernel: [3]int{1, 1, 2}, Stride: [3]int{1, 3, 1},
			Padding: [3]int{0, 1, 0}, Dilation: [3]int{1, 3, 1}, Groups: 2, Bias: true},
			spec.WGMMA{}},
	} {
		k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: c.tile}}
		s, err := spec.Parse("wgmma.yaml", []byte(spec.Generic(fmt.Sprintf("wgmma_%d", i), "wgmma tile", c.conv, "randn", k)))
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range []plan.Target{plan.SM80, plan.SM90} {
			p, err := plan.New(s, target)
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := c.tile.(spec.WGMMA); ok && w.PhaseSplit > 0 && p.WGMMA.Parts != w.PhaseSplit {
				t.Fatalf("%s: %d parts, want %d", p, p.WGMMA.Parts, w.PhaseSplit)
			}
			runCUDA(t, r, dir, p, p, "wgmma.yaml").check(t, p)
		}
	}
}

// TestDirectKernelStagesTapsInChunks runs direct kernels whose weights do
// not fit shared memory at once (64 input channels by 16 output channels
// is 4 KiB a tap: 12 taps a chunk), so a block stages its phase's taps in
// several chunks with barriers between; with the bias, groups, a phase
// whose tap count is not a multiple of the chunk, and a partial last block.
func TestDirectKernelStagesTapsInChunks(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, c := range []geom.Conv{
		{Batch: 1, InChannels: 64, OutChannels: 13, In: [3]int{3, 2, 3}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{1, 0, 0}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
		{Batch: 2, InChannels: 128, OutChannels: 6, In: [3]int{2, 3, 2}, Kernel: [3]int{3, 5, 2}, Stride: [3]int{1, 2, 1},
			Padding: [3]int{0, 1, 0}, Dilation: [3]int{1, 1, 2}, Groups: 2},
	} {
		k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: spec.Direct{BM: 64, BN: 16, BK: 5, TM: 2}}}
		s, err := spec.Parse("direct.yaml", []byte(spec.Generic(fmt.Sprintf("direct_%d", i), "direct, chunked taps", c, "randn", k)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.New(s, plan.SM80)
		if err != nil {
			t.Fatal(err)
		}
		if most := slices.MaxFunc(p.Phases, func(a, b plan.Phase) int { return a.TapCount - b.TapCount }); p.Tile.TapChunk >= most.TapCount {
			t.Fatalf("%s: %d taps a chunk, phases have at most %d: nothing to chunk", p, p.Tile.TapChunk, most.TapCount)
		}
		runCUDA(t, r, dir, p, p, "direct.yaml").check(t, p)
	}
}

// TestDirectNarrowChannels runs direct kernels of one and two output
// channels a block (their weights read as a float and a float2), in both
// forms: depthwise with a channel per group, two channels a group with a
// third group's channel tile past none, a W window of each width, and a
// block of two channels over three (the second tile half past the group).
func TestDirectNarrowChannels(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, c := range []struct {
		conv geom.Conv
		tile spec.Direct
	}{
		{geom.Conv{Batch: 2, InChannels: 6, OutChannels: 6, In: [3]int{3, 4, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 1, 2},
			Padding: [3]int{1, 1, 0}, OutputPadding: [3]int{1, 0, 1}, Dilation: [3]int{1, 2, 1}, Groups: 6, Bias: true},
			spec.Direct{BM: 128, BN: 1, TM: 4, BK: 1}},
		{geom.Conv{Batch: 1, InChannels: 9, OutChannels: 6, In: [3]int{2, 3, 6}, Kernel: [3]int{2, 3, 4}, Stride: [3]int{1, 2, 2},
			Padding: [3]int{0, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 3},
			spec.Direct{BM: 64, BN: 2, TM: 2, BK: 2}},
		{geom.Conv{Batch: 2, InChannels: 5, OutChannels: 1, In: [3]int{3, 3, 8}, Kernel: [3]int{4, 4, 4}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.Direct{BM: 32, BN: 1, TW: 8, BK: 2}},
		{geom.Conv{Batch: 1, InChannels: 4, OutChannels: 3, In: [3]int{2, 4, 7}, Kernel: [3]int{3, 2, 3}, Stride: [3]int{1, 2, 3},
			Padding: [3]int{1, 0, 2}, OutputPadding: [3]int{0, 1, 2}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.Direct{BM: 32, BN: 2, TW: 6, BK: 3}},
	} {
		k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: c.tile}}
		s, err := spec.Parse("narrow.yaml", []byte(spec.Generic(fmt.Sprintf("narrow_%d", i), "direct kernel, narrow channel tiles", c.conv, "randn", k)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.New(s, plan.SM80)
		if err != nil {
			t.Fatal(err)
		}
		if p.Tile.BN() != c.tile.BN {
			t.Fatalf("%s: bn %d, want %d", p, p.Tile.BN(), c.tile.BN)
		}
		runCUDA(t, r, dir, p, p, "narrow.yaml").check(t, p)
	}
}

// TestDirectWeightLayouts: a direct kernel stages a tiny weight straight
// from PyTorch's layout (no re-layout kernel in the file, none launched)
// and a larger one from the re-laid copy; both forms, both layouts, match
// float64 with every output written once.
func TestDirectWeightLayouts(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	small := geom.Conv{Batch: 2, InChannels: 6, OutChannels: 4, In: [3]int{3, 4, 6}, Kernel: [3]int{3, 2, 3}, Stride: [3]int{2, 1, 2},
		Padding: [3]int{1, 0, 1}, OutputPadding: [3]int{1, 0, 1}, Dilation: [3]int{1, 2, 1}, Groups: 2, Bias: true}
	large := geom.Conv{Batch: 1, InChannels: 48, OutChannels: 24, In: [3]int{2, 3, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
		Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true}
	if small.WeightLen() > plan.TinyWeight || large.WeightLen() <= plan.TinyWeight {
		t.Fatalf("weights of %d and %d elements do not straddle TinyWeight %d", small.WeightLen(), large.WeightLen(), plan.TinyWeight)
	}
	for i, c := range []struct {
		conv  geom.Conv
		tile  spec.Direct
		torch bool
	}{
		{small, spec.Direct{BM: 64, BN: 2, TM: 2, BK: 3}, true},
		{small, spec.Direct{BM: 32, BN: 2, TW: 4, BK: 1}, true},
		{large, spec.Direct{BM: 64, BN: 8, TM: 2, BK: 4}, false},
		{large, spec.Direct{BM: 32, BN: 4, TW: 4, BK: 2}, false},
	} {
		k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: c.tile}}
		s, err := spec.Parse("layouts.yaml", []byte(spec.Generic(fmt.Sprintf("layouts_%d", i), "direct kernel, weight layouts", c.conv, "randn", k)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.New(s, plan.SM90)
		if err != nil {
			t.Fatal(err)
		}
		if p.ReadsTorchWeight() != c.torch || (p.Names.Repack == "") != c.torch || (p.RepackLen() == 0) != c.torch {
			t.Fatalf("%s: reads PyTorch's layout %v, repack %q of %d elements; want %v", p, p.ReadsTorchWeight(), p.Names.Repack, p.RepackLen(), c.torch)
		}
		src, err := mutate.RenderCUDA(r, p, "layouts.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(string(src), "_repack_weight"); has == c.torch {
			t.Errorf("%s: a re-layout kernel in the file: %v, want %v", p, has, !c.torch)
		}
		runCUDA(t, r, dir, p, p, "layouts.yaml").check(t, p)
	}
}

// TestWindowKernelMatchesReference runs W-window direct kernels (tile.tw)
// on configurations picked for their edges: float4 window loads and
// stores (input width and tw/stride_w multiples of 4) with #72's stride,
// padding and groups; scalar loads and stores at odd widths, stride 3 and a
// last chunk past the row; stride and dilation sharing a factor (outputs
// no tap reaches, written with the bias); several channel tiles with a
// channel count bk does not divide; and weights staged in several chunks.
func TestWindowKernelMatchesReference(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, c := range []struct {
		conv          geom.Conv
		tile          spec.Family
		vector, store bool
	}{
		{geom.Conv{Batch: 2, InChannels: 8, OutChannels: 8, In: [3]int{3, 4, 8}, Kernel: [3]int{3, 5, 7}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 2, 3}, OutputPadding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 2, Bias: true},
			spec.Direct{BM: 32, TW: 8}, true, true},
		{geom.Conv{Batch: 1, InChannels: 3, OutChannels: 5, In: [3]int{2, 3, 7}, Kernel: [3]int{2, 3, 4}, Stride: [3]int{1, 2, 3},
			Padding: [3]int{0, 1, 2}, OutputPadding: [3]int{0, 1, 2}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
			spec.Direct{BM: 32, TW: 6, BK: 2}, false, false},
		{geom.Conv{Batch: 2, InChannels: 4, OutChannels: 6, In: [3]int{3, 3, 8}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{2, 2, 2}, Groups: 1, Bias: true},
			spec.Direct{BM: 32, TW: 8, BN: 4, BK: 3}, true, false},
		{geom.Conv{Batch: 1, InChannels: 160, OutChannels: 6, In: [3]int{2, 2, 6}, Kernel: [3]int{2, 2, 3}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{0, 0, 1}, Dilation: [3]int{1, 1, 2}, Groups: 2},
			spec.Direct{BM: 32, TW: 4, BN: 16, BK: 3}, false, true},
	} {
		k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: c.tile}}
		s, err := spec.Parse("window.yaml", []byte(spec.Generic(fmt.Sprintf("window_%d", i), "W-window direct kernel", c.conv, "randn", k)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.New(s, plan.SM80)
		if err != nil {
			t.Fatal(err)
		}
		if p.Window.Vector != c.vector || p.Epilogue.VectorStore != c.store {
			t.Fatalf("%s: window %+v, want float4 loads %v and stores %v", p, p.Window, c.vector, c.store)
		}
		if i == 3 && p.Tile.TapChunk >= 4 {
			t.Fatalf("%s: %d taps a chunk: nothing to chunk", p, p.Tile.TapChunk)
		}
		runCUDA(t, r, dir, p, p, "window.yaml").check(t, p)
		if i != 0 {
			continue
		}
		// #72 in small: every planted bug must come out wrong here too
		// (all but the dropped split: a direct tile has no split_k).
		ms := mutate.For(p)
		for _, m := range mutate.All() {
			if m.Name != "drop-last-split" && !m.Applies(p) {
				t.Fatalf("%s: mutation %s does not apply", p, m.Name)
			}
		}
		for _, m := range ms {
			if run := runCUDA(t, r, dir, m.On(p), p, "window.yaml"); run.caught() == "" {
				t.Errorf("mutant %s of %s gives relative error %.2e with every output written once: not caught", m.Name, p, ref.RelL2(run.y, run.want))
			}
		}
	}
}

// TestWGMMAStandInsCatchPlantedBugs: the sm90 stand-ins can fail. A
// descriptor with its core matrices' strides swapped reads the wrong
// weights, and a stage cleared between issuing a step's products and
// waiting for them is what those products read, as on the GPU (run at
// issue, they would not see it).
func TestWGMMAStandInsCatchPlantedBugs(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	c := geom.Conv{Batch: 2, InChannels: 16, OutChannels: 16, In: [3]int{3, 4, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
		Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true}
	k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: spec.WGMMA{}}}
	s, err := spec.Parse("planted_wgmma.yaml", []byte(spec.Generic("planted_wgmma", "planted wgmma", c, "randn", k)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(s, plan.SM90)
	if err != nil {
		t.Fatal(err)
	}
	src, err := mutate.RenderCUDA(r, p, "planted_wgmma.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kernel, err := verify.KernelSource(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	emulateSource(t, dir, kernel, p.Launch(""), p).check(t, p)
	for _, plant := range []struct{ name, old, new string }{
		{"strides swapped", "(unsigned long long)(kNCM * 128 >> 4) << 16\n        | (unsigned long long)(128 >> 4) << 32",
			"(unsigned long long)(kNCM * 128 >> 4) << 32\n        | (unsigned long long)(128 >> 4) << 16"},
		{"stage cleared before the wait", "wgmma_commit();",
			"wgmma_commit();\n            for (int i = tid; i < kStage; i += kThreads) b_stage[(gs % kStages) * kStage + i] = 0.0f;"},
	} {
		run := emulateSource(t, dir, replaceOnce(t, kernel, plant.old, plant.new), p.Launch(""), p)
		how := run.caught()
		if how == "" {
			t.Errorf("%s: relative error %.2e, not caught", plant.name, ref.RelL2(run.y, run.want))
			continue
		}
		t.Logf("%s: caught: %s", plant.name, how)
	}
}

// TestWGMMAFilesBuild: a committed spec's wgmma files of both targets
// build against the stand-ins, sm90's warpgroup products, bulk copies and
// barriers included (TestWGMMAKernelMatchesReference runs them).
func TestWGMMAFilesBuild(t *testing.T) {
	c := cxx(t)
	built := map[string]bool{}
	for _, k := range verify.Kernels {
		if k.Relayout == "" || built[k.Target] { // the wgmma tiles re-lay their input
			continue
		}
		src, err := os.ReadFile(filepath.Join("..", "..", k.File))
		if err != nil {
			t.Fatal(err)
		}
		kernel, err := verify.KernelSource(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := emulate.Build(context.Background(), c, t.TempDir(), kernel, k); err != nil {
			t.Errorf("%s: %v", k.File, err)
		}
		built[k.Target] = true
	}
	if !built[plan.SM80.Name] || !built[plan.SM90.Name] {
		t.Fatalf("wgmma kernels built for %v, want both targets", built)
	}
}

// TestOnePositionInputs runs the kernels of each family where the input
// has one position along some axes (a GAN's first layer, z of shape
// (N, C, 1, 1, 1), and an asymmetric case with output padding, dilation
// and groups), planned with the raised strides (geom.Conv.OnePositionStrides),
// against the float64 reference of the convolution as the spec gives it.
func TestOnePositionInputs(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	convs := []geom.Conv{
		// Depth padding crops the output: no tap fold (TestOnePositionTapFold), the strides rise.
		{Batch: 3, InChannels: 10, OutChannels: 12, In: [3]int{1, 1, 1}, Kernel: [3]int{4, 4, 4}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{1, 0, 0}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
		{Batch: 2, InChannels: 6, OutChannels: 8, In: [3]int{1, 3, 1}, Kernel: [3]int{3, 2, 4}, Stride: [3]int{2, 1, 1},
			Padding: [3]int{1, 0, 1}, OutputPadding: [3]int{1, 0, 1}, Dilation: [3]int{1, 1, 2}, Groups: 2},
	}
	families := []spec.Family{spec.FFMA{}, spec.Direct{}, spec.MMA{}, spec.WGMMA{}, spec.WGMMA{KWInN: true}}
	for i, c := range convs {
		for j, f := range families {
			k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: f}}
			s, err := spec.Parse("onepos.yaml", []byte(spec.Generic(fmt.Sprintf("onepos_%d_%d", i, j), "one input position", c, "randn", k)))
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan.New(s, plan.SM80)
			if err != nil {
				t.Fatal(err)
			}
			if p.Restrided == [3]bool{} || p.Conv == c {
				t.Fatalf("%s: no stride raised (%v)", p, p.Conv.Stride)
			}
			asked := *p
			asked.Conv = c // inputs and the reference from the convolution as asked
			runCUDA(t, r, dir, p, &asked, "onepos.yaml").check(t, p)
		}
		python := python3(t)
		for j, tr := range []spec.Triton{{Precision: "3xtf32", BlockM: 16, BlockN: 16, BlockK: 16, Warps: 4, Stages: 2},
			{Precision: "fp32", BlockM: 16, BlockN: 16, BlockK: 16, Warps: 4, Stages: 2, ChannelsLast: true, FuseW: true}} {
			k := spec.Kernel{Backends: []string{"triton"}, Triton: tr}
			s, err := spec.Parse("onepos.yaml", []byte(spec.Generic(fmt.Sprintf("onepos_%d_t%d", i, j), "one input position", c, "randn", k)))
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan.New(s, plan.SM90)
			if err != nil {
				t.Fatal(err)
			}
			in := gpu.MakeInputs(c, "randn", 7)
			y, err := runTriton(t, python, renderTriton(t, r, p), p.Conv, in)
			if err != nil || nanCount(y) > 0 {
				t.Fatalf("%s (triton %s): %v, %d outputs not written", p, tr, err, nanCount(y))
			}
			if e := ref.RelL2(y, ref.Forward(c, in.X, in.W, in.B)); e > 1e-5 {
				t.Fatalf("%s (triton %s): relative L2 error %.2e > 1e-5", p, tr, e)
			}
		}
	}
}

// TestOnePositionTapFold: where the input has one position along its
// leading axes and nothing crops the output, the CUDA kernel computes
// those axes' taps as output channels (plan.TapFold); folded to one tap,
// it reads the weight as PyTorch lays it out (no re-layout). Each family's folded
// kernel, run on the module's own input, weight and bias memory, matches the
// float64 reference of the convolution as asked, every output written once.
func TestOnePositionTapFold(t *testing.T) {
	biased := func(c geom.Conv) geom.Conv { c.Bias = true; return c }
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	all := geom.Conv{Batch: 3, InChannels: 5, OutChannels: 6, In: [3]int{1, 1, 1}, Kernel: [3]int{3, 2, 4}, Stride: [3]int{2, 1, 3},
		Dilation: [3]int{1, 1, 1}, Groups: 1}
	lead := geom.Conv{Batch: 2, InChannels: 4, OutChannels: 6, In: [3]int{1, 1, 5}, Kernel: [3]int{2, 3, 3}, Stride: [3]int{1, 2, 2},
		Padding: [3]int{0, 0, 1}, OutputPadding: [3]int{0, 0, 1}, Dilation: [3]int{1, 1, 2}, Groups: 2}
	for i, c := range []struct {
		conv geom.Conv
		tile spec.Family
		axes int
	}{
		{all, spec.FFMA{BM: 64, BN: 32, BK: 8, TM: 4, TN: 4}, 3},
		{all, spec.MMA{BM: 64, BN: 64, BK: 16, WM: 32, WN: 32}, 3},
		{all, spec.Direct{BM: 64, BN: 8, TM: 1, BK: 4}, 3},
		{lead, spec.MMA{BM: 64, BN: 64, BK: 16, WM: 32, WN: 32, Presplit: true}, 2},
		{lead, spec.Direct{BM: 32, BN: 4, TW: 4, BK: 2}, 2},
		// With a bias, each folded channel reads its module channel's.
		{biased(all), spec.FFMA{BM: 64, BN: 32, BK: 8, TM: 4, TN: 4}, 3},
		{biased(all), spec.MMA{BM: 64, BN: 64, BK: 16, WM: 32, WN: 32}, 3},
		{biased(all), spec.Direct{BM: 64, BN: 8, TM: 1, BK: 4}, 3},
		{biased(all), spec.WGMMA{MinBlocks: 1, Slabs: 1, Span: 4, Stages: 2}, 3},
		{biased(lead), spec.Direct{BM: 32, BN: 4, TW: 4, BK: 2}, 2},
		{biased(lead), spec.WGMMA{MinBlocks: 1, Slabs: 2, Span: 4, Stages: 2, KWInN: true}, 2},
	} {
		k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: c.tile}}
		s, err := spec.Parse("fold.yaml", []byte(spec.Generic(fmt.Sprintf("tapfold_%d", i), "one-position taps as channels", c.conv, "randn", k)))
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.New(s, plan.SM80)
		if err != nil {
			t.Fatal(err)
		}
		if p.TapFold != c.axes || c.axes == 3 && p.Tile.WGMMA == nil && p.Names.Repack != "" || p.Conv.WeightLen() != c.conv.WeightLen() {
			t.Fatalf("%s: folded %d axes, repack %q; want %d axes, no re-layout where one tap is left (but wgmma's image)", p, p.TapFold, p.Names.Repack, c.axes)
		}
		asked := &plan.Plan{Spec: s, Conv: c.conv}
		runCUDA(t, r, dir, p, asked, "fold.yaml").check(t, p)
	}
}
