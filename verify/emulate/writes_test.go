package emulate_test

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/mutate"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
	"convtgen/verify"
	"convtgen/verify/emulate"
)

// family names a CUDA kernel form, for picking one configuration of each.
func family(p *plan.Plan) string {
	switch {
	case p.Tile.WGMMA != nil:
		return "wgmma"
	case p.Tile.TW() > 0:
		return "window"
	case p.Tile.Direct != nil:
		return "direct"
	case p.Tile.MMA != nil:
		return "mma"
	}
	return "ffma"
}

// doubledPhase is a planted race: a second copy of the phase with the most
// tiles (and some tap), with the grid grown to run it, so that two blocks
// write each of its outputs, the same values. Only the write counts see it.
func doubledPhase(p *plan.Plan) *plan.Plan {
	c := *p
	j := slices.IndexFunc(p.Phases, func(ph plan.Phase) bool { return ph.Tiles == p.MaxTiles && ph.TapCount > 0 })
	c.Phases = append(slices.Clone(p.Phases), p.Phases[j])
	c.Grid[0] = len(c.Phases) * c.MaxTiles
	return &c
}

// TestWriteCountsCatchDoubleAndMissingStores plants, in a configuration of
// every CUDA kernel form, outputs written twice (a phase run by two sets
// of blocks; in a wgmma kernel, whose blocks run every phase, each store
// done twice) and outputs never written (gen/mutate's dropped last tile,
// in a wgmma kernel with a bias fill too, whose outputs the fill wrote):
// each must fail the write-count check by name, not by its values.
func TestWriteCountsCatchDoubleAndMissingStores(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	drop, _ := mutate.Lookup("drop-last-tile")
	seen := map[string]bool{}
	var cases []gen.Loaded
	for _, l := range small(t, 40, 15) {
		if f := family(l.Plans[0]); !seen[f] && f != "wgmma" && drop.Applies(l.Plans[0]) {
			seen[f] = true
			cases = append(cases, l)
		}
	}
	if len(cases) != 4 {
		t.Fatalf("forms drawn: %v, want ffma, mma, direct and window", seen)
	}
	for _, l := range cases {
		t.Run(family(l.Plans[0]), func(t *testing.T) {
			wantErr(t, runCUDA(t, r, dir, doubledPhase(l.Plans[0]), l.Plans[0], l.Path), "written 2 times, want once")
			wantErr(t, runCUDA(t, r, dir, drop.On(l.Plans[0]), l.Plans[0], l.Path), "written 0 times, want once")
		})
	}
	// split_k: the dropped split's partial outputs, which the sum of the
	// splits reads, are never written (the last group's, of two).
	dropSplit, _ := mutate.Lookup("drop-last-split")
	sc := geom.Conv{Batch: 1, InChannels: 6, OutChannels: 4, In: [3]int{3, 4, 5}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
		Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 2, Bias: true}
	sp := planConv(t, "split_writes", sc, spec.FFMA{BM: 64, BN: 16, BK: 1, TM: 8, TN: 4, SplitK: 2})
	t.Run("split_k", func(t *testing.T) {
		if !dropSplit.Applies(sp) {
			t.Fatalf("%s: no split to drop", sp)
		}
		runCUDA(t, r, dir, sp, sp, "split_writes.yaml").check(t, sp)
		wantErr(t, runCUDA(t, r, dir, dropSplit.On(sp), sp, "split_writes.yaml"), "split 1's partial output")
	})
	// wgmma: #77's geometry (tap-less phases: a bias fill first), and one
	// without a fill.
	for _, c := range []geom.Conv{
		{Batch: 1, InChannels: 16, OutChannels: 12, In: [3]int{2, 6, 6}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
			Padding: [3]int{1, 1, 1}, Dilation: [3]int{2, 2, 2}, Groups: 1, Bias: true},
		{Batch: 2, InChannels: 12, OutChannels: 4, In: [3]int{4, 5, 6}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{2, 1, 2}, Dilation: [3]int{1, 1, 1}, Groups: 1},
	} {
		p := planConv(t, "wgmma_writes", c, spec.WGMMA{Slabs: 1})
		t.Run(fmt.Sprintf("wgmma fill %v", p.WGMMA.Fill), func(t *testing.T) {
			if !drop.Applies(p) {
				t.Fatalf("%s: %d tiles, nothing to drop", p, p.WGMMA.Tiles)
			}
			runCUDA(t, r, dir, p, p, "wgmma_writes.yaml").check(t, p)
			wantErr(t, runCUDA(t, r, dir, drop.On(p), p, "wgmma_writes.yaml"), "written 0 times, want once")
			src, err := mutate.RenderCUDA(r, p, "wgmma_writes.yaml")
			if err != nil {
				t.Fatal(err)
			}
			kernel, err := verify.KernelSource(src)
			if err != nil {
				t.Fatal(err)
			}
			store := regexp.MustCompile(`(y\[yb\[sl\]\[r\] \+ \(idx_t\)co \* kOutDHW\] = [^;]*;)`)
			if !store.MatchString(kernel) {
				t.Fatal("no output store to double")
			}
			wantErr(t, emulateSource(t, dir, store.ReplaceAllString(kernel, "{ $1 $1 }"), p.Launch(""), p), "written 2 times, want once")
		})
	}
}

