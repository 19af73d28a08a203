// CPU stand-ins for the CUDA features convtgen's kernels use, so a kernel's
// own source runs on the host: every CUDA thread is a host thread, the
// threads of one block run together (blocks one after another), and
// __syncthreads and the warp-wide mma.sync are barriers. Slow, exact in
// indexing, and close in arithmetic (the kernel's own TF32 rounding,
// tensor-core sums in double).
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

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
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) float2 {
    float x, y;
};
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

// One warp's meeting point for mma.sync and shuffles: each lane posts
// its fragments (or value), then reads everyone's.
struct WarpState {
    std::barrier<> sync{32};
    unsigned a[32][4];
    unsigned b[32][2];
    float shfl[32];
};

thread_local dim3_ threadIdx, blockIdx, blockDim;
thread_local std::barrier<>* block_barrier;
thread_local WarpState* warp_state;

inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline int min(int a, int b) { return a < b ? a : b; }  // CUDA's integer min
template <class T> inline T __ldg(const T* p) { return *p; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }

// __shfl_xor_sync over the whole warp (the kernels pass a full mask).
inline float __shfl_xor_sync(unsigned, float v, int mask)
{
    const int lane = threadIdx.x % 32;
    WarpState& w = *warp_state;
    w.shfl[lane] = v;
    w.sync.arrive_and_wait();
    const float got = w.shfl[lane ^ mask];
    w.sync.arrive_and_wait();  // nobody overwrites a value until all have read theirs
    return got;
}

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
