// CPU stand-ins for the CUDA features convtgen's kernels use, so a kernel's
// own source runs on the host: every CUDA thread is a fiber (a stack of its
// own, on one host thread), the threads of one block run together (blocks
// one after another, in an order drawn from the run's seed), and
// __syncthreads and the warp-wide mma.sync are barriers. Slow, exact in indexing, and close in arithmetic (the
// kernel's own TF32 rounding, tensor-core sums in double).
//
// The threads of a block take turns: one runs until it waits at a barrier
// (or ends), then the next ready one, and the threads a barrier releases
// become ready in an order drawn from the seed too. A kernel whose result
// depends on the order of its blocks or of its threads between barriers
// (a race on the GPU) so gives a different output from one seed to the
// next, and one seed reproduces a run exactly. Seed 0 runs everything in
// index order.
//
// Every store to the output goes through OutFloat (or a float4 over it)
// and is counted, so that the driver can tell an output written twice or
// never, and a store past the output is an error at once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <numeric>
#include <ucontext.h>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __constant__
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict

struct dim3_ {
    unsigned x = 0, y = 0, z = 0;
};

// The output's write counts: the launch's output (base, len) and how often
// each element has been stored to. Only the running thread touches them.
struct OutShadow {
    float* base = nullptr;
    size_t len = 0;
    std::vector<unsigned> count;
};
inline OutShadow out_shadow;

// emu_count counts a store of n floats at p when p is in the output (a
// float4 store elsewhere is to shared memory or a re-laid copy).
inline void emu_count(const float* p, size_t n, bool must)
{
    OutShadow& o = out_shadow;
    const bool inside = o.base && p >= o.base && p < o.base + o.len;
    if (!inside && !must) return;
    if (!inside || p + n > o.base + o.len) {
        std::fprintf(stderr, "store of %zu floats at output element %td, outside the output of %zu\n", n, p - o.base, o.len);
        std::exit(5);
    }
    for (size_t i = 0; i < n; ++i) ++o.count[p - o.base + i];
}

// OutFloat is an output element: the kernel's y is an OutFloat*, so that
// every store to it is counted (an accumulation counts as a store).
struct OutFloat {
    float v;
    OutFloat& operator=(float x) { emu_count(&v, 1, true); v = x; return *this; }
    OutFloat& operator=(const OutFloat& o) { return *this = o.v; }
    OutFloat& operator+=(float x) { emu_count(&v, 1, true); v += x; return *this; }
    operator float() const { return v; }
};
static_assert(sizeof(OutFloat) == sizeof(float));

struct alignas(16) float4 {
    float x, y, z, w;
    float4& operator=(const float4& o) { emu_count(&x, 4, false); std::memcpy(this, &o, 16); return *this; }
};
struct alignas(8) float2 {
    float x, y;
    float2& operator=(const float2& o) { emu_count(&x, 2, false); std::memcpy(this, &o, 8); return *this; }
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline float2 make_float2(float x, float y) { return {x, y}; }

// splitmix64: the same sequence on every host, so a seed reproduces.
struct EmuRng {
    uint64_t s;
    uint64_t next()
    {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // shuffle permutes v (Fisher-Yates); seed 0 leaves it in order.
    template <class T> void shuffle(std::vector<T>& v, uint64_t seed)
    {
        if (seed == 0) return;
        for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[next() % i]);
    }
};

struct WarpState;
struct GroupState;
thread_local dim3_ threadIdx, blockIdx, blockDim;
inline dim3_ gridDim;  // the launch's grid (run_blocks sets it)
thread_local WarpState* warp_state;
thread_local GroupState* group_state;

// Sched runs a launch's CUDA threads as fibers, one at a time: the running
// one hands the turn to the next ready one when it waits at a barrier or
// ends (a switch of stacks, far cheaper than waking a host thread). A
// fiber's threadIdx and warp are its own, swapped in with it.
struct Sched {
    struct Fiber {
        ucontext_t ctx;
        std::unique_ptr<char[]> stack;
        dim3_ thread;
        WarpState* warp;
        GroupState* group;  // its warpgroup (4 warps: wgmma's unit)
    };
    uint64_t seed;
    EmuRng rng;
    std::vector<Fiber> fibers;
    std::deque<unsigned> ready;
    unsigned self = 0, waiting = 0;  // the running fiber; fibers at a barrier not yet full
    ucontext_t host;                 // the launch's caller, resumed when every fiber has ended

