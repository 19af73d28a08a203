// Package emulate runs an emitted CUDA kernel on the CPU: the kernel's own
// source, compiled by the host C++ compiler against CPU stand-ins for the
// CUDA features it uses (shim.h), launched with the plan's grid. It is for
// tiny configurations in CI, where there is no GPU: the indexing, phases,
// tiles, barriers and fragment layouts run exactly as written, so a wrong
// index shows up as a wrong output. RunTriton does the same for an emitted
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
	"strings"

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
	// The wgmma tile's: 16-byte copies, their groups, and Hopper's
	// warpgroup products, which only an sm_90a build calls (the CPU build
	// runs the same fragments through mma_tf32).
	{"__device__ __forceinline__ void cp_async_16(float* dst, const float* src)",
		"{\n    std::memcpy(dst, src, 16);\n}"},
	{"__device__ __forceinline__ void cp_async_commit()", "{\n}"},
	{"__device__ __forceinline__ void cp_async_wait_current()", "{\n}"},
	{"__device__ __forceinline__ void wgmma_tf32(float (&d)[kND], const unsigned* a, unsigned long long desc, int add)",
		"{\n    std::abort();\n}"},
	{"__device__ __forceinline__ void wgmma_wait(float (&d)[kND])", "{\n    std::abort();\n}"},
	{"__device__ __forceinline__ void wgmma_fence()", "{\n    std::abort();\n}"},
	{"__device__ __forceinline__ void async_proxy_fence()", "{\n}"},
	{"__device__ __forceinline__ void wgmma_commit()", "{\n    std::abort();\n}"},
	{"__device__ __forceinline__ unsigned long long wgmma_desc(const float* p)", "{\n    std::abort();\n}"},
	// The bulk weight copies and their barriers: sm_90a only, like wgmma.
	{"__device__ __forceinline__ void barrier_init(unsigned long long* bar)", "{\n    std::abort();\n}"},
	{"__device__ __forceinline__ void bulk_copy(float* dst, const float* src, int bytes, unsigned long long* bar)",
		"{\n    std::abort();\n}"},
	{"__device__ __forceinline__ void barrier_wait(unsigned long long* bar, unsigned parity)", "{\n    std::abort();\n}"},
}

// dynamicStage is how a wgmma kernel declares shared memory past 48 KiB;
// on the host it is a static array of the launch's size.
const dynamicStage = "extern __shared__ __align__(128) float b_stage[];"

// hostSource replaces the inline-PTX helpers of a kernel source with their
// stand-ins, and a dynamic shared array with a static one of
// dynamicSmem bytes; any other inline PTX is an error, as the CPU cannot
// run it.
func hostSource(kernel string, dynamicSmem int) (string, error) {
	if dynamicSmem > 0 {
		if !strings.Contains(kernel, dynamicStage) {
			return "", errors.New("emulate: the launch has dynamic shared memory the kernel does not declare as the emulator expects")
		}
		kernel = strings.Replace(kernel, dynamicStage, fmt.Sprintf("__shared__ __align__(128) float b_stage[%d];", dynamicSmem/4), 1)
	}
	for _, h := range ptxHelpers {
		i := strings.Index(kernel, h.signature)
		if i < 0 {
			continue
		}
		end := strings.Index(kernel[i:], "\n}\n")
		if end < 0 {
			return "", fmt.Errorf("emulate: %s has no end", h.signature)
		}
		kernel = kernel[:i] + h.signature + "\n" + h.body + kernel[i+end+2:]
	}
	if strings.Contains(kernel, "asm(") || strings.Contains(kernel, "asm volatile(") {
		return "", errors.New("emulate: the kernel uses inline PTX the emulator does not stand in for")
	}
	return kernel, nil
}

