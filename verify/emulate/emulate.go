// Package emulate runs an emitted CUDA kernel on the CPU: the kernel's own
// source, compiled by the host C++ compiler against CPU stand-ins for the
// CUDA features it uses (shim.h), launched with the plan's grid. It is for
// tiny configurations in CI, where there is no GPU: the indexing, phases,
// tiles, barriers and fragment layouts run exactly as written, so a wrong
// index shows up as a wrong output. It runs the files of both targets:
// mma.sync products, and sm90's warpgroup (wgmma) products, bulk copies
// and their barriers, with wgmma's asynchrony (its products read shared
// memory and write their sums when the group waits, not when issued) and
// its descriptors of shared memory as the PTX ISA defines them. RunTriton
// does the same for an emitted
// Triton kernel, in Python under stand-ins for torch and triton
// (triton_emu.py).
package emulate

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
)

//go:embed shim.h
var shim string

// ptxHelpers are the kernel's only inline-PTX functions, with the bodies
// that stand in for them (the TF32 split is plain C and runs as it is).
var ptxHelpers = []struct{ signature, body string }{
	{"__device__ __forceinline__ void mma_tf32(float* acc, const unsigned* a, const unsigned* b)",
		"{\n    emu_mma_m16n8k8(acc, a, b);\n}"},
	// cp.async copies at once: every read of a stage comes after the
	// kernel's wait and barrier, so an immediate copy is one valid order.
	{"__device__ __forceinline__ void cp_async_f32(float* dst, const float* src, bool valid)",
		"{\n    *dst = valid ? *src : 0.0f;\n}"},
	{"__device__ __forceinline__ void cp_async_wait_all()",
		"{\n}"},
	// The wgmma tile's copies and their groups.
	{"__device__ __forceinline__ void cp_async_16(float* dst, const float* src)",
		"{\n    std::memcpy(dst, src, 16);\n}"},
	{"__device__ __forceinline__ void cp_async_commit()", "{\n}"},
	// A prefetch into L2 changes no value.
	{"__device__ __forceinline__ void prefetch_l2(const float* p)", "{\n}"},
	{"__device__ __forceinline__ void cp_async_wait_current()", "{\n}"},
	// sm90's warpgroup products run when the group waits (shim.h); the
	// fences order what the fibers already run in order. A bulk copy lands
	// at once and its barrier has nothing left to wait for: as with
	// cp.async, every read of a stage comes after the kernel's wait.
	{"__device__ __forceinline__ void wgmma_tf32(float (&d)[kND], const unsigned* a, unsigned long long desc, int add)",
		"{\n    emu_wgmma_m64k8(d, 2 * kND, a, desc, add);\n}"},
	{"__device__ __forceinline__ void wgmma_wait(float (&d)[kND])", "{\n    emu_wgmma_wait();\n}"},
	{"__device__ __forceinline__ void wgmma_fence()", "{\n}"},
	{"__device__ __forceinline__ void wgmma_commit()", "{\n}"},
	{"__device__ __forceinline__ void async_proxy_fence()", "{\n}"},
	{"__device__ __forceinline__ void barrier_init(unsigned long long* bar)", "{\n}"},
	{"__device__ __forceinline__ void bulk_copy(float* dst, const float* src, int bytes, unsigned long long* bar)",
		"{\n    std::memcpy(dst, src, bytes);\n}"},
	{"__device__ __forceinline__ void barrier_wait(unsigned long long* bar, unsigned parity)", "{\n}"},
}

// dynamicStage is how a wgmma kernel declares shared memory past 48 KiB;
// on the host it is a static array of the launch's size.
const dynamicStage = "extern __shared__ __align__(128) float b_stage[];"

// stageDecl begins the wgmma kernel's shared memory, one array; on the
// host it is hostStageDecl, aligned to 256 KiB, so that a shared-memory
// address (the low 18 bits, as wgmma's descriptors hold it) is the offset
// into it.
const (
	stageDecl     = "__shared__ __align__(128) float b_stage["
	hostStageDecl = "__shared__ __align__(262144) float b_stage["
)