    Sched(unsigned threads, uint64_t seed_) : seed(seed_), rng{seed_}, fibers(threads) {}
    void make_ready(std::vector<unsigned> ts)
    {
        rng.shuffle(ts, seed);
        ready.insert(ready.end(), ts.begin(), ts.end());
    }
    void enter(unsigned next)
    {
        self = next;
        threadIdx = fibers[next].thread;
        warp_state = fibers[next].warp;
        group_state = fibers[next].group;
    }
    // pass hands the turn on: with wait, the running fiber is at a barrier
    // (or ready again) and resumes when its turn comes; else it has ended.
    void pass(bool wait)
    {
        if (ready.empty()) {
            if (wait || waiting > 0) {
                std::fprintf(stderr, "deadlock: %u threads wait at barriers that no other thread will reach\n", waiting + (wait ? 1 : 0));
                std::exit(6);
            }
            setcontext(&host);  // the last fiber of the launch ends
        }
        const unsigned from = self, next = ready.front();
        ready.pop_front();
        if (next == from) return;
        enter(next);
        if (wait) {
            swapcontext(&fibers[from].ctx, &fibers[next].ctx);
        } else {
            setcontext(&fibers[next].ctx);
        }
    }
};
inline Sched* sched;  // the launch running now (launches run one at a time)

// Barrier: count threads meet; the last to arrive makes them all ready.
struct Barrier {
    unsigned count;
    std::vector<unsigned> arrived;
    explicit Barrier(unsigned n) : count(n) {}
    void arrive_and_wait()
    {
        arrived.push_back(sched->self);
        if (arrived.size() < count) {
            ++sched->waiting;
        } else {
            sched->waiting -= count - 1;
            std::vector<unsigned> go;
            go.swap(arrived);
            sched->make_ready(std::move(go));
        }
        sched->pass(true);
    }
};

// One warp's meeting point for mma.sync and shuffles: each lane posts
// its fragments (or value), then reads everyone's.
struct WarpState {
    Barrier sync{32};
    unsigned a[32][4];
    unsigned b[32][2];
    float shfl[32];
    double shfl_d[32];
};

inline Barrier* block_barrier;

inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline int min(int a, int b) { return a < b ? a : b; }  // CUDA's integer min
inline void sincospi(double x, double* s, double* c) { *s = std::sin(M_PI * x); *c = std::cos(M_PI * x); }
template <class T> inline T __ldg(const T* p) { return *p; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }

// atomicAdd: one thread runs at a time, so a plain sum is atomic; the
// order of the blocks (the seed's) is the order of the sums.
inline double atomicAdd(double* p, double v) { const double old = *p; *p = old + v; return old; }
inline float atomicAdd(float* p, float v) { const float old = *p; *p = old + v; return old; }

// __shfl_xor_sync over the whole warp (the kernels pass a full mask), of
// a float or a double: every lane must reach it, as on the GPU (a lane
// that does not leaves the others waiting: a deadlock the scheduler
// reports).
template <class T> inline T emu_shfl_xor(T (&slots)[32], T v, int mask)
{
    const int lane = threadIdx.x % 32;
    WarpState& w = *warp_state;
    slots[lane] = v;
    w.sync.arrive_and_wait();
    const T got = slots[lane ^ mask];
    w.sync.arrive_and_wait();  // nobody overwrites a value until all have read theirs
    return got;
}
inline float __shfl_xor_sync(unsigned, float v, int mask) { return emu_shfl_xor(warp_state->shfl, v, mask); }
inline double __shfl_xor_sync(unsigned, double v, int mask) { return emu_shfl_xor(warp_state->shfl_d, v, mask); }

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 with the PTX ISA's
// fragment layout: lane 4g+t holds A[g][t], A[g+8][t], A[g][t+4],
// A[g+8][t+4]; B[t][g], B[t+4][g]; C[g][2t], C[g][2t+1], C[g+8][2t],
// C[g+8][2t+1].
inline void emu_mma_m16n8k8(float* acc, const unsigned* a, const unsigned* b)
{
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    WarpState& w = *warp_state;
    std::memcpy(w.a[lane], a, sizeof w.a[lane]);
    std::memcpy(w.b[lane], b, sizeof w.b[lane]);
    w.sync.arrive_and_wait();
    auto A = [&](int r, int k) { return __uint_as_float(w.a[4 * (r % 8) + k % 4][(r / 8) + 2 * (k / 4)]); };
    auto B = [&](int k, int n) { return __uint_as_float(w.b[4 * n + k % 4][k / 4]); };
    for (int e = 0; e < 4; ++e) {
        const int r = g + 8 * (e / 2), c = 2 * t + e % 2;
        double sum = acc[e];
        for (int k = 0; k < 8; ++k) sum += (double)A(r, k) * (double)B(k, c);
        acc[e] = (float)sum;
    }
    w.sync.arrive_and_wait();  // nobody overwrites the fragments until all have read them
}

// Shared memory's addresses: a kernel that builds wgmma descriptors keeps
// its shared memory in one array aligned to 256 KiB (Build aligns it so),
// so that an address is the low 18 bits of the host pointer, and
// emu_shared_hi the rest (one array: every address has the same).
inline uintptr_t emu_shared_hi;
inline bool emu_shared_set;
inline unsigned __cvta_generic_to_shared(const void* p)
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(p), hi = a & ~(uintptr_t)0x3FFFF;
    if (emu_shared_set && hi != emu_shared_hi) {
        std::fprintf(stderr, "a shared-memory address outside the one 256 KiB array the emulator maps\n");
        std::exit(7);
    }
    emu_shared_hi = hi;
    emu_shared_set = true;
    return (unsigned)(a & 0x3FFFF);
}