// planConv plans c for sm80 with the CUDA kernel family f, as the spec
// NAME.yaml (randn inputs); nil f leaves the choice to the chooser.
func planConv(t *testing.T, name string, c geom.Conv, f spec.Family) *plan.Plan {
	t.Helper()
	k := spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: f}}
	s, err := spec.Parse(name+".yaml", []byte(spec.Generic(name, name, c, "randn", k)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(s, plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func wantErr(t *testing.T, run emulated, want string) {
	t.Helper()
	if run.err == nil || !strings.Contains(run.err.Error(), want) {
		t.Fatalf("error %v, want one saying %q", run.err, want)
	}
	t.Logf("caught: %s", run.caught())
}

// orderLaunch is the launch record of a hand-written kernel over n
// outputs (a 1 by 1 by n convolution's), grid blocks of threads.
func orderLaunch(name string, n, grid, threads int) plan.Launch {
	c := geom.Conv{Batch: 1, InChannels: 1, OutChannels: 1, In: [3]int{1, 1, n}, Kernel: [3]int{1, 1, 1},
		Stride: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1}
	return plan.Launch{Spec: name, Function: name, Repack: "order_repack", RepackLen: 1, RepackBlocks: 1,
		Grid: [3]int{grid, 1, 1}, Threads: threads, Conv: c, Out: c.Out()}
}

// orderKernels: each output written once, right only in some orders: a
// block reading an output of the block before it; a thread reading a
// shared value its neighbour writes, with no barrier between (and, as a
// control, with one); a barrier only some threads reach.
const orderKernels = `
extern "C" __global__ void order_repack(const float* __restrict__ w, float* __restrict__ wt) {}
extern "C" __global__ void order_blocks(const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias, float* __restrict__ y)
{
    const int i = blockIdx.x * 32 + threadIdx.x;
    y[i] = blockIdx.x == 0 ? (float)i : y[i - 32] + 32.0f;
}
extern "C" __global__ void order_threads(const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias, float* __restrict__ y)
{
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    SYNC
    y[threadIdx.x] = threadIdx.x == 0 ? 0.0f : s[threadIdx.x - 1] + 1.0f;
}
extern "C" __global__ void order_deadlock(const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias, float* __restrict__ y)
{
    if (threadIdx.x < 16) __syncthreads();
    y[threadIdx.x] = 0.0f;
}
`

// TestOrderDependenceIsCaught runs kernels whose result depends on the
// order of blocks, or of threads between barriers, in index order (seed 0:
// right) and shuffled (wrong, for every seed tried), and checks that a
// seed reproduces its run, that EMULATE_SEED sets it, and that a barrier
// some threads never reach is an error.
func TestOrderDependenceIsCaught(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	run := func(src string, l plan.Launch, seed uint64) ([]float32, error) {
		t.Helper()
		prog, err := emulate.Build(ctx, cxx(t), dir, src, l)
		if err != nil {
			t.Fatal(err)
		}
		prog.Seed = seed
		return prog.Run(ctx, make([]float32, l.Conv.InputLen()), make([]float32, 1), nil)
	}
	inOrder := func(y []float32) bool {
		for i, v := range y {
			if v != float32(i) {
				return false
			}
		}
		return true
	}
	racy := strings.Replace(orderKernels, "SYNC", "", 1)
	for _, c := range []struct {
		src    string
		launch plan.Launch
		racy   bool
	}{
		{racy, orderLaunch("order_blocks", 256, 8, 32), true},
		{racy, orderLaunch("order_threads", 64, 1, 64), true},
		{strings.Replace(orderKernels, "SYNC", "__syncthreads();", 1), orderLaunch("order_threads", 64, 1, 64), false},
	} {
		y, err := run(c.src, c.launch, 0)
		if err != nil || !inOrder(y) {
			t.Fatalf("%s in index order: %v, %v", c.launch.Function, err, y)
		}
		for seed := uint64(1); seed <= 3; seed++ {
			y, err := run(c.src, c.launch, seed)
			if err != nil {
				t.Fatalf("%s, seed %d: %v", c.launch.Function, seed, err)
			}
			if inOrder(y) == c.racy {
				t.Errorf("%s (racy %v), seed %d: right %v", c.launch.Function, c.racy, seed, !c.racy)
			}
			again, _ := run(c.src, c.launch, seed)
			if !slices.EqualFunc(y, again, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
				t.Errorf("%s, seed %d: two runs differ", c.launch.Function, seed)
			}
		}
	}
	t.Setenv(emulate.SeedEnv, "12345")
	prog, err := emulate.Build(ctx, cxx(t), dir, racy, orderLaunch("order_deadlock", 32, 1, 32))
	if err != nil {
		t.Fatal(err)
	}
	if prog.Seed != 12345 {
		t.Errorf("seed %d under %s=12345", prog.Seed, emulate.SeedEnv)
	}
	_, err = prog.Run(ctx, make([]float32, 32), make([]float32, 1), nil)
	if err == nil || !strings.Contains(err.Error(), "deadlock") || !strings.Contains(err.Error(), emulate.SeedEnv+"=12345") {
		t.Errorf("a barrier half the threads reach: %v", err)
	}
}
