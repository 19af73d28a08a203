package verify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// Real nvcc 11.8 output (nvcc -cubin -arch=sm_80 -O3 -Xptxas -v) for an
// emitted kernel, front-end warnings included.
const ptxas118 = `kernel.cu(4): warning #177-D: variable "kBatch" was declared but never referenced

ptxas info    : 0 bytes gmem, 2000 bytes cmem[3]
ptxas info    : Compiling entry function 'l1_72_strided_padded_grouped_igemm' for 'sm_80'
ptxas info    : Function properties for l1_72_strided_padded_grouped_igemm
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, 33280 bytes smem, 384 bytes cmem[0], 8 bytes cmem[2]
ptxas info    : Compiling entry function 'l1_72_strided_padded_grouped_repack_weight' for 'sm_80'
ptxas info    : Function properties for l1_72_strided_padded_grouped_repack_weight
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 14 registers, 368 bytes cmem[0]
`

// CUDA 12.x / 13.x style: barriers and cumulative stack on the "Used" line,
// a compile-time line, a spilling kernel with its warning, and a device
// function reported on its own.
const ptxas13 = `ptxas info    : 4 bytes gmem, 480 bytes cmem[4]
ptxas info    : Function properties for helper_dev
    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function 'foo' for 'sm_90'
ptxas info    : Function properties for foo
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 33792 bytes smem, 360 bytes cmem[0], 480 bytes cmem[3]
ptxas info    : Compile time = 12.345 ms
ptxas warning : Registers are spilled to local memory in function 'bar', 40 bytes spill stores, 40 bytes spill loads
ptxas info    : Compiling entry function 'bar' for 'sm_90'
ptxas info    : Function properties for bar
    48 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 48 bytes cumulative stack size, 352 bytes cmem[0]
ptxas info    : Compile time = 3.210 ms
`