// One warpgroup's wgmma products. A product is issued by all 128 threads
// (each posting its A fragment) and runs when the group waits, as on the
// GPU, where wgmma is asynchronous: it reads B from shared memory and
// writes the sums then, so a kernel that overwrote a stage or read its
// sums before waiting comes out wrong here too.
struct GroupState {
    struct Product {
        unsigned a[128][4];
        unsigned long long desc;
        int add, n;
    };
    Barrier sync;
    unsigned threads;
    std::vector<Product> issued;                              // in issue order
    std::vector<std::vector<std::pair<size_t, float*>>> mine;  // per thread: (product, its sums)
    explicit GroupState(unsigned n) : sync(n), threads(n), mine(n) {}
};

[[noreturn]] inline void emu_wgmma_fail(const char* what)
{
    std::fprintf(stderr, "wgmma: %s (block %u, thread %u)\n", what, blockIdx.x, threadIdx.x);
    std::exit(7);
}

// wgmma.mma_async m64nNk8 .f32.tf32.tf32, A from registers with the PTX
// ISA's fragment layout (warp w of the group, lane 4g+t: A[16w+g][t],
// A[16w+g+8][t], A[16w+g][t+4], A[16w+g+8][t+4]), issued: the product
// runs at emu_wgmma_wait.
inline void emu_wgmma_m64k8(float* d, int n, const unsigned* a, unsigned long long desc, int add)
{
    GroupState& G = *group_state;
    if (G.threads != 128) emu_wgmma_fail("a warpgroup of fewer than 128 threads");
    const unsigned tg = threadIdx.x % 128;
    const size_t i = G.mine[tg].size();
    if (i == G.issued.size()) {
        G.issued.push_back({});
        G.issued[i].desc = desc, G.issued[i].add = add, G.issued[i].n = n;
    } else if (G.issued[i].desc != desc || G.issued[i].add != add || G.issued[i].n != n) {
        emu_wgmma_fail("the threads of a warpgroup issued different products");
    }
    std::memcpy(G.issued[i].a[tg], a, sizeof G.issued[i].a[tg]);
    G.mine[tg].push_back({i, d});
}

