package emulate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"convtgen/gen/plan"
)

// The sampled run is for configurations far too big to emulate whole
// (tensors of 2^31 elements and more, where 64-bit offsets matter): the
// kernel's source runs with its real constants under UBSan, so any int
// product that overflows aborts, but only a sample of each launch's
// blocks runs (its first, its last and some drawn ones), and the
// tensors live in sparse memory: x and w are filled page by page on
// first touch with values that are a hash of their flat index, y with
// NaN, so untouched pages cost nothing. Each output the sampled blocks
// wrote is then checked against a float64 direct sum of the
// transposed-convolution definition over the same hashed values.

// sampledDriver is the host program's main for a sampled run. Its
// placeholders: 1 input, 2 weight, 3 bias, 4 output, 5 repack image, 6
// re-laid input lengths; 7 the conv's (batch, cin, cout, groups), 8..12
// in, out, kernel, stride, padding as {d, h, w}; 13 the repack's
// blocks; 14 the other launches; 15 samples per launch; 16 seed; 17
// whether to check values; 18 dilation; 19, 20 the repack's threads and
// name; 21 whether it runs whole.
const sampledDriver = `
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <random>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

static constexpr size_t kPage = 4096;

// A lazily filled tensor: the kernel sees view, PROT_NONE until a page is
// first touched; the fault handler fills that page through back (a second
// mapping of the same memfd, always writable) and only then opens it in
// view, so no thread ever sees a page half filled.
struct Lazy {
    char* view = nullptr;
    char* back = nullptr;
    size_t bytes = 0;
    int prot = PROT_READ;
    int kind = 0;  // 0: x's hash, 1: w's hash, 2: NaN
    unsigned char* state = nullptr;  // per page: filled
};
static Lazy regions[3];
static std::atomic_flag fault_lock = ATOMIC_FLAG_INIT;

static float hashed(unsigned long long i, unsigned long long salt)
{
    unsigned long long z = i * 0x9E3779B97F4A7C15ull + salt;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 29;
    return (float)((double)(z >> 40) / (double)(1ull << 24) - 0.5);
}
static float x_at(unsigned long long i) { return hashed(i, 1); }
static float w_at(unsigned long long i) { return hashed(i, 2); }

static void on_fault(int, siginfo_t* si, void*)
{
    char* a = (char*)si->si_addr;
    for (Lazy& r : regions) {
        if (!r.view || a < r.view || a >= r.view + r.bytes) continue;
        const size_t page = (size_t)(a - r.view) / kPage;
        while (fault_lock.test_and_set(std::memory_order_acquire)) {}
        if (!r.state[page]) {
            float* f = (float*)(r.back + page * kPage);
            const unsigned long long first = page * kPage / 4;
            for (size_t e = 0; e < kPage / 4; ++e) f[e] = r.kind == 0 ? x_at(first + e) : r.kind == 1 ? w_at(first + e) : NAN;
            if (mprotect(r.view + page * kPage, kPage, r.prot) != 0) _exit(4);
            r.state[page] = 1;
        }
        fault_lock.clear(std::memory_order_release);
        return;
    }
    const char msg[] = "sampled: access outside every tensor\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(3);
}

static char* must_map(size_t bytes, int prot, int flags, int fd)
{
    void* p = mmap(nullptr, bytes, prot, flags, fd, 0);
    if (p == MAP_FAILED) { std::perror("mmap"); std::exit(2); }
    return (char*)p;
}

static size_t pages(size_t n) { return (n * 4 + kPage - 1) / kPage * kPage; }

static float* lazy(int slot, size_t n, int kind, int prot)
{
    Lazy& r = regions[slot];
    r.bytes = pages(n);
    r.kind = kind;
    r.prot = prot;
    const int fd = memfd_create("sampled", 0);
    if (fd < 0 || ftruncate(fd, (off_t)r.bytes) != 0) { std::perror("memfd"); std::exit(2); }
    r.back = must_map(r.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd);
    r.view = must_map(r.bytes, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd);
    r.state = (unsigned char*)must_map(r.bytes / kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
    return (float*)r.view;
}

// zeroed: plain sparse memory (the repack image and the re-laid input).
static float* zeroed(size_t n)
{
    return (float*)must_map(pages(n) + kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
}

// The blocks a launch runs: its first, its last and n drawn ones.
static std::vector<unsigned long long> sample(unsigned long long total, int n, std::mt19937_64& rng)
{
    std::vector<unsigned long long> b{0, total - 1};
    for (int i = 0; i < n && total > 2; ++i) b.push_back(1 + rng() %% (total - 2));
    return b;
}

// run_blocks runs kernel for the given flat blocks of a grid, in the order
// listed (run_block_list's seed 0).
template <class Kernel> void run_blocks(dim3_ grid, unsigned threads, const std::vector<unsigned long long>& flat, Kernel kernel)
{
    std::vector<dim3_> blocks;
    for (unsigned long long b : flat)
        blocks.push_back({(unsigned)(b %% grid.x), (unsigned)(b / grid.x %% grid.y), (unsigned)(b / ((unsigned long long)grid.x * grid.y))});
    run_block_list(std::move(blocks), threads, 0, kernel);
}

template <class Kernel> void run_sampled(dim3_ grid, unsigned threads, int n, std::mt19937_64& rng, Kernel kernel)
{
    run_blocks(grid, threads, sample((unsigned long long)grid.x * grid.y * grid.z, n, rng), kernel);
}

int main()
{
    struct sigaction sa = {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);

    const long long kX = %[1]dLL, kW = %[2]dLL, kB = %[3]dLL, kY = %[4]dLL, kImg = %[5]dLL, kXr = %[6]dLL;
    const long long conv[4] = %[7]s;
    const long long in[3] = %[8]s, out[3] = %[9]s, ker[3] = %[10]s, str[3] = %[11]s, pad[3] = %[12]s, dil[3] = %[18]s;
    const float* x = lazy(0, kX, 0, PROT_READ);
    const float* w = lazy(1, kW, 1, PROT_READ);
    float* y = lazy(2, kY, 2, PROT_READ | PROT_WRITE);
    std::vector<float> bias(kB > 0 ? kB : 1);
    for (long long c = 0; c < kB; ++c) bias[c] = hashed(c, 3);
    float* wt = zeroed(kImg);
    float* xr = zeroed(kXr);
    const float* xin = x;
    std::mt19937_64 rng(%[16]d);
    const int kSamples = %[15]d;

    // The weight re-layout: every block when the image is small (the
    // value check needs all of it), else a sample.
    {
        const unsigned long long blocks = %[13]s;
        std::vector<unsigned long long> run;
        if (%[21]t) {
            run.resize(blocks);
            std::iota(run.begin(), run.end(), 0ull);
        } else {
            run = sample(blocks, kSamples, rng);
        }
        run_blocks({(unsigned)blocks, 1, 1}, %[19]d, run, [&] { %[20]s(w, wt); });
    }
%[14]s

    if (!%[17]t) { std::printf("written 0 maxerr 0\n"); return 0; }
    // Every output the sampled blocks wrote, against the direct sum.
    const long long cin = conv[1], cout = conv[2], groups = conv[3], cing = cin / groups, coutg = cout / groups;
    const long long ohw = out[1] * out[2], odhw = out[0] * ohw, ihw = in[1] * in[2], idhw = in[0] * ihw;
    long long written = 0;
    double maxerr = 0;
    for (size_t page = 0; page < regions[2].bytes / kPage; ++page) {
        if (!regions[2].state[page]) continue;
        for (long long i = page * kPage / 4; i < (long long)((page + 1) * kPage / 4) && i < kY; ++i) {
            const float got = y[i];
            if (std::isnan(got)) continue;
            ++written;
            const long long n = i / (cout * odhw), c = i / odhw %% cout, s = i %% odhw;
            const long long o[3] = {s / ohw, s / out[2] %% out[1], s %% out[2]};
            const long long g = c / coutg, co = c %% coutg;
            double want = kB > 0 ? bias[c] : 0.0;
            for (long long kd = 0; kd < ker[0]; ++kd)
            for (long long kh = 0; kh < ker[1]; ++kh)
            for (long long kw = 0; kw < ker[2]; ++kw) {
                const long long k[3] = {kd, kh, kw};
                long long at[3];
                bool ok = true;
                for (int a = 0; a < 3 && ok; ++a) {
                    const long long v = o[a] + pad[a] - k[a] * dil[a];
                    ok = v >= 0 && v %% str[a] == 0 && v / str[a] < in[a];
                    at[a] = ok ? v / str[a] : 0;
                }
                if (!ok) continue;
                for (long long ci = 0; ci < cing; ++ci) {
                    const long long ch = g * cing + ci;
                    want += (double)x_at((n * cin + ch) * idhw + at[0] * ihw + at[1] * in[2] + at[2])
                        * (double)w_at(((ch * coutg + co) * ker[0] + kd) * ker[1] * ker[2] + kh * ker[2] + kw);
                }
            }
            const double err = std::fabs((double)got - want) / (1.0 + std::fabs(want));
            maxerr = std::max(maxerr, err);
            if (err > 1e-4) {
                std::fprintf(stderr, "output %%lld (n %%lld, c %%lld, o %%lld %%lld %%lld) is %%.8g, the direct sum %%.8g\n", i, n, c, o[0], o[1], o[2], got, want);
                return 1;
            }
        }
    }
    std::printf("written %%lld maxerr %%.3g\n", written, maxerr);
    return 0;
}
`

