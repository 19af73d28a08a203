"""Probe, not a generated submission: #77's GEMM with the roles turned
round, to measure a kernel family before it goes into a template.

  python3 docs/perf/probes/plane77.py out/l1_77_padded_dilated_strided /tmp/p77 base split
  python3 docs/perf/probes/profile.py /tmp/p77/*

The emitted kernel (v31) has the inputs in registers (M = 64 positions)
and streams the weights through shared memory, one tap a step, so every
tap reloads the inputs. Here the weights are the register operand (M = 64
output channels) and the inputs the shared-memory one (N = positions): a
block (two warpgroups, one an SM) keeps a ring of 3 bordered input planes
(4 output lines of 32 and their halo, all 32 channels as TF32 high and
low parts) that the TMA unit loads, and every one of the 27 taps reads a
plane at its own offset through the descriptor's start address (its
positions lie 16 bytes apart, so a window may start at any position). The
block slides along D, one new plane per output plane, loaded into the
oldest plane's slot once its last taps are done. The weights come as fp32
by bulk copies, a tap a stage, and each thread splits its fragments.
The warps done with a stage or a plane count in; the last one refills
it, so no warp waits for a producer. The two warpgroups take the lines'
positions 0..71 and 64..135 (34 a line, the last two of each garbage).

Variants: wN (weight stages, default 8), split (the second warpgroup
takes 72..135 as N = 64); timing only, wrong output: align (every window
128-byte aligned), n64 (both warpgroups N = 64).
"""
import os
import re
import shutil
import sys


def wait_fn(regs):
    cons = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return "".join(f"""// Waits until at most {k} product groups are in flight; d is what they
// write (so that no read of the sums moves above the wait).
__device__ __forceinline__ void wgmma_wait{k}(float* d)
{{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.wait_group.sync.aligned {k};" : {cons} :: "memory");
#endif
}}
""" for k in (0, 1))


def wgmma_fn(n):
    regs = n // 2
    outs = ", ".join(f"%{i}" for i in range(regs))
    cons = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    return f"""__device__ __forceinline__ void wgmma_n{n}(float* d, const unsigned* a, unsigned long long desc, int add)
{{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 5}, 0;\\n"
                 "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{outs}}}, {{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}, %{regs + 4}, p, 1, 1;\\n}}\\n"
                 : {cons}
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(add));
#endif
}}
"""