// wgmma.wait_group 0: every product the group issued runs, in issue
// order, each thread writing its own sums (D's layout: row 16w + g +
// 8*(e/2), column 8j + 2t + e%2 in element 4j + e), reading B from shared
// memory through the descriptor: K-major core matrices of 8 columns by 4
// K (16 bytes a column), no swizzle, the next along K LBO bytes on, the
// next 8 columns SBO bytes on.
inline void emu_wgmma_wait()
{
    GroupState& G = *group_state;
    const unsigned tg = threadIdx.x % 128;
    G.sync.arrive_and_wait();  // every thread has issued its products
    if (G.mine[tg].size() != G.issued.size()) emu_wgmma_fail("the threads of a warpgroup issued different numbers of products");
    const int w = tg / 32, g = tg % 32 / 4, t = tg % 4;
    for (const auto& [i, d] : G.mine[tg]) {
        const GroupState::Product& P = G.issued[i];
        if ((P.desc >> 62) != 0 || (P.desc >> 49 & 7) != 0) emu_wgmma_fail("a swizzled or offset descriptor");
        const uintptr_t start = (P.desc & 0x3FFF) << 4, lbo = (P.desc >> 16 & 0x3FFF) << 4, sbo = (P.desc >> 32 & 0x3FFF) << 4;
        auto A = [&](int r, int k) { return __uint_as_float(P.a[32 * (r / 16) + 4 * (r % 8) + k % 4][r % 16 / 8 + 2 * (k / 4)]); };
        auto B = [&](int k, int c) {
            const uintptr_t at = start + (k / 4) * lbo + (c / 8) * sbo + (c % 8) * 16 + (k % 4) * 4;
            if (at + 4 > 0x40000) emu_wgmma_fail("a descriptor past shared memory");
            float v;
            std::memcpy(&v, reinterpret_cast<const void*>(emu_shared_hi + at), 4);
            return v;
        };
        for (int j = 0; j < P.n / 8; ++j) {
            for (int e = 0; e < 4; ++e) {
                const int r = 16 * w + g + 8 * (e / 2), c = 8 * j + 2 * t + e % 2;
                double sum = P.add ? d[4 * j + e] : 0.0;
                for (int k = 0; k < 8; ++k) sum += (double)A(r, k) * (double)B(k, c);
                d[4 * j + e] = (float)sum;
            }
        }
    }
    G.mine[tg].clear();
    G.sync.arrive_and_wait();  // everyone has run its products
    if (tg == 0) G.issued.clear();
    G.sync.arrive_and_wait();  // before anyone issues again
}

// run_block_list runs kernel for the given blocks of a launch, one fiber
// per CUDA thread of a block, reused for every block: the blocks run one
// after another, in an order drawn from seed (0: as listed), which is also
// what lets a kernel's __shared__ arrays be plain statics.
inline std::function<void()> launch_kernel;
inline std::vector<dim3_> launch_blocks;
inline Barrier* launch_done;

inline void fiber_main()
{
    for (const dim3_& b : launch_blocks) {
        blockIdx = b;
        launch_kernel();
        if (!group_state->mine[threadIdx.x % 128].empty()) emu_wgmma_fail("products issued and never waited for");
        launch_done->arrive_and_wait();  // the next block starts when this one has finished
    }
    sched->pass(false);
}

template <class Kernel> void run_block_list(std::vector<dim3_> blocks, unsigned threads, uint64_t seed, Kernel kernel)
{
    constexpr size_t stack = 256 << 10;
    launch_blocks = std::move(blocks);
    Sched s(threads, seed);
    s.rng.shuffle(launch_blocks, seed);
    sched = &s;
    launch_kernel = kernel;
    Barrier block(threads), done(threads);
    block_barrier = &block;
    launch_done = &done;
    blockDim = {threads, 1, 1};
    std::vector<std::unique_ptr<WarpState>> warps;
    for (unsigned i = 0; i < (threads + 31) / 32; ++i) warps.push_back(std::make_unique<WarpState>());
    std::vector<std::unique_ptr<GroupState>> groups;
    for (unsigned i = 0; i < threads; i += 128) groups.push_back(std::make_unique<GroupState>(std::min(128u, threads - i)));
    for (unsigned t = 0; t < threads; ++t) {
        Sched::Fiber& f = s.fibers[t];
        f.thread = {t, 0, 0};
        f.warp = warps[t / 32].get();
        f.group = groups[t / 128].get();
        f.stack.reset(new char[stack]);
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack.get();
        f.ctx.uc_stack.ss_size = stack;
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, fiber_main, 0);
    }
    std::vector<unsigned> all(threads);
    std::iota(all.begin(), all.end(), 0u);
    s.make_ready(all);
    const unsigned first = s.ready.front();
    s.ready.pop_front();
    s.enter(first);
    swapcontext(&s.host, &s.fibers[first].ctx);
    sched = nullptr;
}