// hostSource replaces the inline-PTX helpers of a kernel source with their
// stand-ins, and a dynamic shared array with a static one of dynamicSmem
// bytes (the wgmma kernel's, aligned as stageDecl says); any other inline
// PTX is an error, as the CPU cannot run it.
func hostSource(kernel string, dynamicSmem int) (string, error) {
	if dynamicSmem > 0 {
		if !strings.Contains(kernel, dynamicStage) {
			return "", errors.New("emulate: the launch has dynamic shared memory the kernel does not declare as the emulator expects")
		}
		kernel = strings.Replace(kernel, dynamicStage, fmt.Sprintf("%s%d];", hostStageDecl, dynamicSmem/4), 1)
	}
	kernel = strings.Replace(kernel, stageDecl, hostStageDecl, 1)
	for _, h := range ptxHelpers {
		i := strings.Index(kernel, h.signature)
		if i < 0 {
			continue
		}
		// The body ends at the first line that is "}", or, written on
		// the signature's line, with that line.
		end := strings.Index(kernel[i:], "\n}\n") + 2
		if line := strings.Index(kernel[i:], "\n"); line >= 0 && strings.HasSuffix(kernel[i:i+line], "}") {
			end = line
		}
		if end < 2 {
			return "", fmt.Errorf("emulate: %s has no end", h.signature)
		}
		kernel = kernel[:i] + h.signature + "\n" + h.body + kernel[i+end:]
	}
	if strings.Contains(kernel, "asm(") || strings.Contains(kernel, "asm volatile(") {
		return "", errors.New("emulate: the kernel uses inline PTX the emulator does not stand in for")
	}
	return kernel, nil
}