KERNEL = r"""
typedef int idx_t;
static constexpr int kBatch = 16, kCin = 32, kCout = 64;
static constexpr int kInD = 16, kInH = 32, kInW = 32;
static constexpr int kOutD = 33, kOutH = 65, kOutW = 65;
static constexpr idx_t kOutHW = (idx_t)kOutH * kOutW, kOutDHW = kOutD * kOutHW;
static constexpr int kXD = 18, kXH = 34, kXW = 34;   // bordered input
static constexpr int kSubs = 16;                     // (part, channel group of 4)
static constexpr int kLines = 4, kBoxH = kLines + 2, kBoxPos = kBoxH * kXW;  // 204
static constexpr int kSubPos = 208;                  // a sub-plane's positions in shared memory (garbage reads end at 205)
static constexpr int kSubBytes = kSubPos * 16, kSlotBytes = kSubs * kSubBytes, kSlots = 3;
static constexpr int kPlaneBytes = kSubs * kBoxPos * 16;
static constexpr int kWBytes = 8192, kWStages = WSTAGES, kWAt = kSlots * kSlotBytes;
static constexpr int kBarAt = kWAt + kWStages * kWBytes;  // plane_full[3], w_full[S], then counters
static constexpr int kSmem = kBarAt + (kSlots + kWStages) * 8 + (1 + kWStages) * 4;
static constexpr int kTapsTotal = 16 * 27;
static constexpr int kN0 = 72, kN1 = N1, kStart1 = 136 - kN1;
static constexpr int kD0 = kN0 / 2, kD1 = kN1 / 2, kDMax = kD0;

__device__ __forceinline__ unsigned round_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }

// xs[n][bd][part*8 + cg][bh][bw][4]: channels 4cg.. of bordered position
// (bd, bh, bw), as TF32 high (part 0) and low (part 1) parts.
extern "C" __global__ void relayout77(const float* __restrict__ x, float* __restrict__ xs)
{
    const idx_t i = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (idx_t)kBatch * kXD * 8 * kXH * kXW) return;
    const int bw = (int)(i % kXW);
    idx_t r = i / kXW;
    const int bh = (int)(r % kXH); r /= kXH;
    const int cg = (int)(r % 8); r /= 8;
    const int bd = (int)(r % kXD), n = (int)(r / kXD);
    const int id = bd - 1, ih = bh - 1, iw = bw - 1;
    float4 hi = make_float4(0.f, 0.f, 0.f, 0.f), lo = hi;
    if ((unsigned)id < kInD && (unsigned)ih < kInH && (unsigned)iw < kInW) {
        const float* p = x + (((idx_t)n * kCin + 4 * cg) * kInD + id) * (kInH * kInW) + ih * kInW + iw;
        float v[4], h[4], l[4];
        #pragma unroll
        for (int e = 0; e < 4; ++e) {
            v[e] = p[(idx_t)e * kInD * kInH * kInW];
            const unsigned u = round_tf32(v[e]);
            h[e] = __uint_as_float(u);
            l[e] = __uint_as_float(round_tf32(v[e] - h[e]));
        }
        hi = make_float4(h[0], h[1], h[2], h[3]);
        lo = make_float4(l[0], l[1], l[2], l[3]);
    }
    float* o = xs + ((((idx_t)n * kXD + bd) * kSubs + cg) * kXH + bh) * kXW * 4 + bw * 4;
    *reinterpret_cast<float4*>(o) = hi;
    *reinterpret_cast<float4*>(o + (idx_t)8 * kXH * kXW * 4) = lo;
}

// wraw[v][j][thread of 128][4], v the tap in the order the GEMM takes them
// (kd = 2 - v/9: the oldest plane first): thread (warp w, g, t)'s A
// fragment of k8 chunk j, rows (co) 16w+g, +8, columns (ci) 8j+t, +4.
extern "C" __global__ void repack77(const float* __restrict__ w, float* __restrict__ img)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 27 * 2048) return;
    const int f = i % 4, th = i / 4 % 128, j = i / 512 % 4, v = i / 2048;
    const int tap = (2 - v / 9) * 9 + v % 9;
    const int wp = th / 32, g = th % 32 / 4, t = th % 4;
    const int co = 16 * wp + g + 8 * (f % 2), ci = 8 * j + t + 4 * (f / 2);
    img[i] = w[((idx_t)ci * kCout + co) * 27 + tap];
}

extern "C" __global__ void __launch_bounds__(256) fill77(float* __restrict__ y)
{
    #pragma unroll
    for (int e = 0; e < 4; ++e) {
        const idx_t i = (idx_t)blockIdx.x * 1024 + e * 256 + threadIdx.x;
        if (i < (idx_t)kBatch * kCout * kOutDHW) y[i] = 0.0f;
    }
}

WGMMA_FNS

__device__ __forceinline__ void wgmma_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void barrier_init(unsigned long long* bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"((unsigned)__cvta_generic_to_shared(bar)) : "memory");
#endif
}
__device__ __forceinline__ void barrier_wait(unsigned long long* bar, unsigned parity) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("{\n.reg .pred done;\nWAIT_%=:\nmbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n@!done bra WAIT_%=;\n}\n"
                 :: "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(parity) : "memory");
#endif
}
__device__ __forceinline__ void bulk_load(void* dst, const void* src, int bytes, unsigned long long* bar) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(bytes), "r"((unsigned)__cvta_generic_to_shared(bar)) : "memory");
#endif
}
__device__ __forceinline__ void expect_bytes(unsigned long long* bar, int bytes) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void proxy_fence() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
// Bordered plane bd of block (n, hb) into slot: 16 runs of 3264 bytes.
__device__ __forceinline__ void load_plane(char* slot, const float* xs, int n, int hb, int bd, unsigned long long* bar) {
    expect_bytes(bar, kPlaneBytes);
    for (int u = 0; u < kSubs; ++u)
        bulk_load(slot + u * kSubBytes, xs + ((((idx_t)n * kXD + bd) * kSubs + u) * kXH + kLines * hb) * kXW * 4, kBoxPos * 16, bar);
}
__device__ __forceinline__ void load_w(char* smem, const float* wraw, int u, unsigned long long* bars) {
    const int st = u % kWStages;
    expect_bytes(bars + kSlots + st, kWBytes);
    bulk_load(smem + kWAt + st * kWBytes, wraw + (u % 27) * (kWBytes / 4), kWBytes, bars + kSlots + st);
}
// A warp done with a resource: its lane 0 counts in (after the warp's
// reads, fenced); the 8th warp in gets the refill.
__device__ __forceinline__ bool last_of_8(unsigned* counter) {
    __syncwarp();
    bool last = false;
    if (threadIdx.x % 32 == 0) {
        __threadfence_block();
        last = atomicAdd(counter, 1u) % 8 == 7;
        if (last) { __threadfence_block(); proxy_fence(); }
    }
    return last;
}

extern "C" __global__ void __launch_bounds__(256, 1)
gemm77(const float* __restrict__ xs, const float* __restrict__ wraw, float* __restrict__ y)
{
    extern __shared__ __align__(128) char smem[];
    unsigned long long* bars = reinterpret_cast<unsigned long long*>(smem + kBarAt);
    unsigned* counters = reinterpret_cast<unsigned*>(smem + kBarAt + (kSlots + kWStages) * 8);  // [0] planes, [1+s] weight stage s
    const int tid = threadIdx.x, wg = tid / 128, th = tid % 128, warp = th / 32, g = th % 32 / 4, t = th % 4;
    const int hb = blockIdx.x, n = blockIdx.y;
    if (tid == 0) {
        for (int k = 0; k < kSlots + kWStages; ++k) barrier_init(bars + k);
        for (int k = 0; k < 1 + kWStages; ++k) counters[k] = 0;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
        for (int bd = 0; bd < 3; ++bd) load_plane(smem + bd * kSlotBytes, xs, n, hb, bd, bars + bd);
        for (int u = 0; u < kWStages; ++u) load_w(smem, wraw, u, bars);
    }
    __syncthreads();
    const int n0 = wg == 0 ? 0 : kStart1;
    const unsigned smem_base = (unsigned)__cvta_generic_to_shared(smem);
    const unsigned long long desc_const = (unsigned long long)(kSubBytes >> 4) << 16 | (unsigned long long)(128 >> 4) << 32;

    for (int qd = 0; qd < 16; ++qd) {
        float acc[kDMax], part[kDMax];
        #pragma unroll
        for (int e = 0; e < kDMax; ++e) acc[e] = 0.0f;
        unsigned a[2][4][2][4];
        unsigned long long desc_plane = 0;
        #pragma unroll
        for (int v = 0; v < 27; ++v) {
            const int kd = 2 - v / 9, kh = v / 3 % 3, kw = v % 3;
            const int u = qd * 27 + v, st = u % kWStages;
            if (v % 9 == 0) {  // a new plane: qd + 2 - kd
                const int b = qd + 2 - kd;
                barrier_wait(bars + b % kSlots, b / kSlots & 1);
                desc_plane = desc_const | (((smem_base + b % kSlots * kSlotBytes) & 0x3FFFF) >> 4);
            }
            barrier_wait(bars + kSlots + st, u / kWStages & 1);
            float4 raw[4];
            #pragma unroll
            for (int j = 0; j < 4; ++j) raw[j] = *reinterpret_cast<const float4*>(smem + kWAt + st * kWBytes + (j * 128 + th) * 16);
            if (last_of_8(counters + 1 + st) && u + kWStages < kTapsTotal) load_w(smem, wraw, u + kWStages, bars);
            const int b = v % 2;
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const float r[4] = {raw[j].x, raw[j].y, raw[j].z, raw[j].w};
                #pragma unroll
                for (int f = 0; f < 4; ++f) {
                    const unsigned hi = round_tf32(r[f]);
                    a[b][j][0][f] = hi;
                    a[b][j][1][f] = __float_as_uint(r[f] - __uint_as_float(hi));
                }
            }
            const unsigned long long desc = desc_plane + ((n0 + (2 - kh) * kXW + (2 - kw)) ALIGN);
            const bool fresh = v % 9 == 0;
            wgmma_fence();
            #pragma unroll
            for (int j = 0; j < 4; ++j) {
                const unsigned long long d_hi = desc + 2 * j * (kSubBytes >> 4), d_lo = desc + (8 + 2 * j) * (kSubBytes >> 4);
                if (wg == 0) {
                    wgmma_n72(part, a[b][j][1], d_hi, j > 0 || !fresh);
                    wgmma_n72(part, a[b][j][0], d_lo, 1);
                    wgmma_n72(part, a[b][j][0], d_hi, 1);
                } else {
                    WG1_PRODUCTS
                }
            }
            wgmma_commit();
            if (v % 9 == 8) {
                wgmma_wait0(part);
                #pragma unroll
                for (int e = 0; e < kDMax; ++e) acc[e] += part[e];
                // Plane qd (kd = 2) is read for the last time: the 8th warp
                // done with it loads plane qd + 3 into its slot.
                if (v == 8 && last_of_8(counters) && qd + 3 < kXD)
                    load_plane(smem + qd % kSlots * kSlotBytes, xs, n, hb, qd + 3, bars + qd % kSlots);
            } else {
                wgmma_wait1(part);
            }
        }
        // Outputs: column 8i + 2t + e%2 of the warpgroup's range, rows (co)
        // 16 warp + g (+8).
        const int nd = wg == 0 ? kD0 : kD1;
        #pragma unroll
        for (int e = 0; e < kDMax; ++e) {
            if (e >= nd) break;
            const int col = n0 + 8 * (e / 4) + 2 * t + e % 2;
            if (wg == 1 && col < kN0) continue;
            const int l = col / kXW, c = col % kXW;
            if (c >= 32) continue;
            const int co = 16 * warp + g + 8 * (e % 4 / 2);
            y[((idx_t)n * kCout + co) * kOutDHW + (idx_t)(1 + 2 * qd) * kOutHW + (1 + 2 * (kLines * hb + l)) * kOutW + 1 + 2 * c] = acc[e];
        }
    }
}
"""