// wholeRepack is the largest weight re-layout a sampled run runs whole.
const wholeRepack = 1 << 26

// Sampled is what a sampled run found.
type Sampled struct {
	Written int     // outputs the sampled blocks wrote, each checked
	MaxErr  float64 // their largest error relative to 1 + |direct sum|
}

// RunSampled builds kernel (a CUDA file's KERNEL_SOURCE) with its launch
// record under UBSan (any signed overflow or other undefined behaviour
// aborts) and runs, for every launch, its first and last blocks and
// samples drawn ones with seed, on sparse tensors. With check, every
// output the sampled blocks wrote is compared with the direct sum; a
// wgmma launch reads its re-laid input, which only sampled re-layout
// blocks wrote, so its values cannot be checked (check must be false).
func RunSampled(ctx context.Context, cxx, dir, kernel string, l plan.Launch, samples int, seed int64, check bool) (Sampled, error) {
	host, err := hostSource(kernel, l.DynamicSmem)
	if err != nil {
		return Sampled{}, err
	}
	if l.AddSplits != "" {
		return Sampled{}, fmt.Errorf("emulate: %s splits its reduction (split_k): a sampled run has no workspace for the partial outputs", l.Spec)
	}
	if check && l.Relayout != "" {
		return Sampled{}, fmt.Errorf("emulate: %s reads a re-laid input: a sampled run can check its safety, not its values", l.Spec)
	}
	// The weight re-layout runs whole up to wholeRepack elements (the
	// values need all of it); past that a sample, and no values are checked.
	whole := l.RepackLen <= wholeRepack
	check = check && whole
	c := l.Conv
	bias := 0
	if c.Bias {
		bias = c.OutChannels
	}
	three := func(v [3]int) string { return fmt.Sprintf("{%d, %d, %d}", v[0], v[1], v[2]) }
	var launches []string
	if l.Relayout != "" {
		launches = append(launches, fmt.Sprintf("    run_sampled({%d, 1, 1}, %d, kSamples, rng, [&] { %s(x, xr); });\n    xin = xr;",
			l.RelayoutBlocks, plan.RelayoutBlockThreads, l.Relayout))
	}
	if l.Fill != "" {
		launches = append(launches, fmt.Sprintf("    run_sampled({%d, 1, 1}, %d, kSamples, rng, [&] { %s(kB > 0 ? bias.data() : nullptr, y); });",
			l.FillBlocks, plan.FillBlockThreads, l.Fill))
	}
	// Without a re-layout the main kernel reads the weight as it is, and
	// the driver's re-layout loop runs no block.
	weights, repack := "wt", l.Repack
	if repack == "" {
		weights, repack = "w", "(void)"
	}
	launches = append(launches, fmt.Sprintf("    run_sampled({%d, %d, %d}, %d, kSamples, rng, [&] { %s(xin, %s, kB > 0 ? bias.data() : nullptr, y); });",
		l.Grid[0], l.Grid[1], l.Grid[2], l.Threads, l.Function, weights))
	src := shim + "\n" + host + fmt.Sprintf(sampledDriver,
		c.InputLen(), c.WeightLen(), bias, c.OutputLen(), l.RepackLen, max(1, l.RelaidLen),
		fmt.Sprintf("{%d, %d, %d, %d}", c.Batch, c.InChannels, c.OutChannels, c.Groups),
		three(c.In), three(l.Out), three(c.Kernel), three(c.Stride), three(c.Padding),
		fmt.Sprint(max(1, l.RepackBlocks)), strings.Join(launches, "\n"), samples, seed, check,
		three(c.Dilation), plan.RepackBlockThreads, repack, whole)
	sum := sha256.Sum256([]byte(src))
	base := filepath.Join(dir, "sampled-"+hex.EncodeToString(sum[:8]))
	if err := os.WriteFile(base+".cpp", []byte(src), 0o644); err != nil {
		return Sampled{}, err
	}
	build := exec.CommandContext(ctx, cxx, "-std=c++20", "-O1", "-pthread", "-w",
		"-fsanitize=signed-integer-overflow,undefined", "-fno-sanitize-recover=all", "-fno-sanitize=pointer-overflow",
		"-o", base, base+".cpp")
	if out, err := build.CombinedOutput(); err != nil {
		return Sampled{}, fmt.Errorf("emulate: %s: %v\n%s", cxx, err, out)
	}
	run := exec.CommandContext(ctx, base)
	out, err := run.CombinedOutput()
	if err != nil {
		return Sampled{}, fmt.Errorf("emulate: sampled run of %s: %v\n%s", l.Spec, err, out)
	}
	var s Sampled
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "written %d maxerr %g", &s.Written, &s.MaxErr); err != nil {
		return Sampled{}, fmt.Errorf("emulate: sampled run of %s said %q", l.Spec, out)
	}
	return s, nil
}