func TestParsePtxas118(t *testing.T) {
	got, err := ParsePtxas(ptxas118)
	if err != nil {
		t.Fatal(err)
	}
	want := []PtxasInfo{
		{Function: "l1_72_strided_padded_grouped_igemm", Arch: "sm_80", Entry: true, Registers: 128, Smem: 33280,
			Cmem: map[int]int{0: 384, 2: 8}, ModuleCmem: map[int]int{3: 2000}},
		{Function: "l1_72_strided_padded_grouped_repack_weight", Arch: "sm_80", Entry: true, Registers: 14,
			Cmem: map[int]int{0: 368}, ModuleCmem: map[int]int{3: 2000}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParsePtxas13(t *testing.T) {
	got, err := ParsePtxas(ptxas13)
	if err != nil {
		t.Fatal(err)
	}
	want := []PtxasInfo{
		{Function: "helper_dev", StackFrame: 16, SpillStores: 8, SpillLoads: 8},
		{Function: "foo", Arch: "sm_90", Entry: true, Registers: 128, Barriers: 1, Smem: 33792,
			Cmem: map[int]int{0: 360, 3: 480}, ModuleGmem: 4, ModuleCmem: map[int]int{4: 480}},
		{Function: "bar", Arch: "sm_90", Entry: true, Registers: 255, StackFrame: 48, SpillStores: 40, SpillLoads: 40,
			CumulativeStack: 48, Cmem: map[int]int{0: 352}, ModuleGmem: 4, ModuleCmem: map[int]int{4: 480}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if got[1].Spills() || !got[2].Spills() {
		t.Error("Spills() wrong")
	}
}

// ptxas's note that it runs a function's wgmma products one at a time
// (CUDA 12.x / 13.x, sm_90a) is kept with the reason it gives.
func TestParsePtxasWGMMASerialized(t *testing.T) {
	out := `ptxas info    : Compiling entry function 'k_igemm' for 'sm_90a'
ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function 'k_igemm'
ptxas info    : Function properties for k_igemm
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 166 registers, used 1 barriers, 352 bytes cmem[0]
`
	got, err := ParsePtxas(out)
	if err != nil {
		t.Fatal(err)
	}
	want := "non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage"
	if len(got) != 1 || got[0].Function != "k_igemm" || got[0].Registers != 166 || got[0].WGMMASerialized != want {
		t.Errorf("got %+v, want k_igemm serialized due to %q", got, want)
	}
	if got, _ := ParsePtxas(ptxas13); got[1].WGMMASerialized != "" {
		t.Errorf("foo: serialized %q, want none", got[1].WGMMASerialized)
	}
}

func TestParsePtxasErrors(t *testing.T) {
	for _, out := range []string{
		"",
		"kernel.cu(1): error: identifier \"x\" is undefined\n",
		"ptxas info    : Used 12 registers\n",
		"ptxas fatal   : Unresolved extern function 'f'\n",
	} {
		if _, err := ParsePtxas(out); err == nil {
			t.Errorf("ParsePtxas(%q) gave no error", out)
		}
	}
}

func TestKernelSource(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "static", "valid", "cuda.py"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := KernelSource(src)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k, "\n// ---- Problem") || !strings.HasSuffix(k, "}\n") || strings.Contains(k, "torch") || strings.Contains(k, `"""`) {
		t.Errorf("KernelSource: unexpected text:\n%.200s\n...\n%s", k, k[max(0, len(k)-200):])
	}
	for _, bad := range []string{
		"X = 1\n",
		"KERNEL_SOURCE = \"\"\"\\n\"\"\"\n", // not raw
		"KERNEL_SOURCE = r\"\"\"a\"\"\"\nKERNEL_SOURCE = r\"\"\"b\"\"\"\n",
		"KERNEL_SOURCE = r\"\"\"never closed\n",
	} {
		if _, err := KernelSource([]byte(bad)); err == nil {
			t.Errorf("KernelSource(%q) gave no error", bad)
		}
	}
}

// nvccOrSkip finds nvcc, or skips the test.
func nvccOrSkip(t *testing.T) string {
	t.Helper()
	nvcc, err := exec.LookPath("nvcc")
	if err != nil {
		t.Skip("nvcc not on PATH: the compile tier runs where the CUDA toolkit is installed")
	}
	return nvcc
}

func TestCompileKernelFails(t *testing.T) {
	nvcc := nvccOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, _, err := CompileKernel(ctx, nvcc, `extern "C" __global__ void k(float* y) { y[0] = undefined_name; }`, "sm_80", ""); err == nil {
		t.Error("a compile error was not reported")
	}
	// 32 registers at most (1024 threads, 2 blocks per SM) for ~96 live
	// values: ptxas must spill, and CompileKernel must say so.
	spill := `extern "C" __global__ void __launch_bounds__(1024, 2) spill(const float* __restrict__ x, float* __restrict__ y)
{
    float a[96];
    #pragma unroll
    for (int i = 0; i < 96; ++i) a[i] = x[threadIdx.x + i * 1024];
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
        #pragma unroll
        for (int i = 0; i < 96; ++i) a[i] = fmaf(a[i], a[(i + 7) % 96], x[k]);
    }
    float s = 0.0f;
    #pragma unroll
    for (int i = 0; i < 96; ++i) s += a[i] * (float)(i + 1);
    y[threadIdx.x] = s;
}
`
	out := filepath.Join(t.TempDir(), "spill.cubin")
	info, _, err := CompileKernel(ctx, nvcc, spill, "sm_80", out)
	if err == nil || !strings.Contains(err.Error(), "spill") {
		t.Errorf("spilling kernel: err = %v, info = %v", err, info)
	}
	if len(info) != 1 || !info[0].Spills() {
		t.Errorf("spilling kernel: info = %v", info)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("cubin not written: %v", err)
	}
}

// zooCompileSample is how many of the zoo's kernels (out/zoo_*)
// TestEmittedKernelsCompile builds: each takes nvcc seconds for two
// architectures, and the zoo's count would multiply the package's time.
// The sample is seeded, so a run is repeatable; CONVTGEN_COMPILE_ALL=1
// builds every one.
const (
	zooCompileSample = 8
	zooCompileSeed   = 27
)

// compileSample keeps every emitted file outside the zoo and a seeded
// sample of n of the zoo's (all of them where all is set or there are no
// more than n), in the order given.
func compileSample(files []string, n int, seed uint64, all bool) []string {
	var zoo []string
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(filepath.Dir(f)), "zoo_") {
			zoo = append(zoo, f)
		}
	}
	if all || len(zoo) <= n {
		return files
	}
	zoo = slices.Sorted(slices.Values(zoo))
	rand.New(rand.NewPCG(seed, 0)).Shuffle(len(zoo), func(i, j int) { zoo[i], zoo[j] = zoo[j], zoo[i] })
	keep := map[string]bool{}
	for _, f := range zoo[:n] {
		keep[f] = true
	}
	var out []string
	for _, f := range files {
		if !strings.HasPrefix(filepath.Base(filepath.Dir(f)), "zoo_") || keep[f] {
			out = append(out, f)
		}
	}
	return out
}

func TestCompileSample(t *testing.T) {
	files := []string{"../out/l1_58/cuda.sm80.py", "../out/zoo_a/cuda.sm80.py", "../out/zoo_b/cuda.sm90.py",
		"../out/regress_x/cuda.sm80.py", "../out/zoo_c/cuda.sm90.py", "../out/zoo_d/cuda.sm80.py"}
	got := compileSample(files, 2, 1, false)
	var zoo int
	for _, f := range got {
		if strings.Contains(f, "/zoo_") {
			zoo++
		}
	}
	if zoo != 2 || len(got) != 4 || got[0] != files[0] || !slices.Contains(got, files[3]) {
		t.Errorf("compileSample kept %v: want l1_58, regress_x and 2 of the zoo's 4", got)
	}
	reversed := slices.Clone(files)
	slices.Reverse(reversed)
	again := compileSample(reversed, 2, 1, false)
	slices.Reverse(again)
	if !slices.Equal(got, again) {
		t.Errorf("the sample depends on the listing's order: %v, then %v", got, again)
	}
	seen := map[string]bool{}
	for seed := range uint64(20) {
		for _, f := range compileSample(files, 2, seed, false) {
			seen[f] = true
		}
	}
	if len(seen) != len(files) {
		t.Errorf("20 seeds sampled only %d of the %d files", len(seen), len(files))
	}
	if all := compileSample(files, 2, 1, true); !slices.Equal(all, files) {
		t.Errorf("with all set, kept %v", all)
	}
}

// TestEmittedKernelsCompile builds every emitted kernel alone for its
// file's target, as the verifier does (sm80: the sm_80 cubin and the
// compute_80 PTX; sm90: the sm_90a cubin, where nvcc has it): no compile
// error, no spill, and the shared memory ptxas reports is the plan's.
// Every kernel but the zoo's, and a seeded sample of the zoo's
// (compileSample).
func TestEmittedKernelsCompile(t *testing.T) {
	nvcc := nvccOrSkip(t)
	files := compileSample(emittedFiles(t, "cuda"), zooCompileSample, zooCompileSeed, os.Getenv("CONVTGEN_COMPILE_ALL") == "1")
	registry := map[string]Kernel{}
	for _, k := range Kernels {
		registry[k.File] = k
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		source, err := KernelSource(src)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		rel, _ := filepath.Rel("..", path)
		rel = filepath.ToSlash(rel)
		k, registered := registry[rel]
		_, tg, ok := SubmissionOf(path)
		if !ok {
			t.Fatalf("%s names no target", path)
		}
		t.Run(strings.TrimSuffix(strings.TrimPrefix(rel, gen.OutDir+"/"), ".py")+"/ptx", func(t *testing.T) {
			t.Parallel()
			if tg.Exact() {
				t.Skipf("%s embeds no PTX", tg.Name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := CompilePTX(ctx, nvcc, source, fmt.Sprintf("compute_%d%d", tg.Major, tg.Minor), filepath.Join(t.TempDir(), "k.ptx")); err != nil {
				t.Fatal(err)
			}
		})
		for _, arch := range []string{tg.Arch} {
			t.Run(strings.TrimSuffix(strings.TrimPrefix(rel, gen.OutDir+"/"), ".py")+"/"+arch, func(t *testing.T) {
				t.Parallel() // bounded by -parallel, GOMAXPROCS by default
				if !NVCCKnows(nvcc, arch) {
					t.Skipf("%s cannot build %s (CUDA 12.0 or later can): the GPU host's verifier compiles it", nvcc, arch)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				info, _, err := CompileKernel(ctx, nvcc, source, arch, "")
				for _, p := range info {
					line := p.String()
					if registered && p.Function == k.Function {
						line += "; " + occupancy(p, k.Threads, k.DynamicSmem, tg)
					}
					t.Log(line)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !registered {
					return
				}
				found := map[string]bool{}
				for _, p := range info {
					found[p.Function] = true
					// ptxas counts static shared memory; dynamic is the launch's.
					if p.Function == k.Function && p.Smem != k.SmemBytes-k.DynamicSmem {
						t.Errorf("%s: ptxas reports %d bytes of static shared memory, the plan %d (and %d dynamic)", p.Function, p.Smem, k.SmemBytes-k.DynamicSmem, k.DynamicSmem)
					}
					if p.StackFrame > 0 {
						t.Logf("%s: %d-byte stack frame (local memory) without spills", p.Function, p.StackFrame)
					}
				}
				for _, fn := range []string{k.Function, k.Repack} {
					if fn != "" && !found[fn] {
						t.Errorf("ptxas compiled no %s", fn)
					}
				}
			})
		}
	}
}

// TestRandomKernelsCompile builds the fp32 kernels (FFMA and direct, W
// windows included) and the 3xtf32 mma.sync kernels of random
// configurations for their drawn target (sm_80, or sm_90a where nvcc has
// it; the wgmma tiles of sm90 draws compile in TestEmittedKernelsCompile
// and on the GPU host): no compile error, no spill. The plan
// gives these tiles min_blocks 1 and refuses the direct and mma.sync ones
// its register estimate does not fit 65536/threads; the seed drew a
// spilling tile of each fp32 kind (8 x 4 FFMA sums, direct 2 rows by 8
// channels, a 512-thread window) and a 256-thread mma.sync tile (64x16
// warp tiles, presplit, trimmed to 128 registers) when it did not.
func TestRandomKernelsCompile(t *testing.T) {
	nvcc := nvccOrSkip(t)
	specs, err := gen.Random(60, 5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	n, mma := 0, 0
	for _, l := range specs {
		p := l.Plans[0] // a draw is planned for one target
		if tile := p.Tile; tile.WGMMA != nil || !NVCCKnows(nvcc, p.Target.Arch) {
			continue
		} else if tile.MMA != nil {
			mma++
		}
		files, err := r.Render(l.Plans, l.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if filepath.Base(f.Path) != gen.SubmissionFile("cuda", p.Target) {
				continue
			}
			source, err := KernelSource(f.Data)
			if err != nil {
				t.Fatal(err)
			}
			n++
			compileFor(t, nvcc, p.Spec.Name, p.Target, spec.FlatV1(p.Tile.Family()), source)
		}
	}
	if n-mma < 10 || mma < 5 {
		t.Errorf("only %d fp32 and %d mma.sync CUDA kernels drawn", n-mma, mma)
	}
}

// occupancy estimates resident blocks per SM from ptxas's numbers, for the
// log: registers are allocated per warp in 256s, each block reserves 1 KiB of
// shared memory beyond its own.
func occupancy(p PtxasInfo, threads, dynamicSmem int, tg plan.Target) string {
	if threads <= 0 {
		return ""
	}
	smemPerSM := tg.SmemPerSM
	warps := (threads + 31) / 32
	regsPerWarp := (p.Registers*32 + 255) / 256 * 256
	byRegs := 32
	if regsPerWarp > 0 {
		byRegs = 65536 / regsPerWarp / warps
	}
	bySmem := smemPerSM / (p.Smem + dynamicSmem + 1024)
	byThreads := 2048 / threads
	blocks := min(byRegs, bySmem, byThreads, 32)
	return fmt.Sprintf("blocks/SM %d (by registers %d, smem %d, threads %d), warps/SM %d/64", blocks, byRegs, bySmem, byThreads, blocks*warps)
}

// TestCpAsyncKernelsCompile builds the cp.async variant of a committed
// spec's kernel on FFMA and on mma.sync (default tiles) for each target: the
// copies are inline PTX that only nvcc checks, and they must not cost a
// spill.
func TestCpAsyncKernelsCompile(t *testing.T) {
	nvcc := nvccOrSkip(t)
	specs, err := gen.LoadAll("..")
	if err != nil {
		t.Fatal(err)
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	l := specs[0]
	for _, fam := range []spec.Family{spec.FFMA{CpAsync: true}, spec.MMA{CpAsync: true}} {
		for _, tg := range plan.Targets {
			s := *l.Spec()
			s.Kernel.Backends, s.Kernel.CUDA = []string{"cuda"}, spec.CUDA{Family: fam}
			p, err := plan.New(&s, tg)
			if err != nil {
				t.Fatalf("%s in %s with cp_async: %v", s.Name, fam.Precision(), err)
			}
			files, err := r.Render([]*plan.Plan{p}, l.Path)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				if filepath.Base(f.Path) != gen.SubmissionFile("cuda", tg) {
					continue
				}
				source, err := KernelSource(f.Data)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(source, "cp.async.ca.shared.global") {
					t.Fatalf("%s: no cp.async in the kernel", s.Name)
				}
				compileFor(t, nvcc, s.Name+"/"+fam.Precision(), tg, spec.FlatV1(fam), source)
			}
		}
	}
}

// frontEndWarning matches a warning of nvcc's front end about the source
// ("kernel.cu(26): warning #177-D: variable "kRows" was declared but never
// referenced").
var frontEndWarning = regexp.MustCompile(`\.cu\(\d+\): warning[^\n]*`)

// compileFor compiles source for its target's cubin in a parallel subtest
// named name/arch, logging ptxas's report; a compile error, a spill or a
// warning of the compiler's front end (an unused variable, say: the file
// holds code it does not run) fails the subtest, named by what (the tile).
// An arch the installed nvcc cannot build (sm_90a before CUDA 12.0) is
// skipped.
func compileFor(t *testing.T, nvcc, name string, tg plan.Target, what, source string) {
	for _, arch := range []string{tg.Arch} {
		t.Run(name+"/"+arch, func(t *testing.T) {
			t.Parallel()
			if !NVCCKnows(nvcc, arch) {
				t.Skipf("%s cannot build %s (CUDA 12.0 or later can)", nvcc, arch)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			info, log, err := CompileKernel(ctx, nvcc, source, arch, "")
			for _, p := range info {
				t.Log(p.String())
			}
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if w := frontEndWarning.FindAllString(log, -1); len(w) > 0 {
				t.Errorf("%s: the compiler warns: %s", what, strings.Join(w, "; "))
			}
		})
	}
}

func TestFrontEndWarningPattern(t *testing.T) {
	log := "kernel.cu(26): warning #177-D: variable \"kRows\" was declared but never referenced\n" +
		"ptxas info    : Used 162 registers, 49152 bytes smem\n" +
		"ptxas warning : Registers are spilled to local memory\n" +
		"/tmp/x/kernel.cu(298): warning #550-D: variable \"yb\" was set but never used\n"
	got := frontEndWarning.FindAllString(log, -1)
	if len(got) != 2 || !strings.Contains(got[0], "kRows") || !strings.Contains(got[1], `"yb"`) {
		t.Errorf("frontEndWarning found %q, want the two front-end warnings", got)
	}
}