HOST = r"""
#include <torch/extension.h>
torch::Tensor conv_transpose3d_forward(torch::Tensor x, torch::Tensor weight)
{
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.sizes() == torch::IntArrayRef({16, 32, 16, 32, 32}), "x");
    TORCH_CHECK(weight.is_cuda() && weight.is_contiguous() && weight.sizes() == torch::IntArrayRef({32, 64, 3, 3, 3}), "w");
    auto img = torch::empty({27 * 2048}, x.options());
    auto xs = torch::empty({16 * 18 * 16 * 34 * 34 * 4}, x.options());
    auto y = torch::empty({16, 64, 33, 65, 65}, x.options());
    static bool attr = false;
    const int smem = kSmem;
    if (!attr) { cudaFuncSetAttribute(gemm77, cudaFuncAttributeMaxDynamicSharedMemorySize, smem); attr = true; }
    repack77<<<216, 256>>>((const float*)weight.data_ptr(), (float*)img.data_ptr());
    relayout77<<<(16 * 18 * 8 * 34 * 34 + 255) / 256, 256>>>((const float*)x.data_ptr(), (float*)xs.data_ptr());
    fill77<<<139425, 256>>>((float*)y.data_ptr());
    gemm77<<<dim3(8, 16), 256, smem>>>((const float*)xs.data_ptr(), (const float*)img.data_ptr(), (float*)y.data_ptr());
    return y;
}
"""