// driver is the host program's main: read the tensors, run the repack
// kernel, the re-layout and the bias fill where the kernel has them, then
// every block of the main kernel (with split_k into a workspace of
// partial outputs, then the kernel that adds them), and write the output (NaN-poisoned
// beforehand, so an output no thread writes stays NaN). It follows the
// constants and launches that Build prints before it (the emu_ names).
// The fill and the main kernel have their stores to the output counted and
// checked (exit status 4): the fill writes every output once; the main
// kernel writes each at most once, and exactly once where no fill came
// first or some tap reaches the output (a fill gives the bias to the
// outputs no tap reaches, and the GEMM overwrites the others).
const driver = `
#include <cstdio>
#include <memory>
#include <numeric>
#include <vector>

static std::vector<float> load(const char* path, size_t n)
{
    std::vector<float> v(n);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(v.data(), sizeof(float), n, f) != n) { std::fprintf(stderr, "cannot read %s\n", path); std::exit(2); }
    std::fclose(f);
    return v;
}

// run_blocks runs kernel over every block of a grid (run_block_list).
template <class Kernel> void run_blocks(dim3_ grid, unsigned threads, uint64_t seed, Kernel kernel)
{
    std::vector<dim3_> blocks;
    gridDim = grid;
    for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
    for (unsigned bx = 0; bx < grid.x; ++bx) blocks.push_back({bx, by, bz});
    run_block_list(std::move(blocks), threads, seed, kernel);
}

#ifndef EMU_SPECTRAL
// count_writes starts counting the stores to y.
static void count_writes(float* y, size_t len)
{
    out_shadow.base = y;
    out_shadow.len = len;
    out_shadow.count.assign(len, 0);
}

// check_writes fails the run, naming the kernel and up to 8 outputs, where
// an output was not written once; with some_once, only the outputs a tap
// reaches must be, the others at most once.
static void check_writes(const char* kernel, bool some_once, uint64_t seed)
{
    // Past one output's length the buffer is split_k's workspace: copy
    // e / emu_y_len of the output, each element a partial output.
    const bool partial = out_shadow.len > emu_y_len;
    size_t bad = 0;
    for (size_t e = 0; e < out_shadow.len; ++e) {
        const size_t o = e % emu_y_len, split = e / emu_y_len;
        const size_t w = o % emu_out[2], h = o / emu_out[2] % emu_out[1], d = o / (emu_out[2] * emu_out[1]) % emu_out[0];
        const size_t c = o / ((size_t)emu_out[0] * emu_out[1] * emu_out[2]) % emu_cout, n = o / ((size_t)emu_cout * emu_out[0] * emu_out[1] * emu_out[2]);
        const bool once = !some_once || (emu_reach[0][d] == '1' && emu_reach[1][h] == '1' && emu_reach[2][w] == '1');
        const unsigned got = out_shadow.count[e];
        if (partial) {
            // Splits past its phase's copies write none of this output.
            const size_t phase = ((d % emu_stride[0]) * emu_residues[1] + h % emu_stride[1]) * emu_residues[2] + w % emu_stride[2];
            const unsigned want = split < emu_copies[phase] ? 1 : 0;
            if (got == want || ++bad > 8) continue;
            std::fprintf(stderr, "%s (seed %llu): split %zu's partial output %zu (n %zu, c %zu, d %zu, h %zu, w %zu) written %u times, want %s\n",
                kernel, (unsigned long long)seed, split, o, n, c, d, h, w, got, want ? "once" : "none (its phase has fewer splits)");
            continue;
        }
        if (got == 1 || (got == 0 && !once)) continue;
        if (++bad > 8) continue;
        std::fprintf(stderr, "%s (seed %llu): output %zu (n %zu, c %zu, d %zu, h %zu, w %zu) written %u times, want %s\n",
            kernel, (unsigned long long)seed, e, n, c, d, h, w, got, once ? "once" : "at most once");
    }
    if (bad > 0) {
        std::fprintf(stderr, "%s (seed %llu): %zu of %zu %s written other than once\n", kernel, (unsigned long long)seed, bad, out_shadow.len,
            partial ? "partial outputs" : "outputs");
        std::exit(4);
    }
    out_shadow = OutShadow{};
}

// run_conv runs the convolution as the host wrapper launches it: the
// repack, the re-layout and the fill where the kernel has them, then the
// main kernel, with the stores to y counted and checked; store are the
// tensors the fused ops in the store read (EMU_STORE_ARGS passes them).
static void run_conv(const float* x_in, const float* w_in, const float* b, const float* const* store, float* y_out, uint64_t seed)
{
    auto launch_seed = [&](uint64_t k) { return seed == 0 ? 0 : seed + k; };  // (splitmix64 decorrelates them)
    std::vector<float> wt(emu_repack_len, NAN), xr(emu_xr_len, NAN);
    // The weight re-layout's blocks, with barriers (the transpose stages
    // its tile in shared memory).
    if (emu_repack_len > 0) run_blocks({emu_repack_blocks, 1, 1}, emu_repack_threads, launch_seed(5), [&] { emu_repack(w_in, wt.data()); });
    const float* xin = x_in;
    OutFloat* out = reinterpret_cast<OutFloat*>(y_out);
    (void)b;
    (void)out;
    (void)store;
    EMU_RELAYOUT
    EMU_FILL
    // Without a re-layout (emu_repack_len 0) the main kernel reads the weight as it is.
    const float* wmain = emu_repack_len > 0 ? wt.data() : w_in;
    EMU_MAIN
}

#ifndef EMU_CHAIN
int main(int argc, char** argv)
{
    if (argc != 6) { std::fprintf(stderr, "usage: x w bias|- y seed\n"); return 2; }
    std::vector<float> x = load(argv[1], emu_x_len), w = load(argv[2], emu_w_len), bias;
    if (emu_bias_len > 0) bias = load(argv[3], emu_bias_len);
    const uint64_t seed = std::strtoull(argv[5], nullptr, 10);
    std::vector<float> y(emu_y_len, NAN);
    run_conv(x.data(), w.data(), bias.empty() ? nullptr : bias.data(), nullptr, y.data(), seed);
    FILE* f = std::fopen(argv[4], "wb");
    if (!f || std::fwrite(y.data(), sizeof(float), y.size(), f) != y.size()) { std::fprintf(stderr, "cannot write %s\n", argv[4]); return 2; }
    std::fclose(f);
    return 0;
}
#endif
#endif
`