// driver is the host program's main: read the tensors, run the repack
// kernel, then every block of the main kernel, and write the output
// (NaN-poisoned beforehand, so an output no thread writes stays NaN).
const driver = `
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

static std::vector<float> load(const char* path, size_t n)
{
    std::vector<float> v(n);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(v.data(), sizeof(float), n, f) != n) { std::fprintf(stderr, "cannot read %%s\n", path); std::exit(2); }
    std::fclose(f);
    return v;
}

// run_blocks runs kernel over a grid, one host thread per CUDA thread of
// a block, reused for every block: the blocks run one after another, which
// is also what lets a kernel's __shared__ arrays be plain statics.
template <class Kernel> void run_blocks(dim3_ grid, unsigned threads, Kernel kernel)
{
    std::barrier<> block(threads), done(threads);
    std::vector<std::unique_ptr<WarpState>> warps;
    for (unsigned i = 0; i < (threads + 31) / 32; ++i) warps.push_back(std::make_unique<WarpState>());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            blockDim = {threads, 1, 1};
            block_barrier = &block;
            warp_state = warps[t / 32].get();
            for (unsigned bz = 0; bz < grid.z; ++bz)
            for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                blockIdx = {bx, by, bz};
                kernel();
                done.arrive_and_wait();  // the next block starts when this one has finished
            }
        });
    }
    for (auto& th : pool) th.join();
}

int main(int argc, char** argv)
{
    if (argc != 5) { std::fprintf(stderr, "usage: x w bias|- y\n"); return 2; }
    std::vector<float> x = load(argv[1], %[1]d), w = load(argv[2], %[2]d), bias;
    if (%[3]d > 0) bias = load(argv[3], %[3]d);
    std::vector<float> wt(%[13]d, NAN), y(%[4]d, NAN), xr(%[14]d, NAN);

    blockDim = {%[5]d, 1, 1};
    for (unsigned b = 0; b < %[6]d; ++b) {
        for (unsigned t = 0; t < %[5]d; ++t) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            %[7]s(w.data(), wt.data());
        }
    }
    const float* xin = x.data();
%[15]s
%[16]s
    run_blocks({%[8]d, %[9]d, %[10]d}, %[11]d, [&] { %[12]s(xin, wt.data(), bias.empty() ? nullptr : bias.data(), y.data()); });

    FILE* f = std::fopen(argv[4], "wb");
    if (!f || std::fwrite(y.data(), sizeof(float), y.size(), f) != y.size()) { std::fprintf(stderr, "cannot write %%s\n", argv[4]); return 2; }
    std::fclose(f);
    return 0;
}
`

// relayoutLaunch runs the input re-layout of a kernel that has one (its
// blocks, block size, name), before the main kernel, which then reads the
// copy.
const relayoutLaunch = `    run_blocks({%[1]d, 1, 1}, %[2]d, [&] { %[3]s(x.data(), xr.data()); });
    xin = xr.data();`

// fillLaunch runs the bias fill of a kernel that has one (its blocks,
// block size, name), after the re-layout and before the main kernel.
const fillLaunch = `    run_blocks({%[1]d, 1, 1}, %[2]d, [&] { %[3]s(bias.empty() ? nullptr : bias.data(), y.data()); });`

// Program is a kernel compiled for the host.
type Program struct {
	exe    string
	launch plan.Launch
}

// Build compiles kernel (the KERNEL_SOURCE of an emitted cuda.py) with its
// launch record into a host program under dir; cxx is the C++20 compiler.
func Build(ctx context.Context, cxx, dir, kernel string, l plan.Launch) (*Program, error) {
	host, err := hostSource(kernel, l.DynamicSmem)
	if err != nil {
		return nil, err
	}
	c := l.Conv
	bias := 0
	if c.Bias {
		bias = c.OutChannels
	}
	relayout := ""
	if l.Relayout != "" {
		relayout = fmt.Sprintf(relayoutLaunch, l.RelayoutBlocks, plan.RelayoutBlockThreads, l.Relayout)
	}
	fill := ""
	if l.Fill != "" {
		fill = fmt.Sprintf(fillLaunch, l.FillBlocks, plan.FillBlockThreads, l.Fill)
	}
	src := shim + "\n" + host + fmt.Sprintf(driver,
		c.InputLen(), c.WeightLen(), bias, c.OutputLen(),
		plan.RepackBlockThreads, plan.RepackBlocks(l.RepackLen), l.Repack,
		l.Grid[0], l.Grid[1], l.Grid[2], l.Threads, l.Function, l.RepackLen, l.RelaidLen, relayout, fill)
	sum := sha256.Sum256([]byte(src))
	base := filepath.Join(dir, hex.EncodeToString(sum[:8]))
	p := &Program{exe: base, launch: l}
	if _, err := os.Stat(base); err == nil {
		return p, nil // built before from the same source
	}
	if err := os.WriteFile(base+".cpp", []byte(src), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, cxx, "-std=c++20", "-O1", "-pthread", "-w", "-o", base, base+".cpp")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("emulate: %s: %v\n%s", cxx, err, out)
	}
	return p, nil
}

// Run executes the program on x, w and b (nil without bias) and returns
// the output; outputs no thread wrote are NaN.
func (p *Program) Run(ctx context.Context, x, w, b []float32) ([]float32, error) {
	dir, err := os.MkdirTemp("", "emulate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	paths := map[string][]float32{"x": x, "w": w, "b": b}
	args := make([]string, 0, 4)
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
	cmd := exec.CommandContext(ctx, p.exe, append(args, yPath)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("emulate: %s: %v\n%s", p.launch.Spec, err, out)
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