PY = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

KERNEL_SOURCE = r"""{kernel}"""
HOST_SOURCE = r"""{host}"""
_ext = load_inline(
    name="probe_plane77_{tag}",
    cpp_sources="torch::Tensor conv_transpose3d_forward(torch::Tensor x, torch::Tensor weight);",
    cuda_sources=[KERNEL_SOURCE, HOST_SOURCE],
    functions=["conv_transpose3d_forward"],
    extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"],
    verbose=False,
)


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, bias=False):
        super(Model, self).__init__()
        self.conv_transpose3d = nn.ConvTranspose3d(in_channels, out_channels, (kernel_size, kernel_size, kernel_size), stride=stride, padding=padding, dilation=dilation, bias=bias)

    def forward(self, x):
        return _ext.conv_transpose3d_forward(x, self.conv_transpose3d.weight)
'''


def render(name):
    stages, n1, align, n0 = 8, 72, "", 72
    for part in name.split("+"):
        if part == "align":  # timing only (wrong output): every window 128-byte aligned
            align = "& ~7"
            continue
        if part == "n64":  # timing only (wrong output): both warpgroups N = 64
            n0 = n1 = 64
            continue
        if re.fullmatch(r"w\d+", part):
            stages = int(part[1:])
        elif part == "split":
            n1 = 64
        elif part != "base":
            raise SystemExit(f"plane77: no variant {part!r}")
    wg1 = "\n                    ".join(
        [f"wgmma_n{n1}(part, a[b][j][1], d_hi, j > 0 || !fresh);",
         f"wgmma_n{n1}(part, a[b][j][0], d_lo, 1);",
         f"wgmma_n{n1}(part, a[b][j][0], d_hi, 1);"])
    fns = wgmma_fn(n0) + (wgmma_fn(n1) if n1 != n0 else "") + wait_fn(n0 // 2)
    kernel = (KERNEL.replace("WSTAGES", str(stages)).replace("N1", str(n1)).replace("ALIGN", align)
              .replace("wgmma_n72(", f"wgmma_n{n0}(")
              .replace("WGMMA_FNS", fns).replace("WG1_PRODUCTS", wg1))
    return PY.format(kernel=kernel, host=HOST, tag=name.replace("+", "_"))


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    folder, root, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    for name in names:
        out = os.path.join(root, "plane77." + name)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "cuda.sm90.py"), "w") as f:
            f.write(render(name))
        shutil.copy(os.path.join(folder, "problem.py"), out)
        print(out)


if __name__ == "__main__":
    main()