// driverConstants are the numbers and names the driver runs on, printed
// before it: the tensors' lengths, the launches, the output's shape, per
// dimension which output positions some tap reaches ('1') or none, and
// with split_k how many copies of an output the main kernel writes, by
// its residues (splitCopies).
const driverConstants = `
static constexpr size_t emu_x_len = %d, emu_w_len = %d, emu_bias_len = %d, emu_y_len = %d, emu_repack_len = %d, emu_xr_len = %d;
static constexpr unsigned emu_repack_threads = %d, emu_repack_blocks = %d, emu_threads = %d, emu_cout = %d;
static constexpr dim3_ emu_grid = {%d, %d, %d};
static constexpr size_t emu_out[3] = {%d, %d, %d};
static const char* const emu_reach[3] = {%q, %q, %q};
static constexpr size_t emu_stride[3] = {%d, %d, %d}, emu_residues[3] = {%d, %d, %d};
static constexpr unsigned emu_copies[] = {%s};
static constexpr bool emu_has_fill = %t;
static const char* const emu_main_name = %q;
#define emu_repack %s
#define emu_main %s
#define EMU_RELAYOUT %s
#define EMU_FILL %s
#define EMU_STORE_ARGS %s
#define EMU_MAIN %s
`

// mainLaunch runs the main kernel into y, its stores counted: each
// output written once, or at most once where a fill came first.
const mainLaunch = `count_writes(y_out, emu_y_len); run_blocks(emu_grid, emu_threads, launch_seed(3), [&] { emu_main(xin, wmain, b, EMU_STORE_ARGS out); }); check_writes(emu_main_name, emu_has_fill, launch_seed(3));`

// splitLaunch runs a split_k main kernel into a workspace of its splits'
// partial outputs (its length), each element written once, then the kernel
// that adds them (its blocks, block size, name) into y, each output once.
const splitLaunch = `std::vector<float> part((size_t)%[1]d, NAN); count_writes(part.data(), part.size()); run_blocks(emu_grid, emu_threads, launch_seed(3), [&] { emu_main(xin, wmain, b, reinterpret_cast<OutFloat*>(part.data())); }); check_writes(emu_main_name, false, launch_seed(3)); count_writes(y_out, emu_y_len); run_blocks({%[2]d, 1, 1}, %[3]d, launch_seed(4), [&] { %[4]s(part.data(), b, out); }); check_writes(%[4]q, false, launch_seed(4));`

// relayoutLaunch runs the input re-layout of a kernel that has one (its
// blocks, block size, name), before the main kernel, which then reads the
// copy.
const relayoutLaunch = `run_blocks({%[1]d, 1, 1}, %[2]d, launch_seed(1), [&] { %[3]s(x_in, xr.data()); }); xin = xr.data();`

// fillLaunch runs the bias fill of a kernel that has one (its blocks,
// block size, name), after the re-layout and before the main kernel; it
// must write every output once.
const fillLaunch = `count_writes(y_out, emu_y_len); run_blocks({%[1]d, 1, 1}, %[2]d, launch_seed(2), [&] { %[3]s(b, EMU_STORE_ARGS out); }); check_writes(%[3]q, false, launch_seed(2));`

// reached lists, per dimension, whether some tap reaches output position
// o: (o + padding - k*dilation) is a multiple of the stride whose quotient
// is inside the input, for some kernel index k. An output has a tap when
// every dimension's position has one.
func reached(c geom.Conv, out [3]int) [3]string {
	var r [3]string
	for d := range 3 {
		b := make([]byte, out[d])
		for o := range b {
			b[o] = '0'
			for k := 0; k < c.Kernel[d]; k++ {
				t := o + c.Padding[d] - k*c.Dilation[d]
				if t >= 0 && t%c.Stride[d] == 0 && t/c.Stride[d] < c.In[d] {
					b[o] = '1'
				}
			}
		}
		r[d] = string(b)
	}
	return r
}

// splitCopies is, for a kernel that shares each stride phase's steps
// among up to splits blocks, how many copies of an output it writes, by
// the output's residues mod the stride (row-major over min(stride,
// output) residues per dimension, which it returns too): each phase's
// share in proportion to its taps, the longest phase's being splits, at
// least one. A phase's taps are the kernel positions k whose (r + padding
// - k*dilation) the stride divides, per dimension.
func splitCopies(c geom.Conv, out [3]int, splits int) ([3]int, []int) {
	var res [3]int
	var taps [3][]int
	for d := range 3 {
		res[d] = min(c.Stride[d], out[d])
		taps[d] = make([]int, res[d])
		for r := range res[d] {
			for k := range c.Kernel[d] {
				if (r+c.Padding[d]-k*c.Dilation[d])%c.Stride[d] == 0 {
					taps[d][r]++
				}
			}
		}
	}
	n := make([]int, 0, res[0]*res[1]*res[2])
	longest := 0
	for _, a := range taps[0] {
		for _, b := range taps[1] {
			for _, e := range taps[2] {
				n = append(n, a*b*e)
				longest = max(longest, a*b*e)
			}
		}
	}
	for i, t := range n {
		n[i] = 1
		if splits > 1 && t > 0 {
			n[i] = (splits*t + longest - 1) / longest
		}
	}
	return res, n
}

// Program is a kernel compiled for the host.
type Program struct {
	exe    string
	launch plan.Launch
	// Seed orders the blocks and threads of every launch (see shim.h; 0:
	// in index order). Build sets it from the source, so configurations
	// differ, or from EMULATE_SEED, which reproduces a failed run.
	Seed uint64
}

// SeedEnv names the environment variable that, when set, is the seed of
// every emulated run, CUDA and Triton.
const SeedEnv = "EMULATE_SEED"

// SeedFor is the order seed of a run of src: EMULATE_SEED's value when
// set, else a hash of src (never 0, the order of indices).
func SeedFor(src []byte) (uint64, error) {
	if v, ok := os.LookupEnv(SeedEnv); ok {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("emulate: %s=%q is no seed: %v", SeedEnv, v, err)
		}
		return seed, nil
	}
	sum := sha256.Sum256(src)
	return binary.LittleEndian.Uint64(sum[:8]) | 1, nil
}

// outParam and outDerived are where the kernel's output pointer y (and
// pointers into it) are declared: they become OutFloat*, whose stores the
// shim counts.
var (
	outParam   = "float* __restrict__ y)"
	outDerived = regexp.MustCompile(`float\* (\w+) = y \+`)
)

// countStores makes the output pointer of the kernel's launches (the main
// kernel's and a fill's) an OutFloat*; a kernel that passes it on as a
// plain float* does not compile, rather than store uncounted.
func countStores(kernel string) (string, error) {
	if !strings.Contains(kernel, outParam) {
		return "", fmt.Errorf("emulate: no output parameter %q in the kernel", outParam)
	}
	kernel = strings.ReplaceAll(kernel, outParam, "OutFloat* __restrict__ y)")
	return outDerived.ReplaceAllString(kernel, "OutFloat* $1 = y +"), nil
}

// Build compiles kernel (the KERNEL_SOURCE of an emitted cuda.<target>.py) with its
// launch record into a host program under dir; cxx is the C++20 compiler.
// A kernel whose store reads the model's tensors (fused ops of a level-2
// forward) runs with them in BuildChain.
func Build(ctx context.Context, cxx, dir, kernel string, l plan.Launch) (*Program, error) {
	if l.StoreExtras[0] > 0 {
		return nil, errors.New("emulate: the kernel's store reads the model's tensors (ops of a level-2 forward): BuildChain runs it")
	}
	src, err := convSource(kernel, l)
	if err != nil {
		return nil, err
	}
	exe, seed, err := compile(ctx, cxx, dir, src+driver)
	if err != nil {
		return nil, err
	}
	return &Program{exe: exe, launch: l, Seed: seed}, nil
}

// convSource is the host text of kernel with the stand-ins before it and
// the constants of its launches after it, for a driver to follow.
func convSource(kernel string, l plan.Launch) (string, error) {
	host, err := hostSource(kernel, l.DynamicSmem)
	if err != nil {
		return "", err
	}
	if host, err = countStores(host); err != nil {
		return "", err
	}
	c := l.Conv
	bias := 0
	if c.Bias {
		bias = c.OutChannels / max(1, l.BiasEvery) // the module's bias (folded channels share it)
	}
	relayout := ""
	if l.Relayout != "" {
		relayout = fmt.Sprintf(relayoutLaunch, l.RelayoutBlocks, plan.RelayoutBlockThreads, l.Relayout)
	}
	fill := ""
	if l.Fill != "" {
		fill = fmt.Sprintf(fillLaunch, l.FillBlocks, plan.FillBlockThreads, l.Fill)
	}
	store := ""
	for i, n := range l.StoreExtras {
		if n > 0 {
			store += fmt.Sprintf("store[%d], ", i)
		}
	}
	main := mainLaunch
	if l.AddSplits != "" {
		main = fmt.Sprintf(splitLaunch, l.WorkspaceLen, l.AddSplitsBlocks, plan.AddSplitsBlockThreads, l.AddSplits)
	}
	repack := l.Repack
	if repack == "" {
		repack = "(void)" // no re-layout: the driver's loop over it runs no block
	}
	reach := reached(c, l.Out)
	residues, copies := splitCopies(c, l.Out, max(1, l.WorkspaceLen/c.OutputLen()))
	table := make([]string, len(copies))
	for i, n := range copies {
		table[i] = strconv.Itoa(n)
	}
	consts := fmt.Sprintf(driverConstants,
		c.InputLen(), c.WeightLen(), bias, c.OutputLen(), l.RepackLen, l.RelaidLen,
		plan.RepackBlockThreads, max(1, l.RepackBlocks), l.Threads, c.OutChannels,
		l.Grid[0], l.Grid[1], l.Grid[2], l.Out[0], l.Out[1], l.Out[2], reach[0], reach[1], reach[2],
		c.Stride[0], c.Stride[1], c.Stride[2], residues[0], residues[1], residues[2], strings.Join(table, ", "),
		l.Fill != "", l.Function, repack, l.Function, relayout, fill, store, main)
	return shim + "\n" + host + consts, nil
}

// compile builds the host program of src under dir (once per source) and
// returns its path and the run's order seed.
func compile(ctx context.Context, cxx, dir, src string) (string, uint64, error) {
	sum := sha256.Sum256([]byte(src))
	seed, err := SeedFor(sum[:])
	if err != nil {
		return "", 0, err
	}
	base := filepath.Join(dir, hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(base); err == nil {
		return base, seed, nil // built before from the same source
	}
	// Built under a name of its own and renamed into place, so that a
	// parallel build of the same source never runs a half-written file.
	tmp, err := os.CreateTemp(dir, filepath.Base(base)+".*.tmp")
	if err != nil {
		return "", 0, err
	}
	tmp.Close()
	cpp := tmp.Name() + ".cpp"
	if err := os.WriteFile(cpp, []byte(src), 0o644); err != nil {
		return "", 0, err
	}
	cmd := exec.CommandContext(ctx, cxx, "-std=c++20", "-O1", "-pthread", "-w", "-o", tmp.Name(), cpp)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp.Name())
		return "", 0, fmt.Errorf("emulate: %s: %v\n%s", cxx, err, out)
	}
	if err := os.Rename(cpp, base+".cpp"); err != nil {
		return "", 0, err
	}
	if err := os.Rename(tmp.Name(), base); err != nil {
		return "", 0, err
	}
	return base, seed, nil
}

// Run executes the program on x, w and b (nil without bias) with its
// Seed's order and returns the output; outputs no thread wrote are NaN.
// An output written other than once (see driver), a store past the output
// or a deadlock at a barrier is an error naming the seed.
func (p *Program) Run(ctx context.Context, x, w, b []float32) ([]float32, error) {
	dir, err := os.MkdirTemp("", "emulate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	paths := map[string][]float32{"x": x, "w": w, "b": b}
	args := make([]string, 0, 5)
	for _, name := range []string{"x", "w", "b"} {
		if paths[name] == nil {
			args = append(args, "-")
			continue
		}
		path := filepath.Join(dir, name)
		if err := writeFloats(path, paths[name]); err != nil {
			return nil, err
		}
		args = append(args, path)
	}
	yPath := filepath.Join(dir, "y")
	cmd := exec.CommandContext(ctx, p.exe, append(args, yPath, strconv.FormatUint(p.Seed, 10))...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("emulate: %s (seed %d: %s=%d reproduces): %v\n%s", p.launch.Spec, p.Seed, SeedEnv, p.Seed, err, out)
	}
	return readFloats(yPath, p.launch.Conv.OutputLen())
}

func writeFloats(path string, v []float32) error {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func readFloats(path string, n int) ([]float32, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) != 4*n {
		return nil, fmt.Errorf("emulate: %s holds %d bytes, want %d", path, len(data), 4*n)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return v, nil
}
