// Probe, not a generated kernel: the tensor rate of back-to-back m64n64k8
// TF32 wgmma with A from registers and B from shared memory, 12 products
// then a wait (a step of the emitted GEMM), for 1..4 blocks of one
// warpgroup an SM. Build and run on an sm_90 host:
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -o wgrate docs/perf/probes/wgrate.cu && ./wgrate
#include <cstdio>
#include <cuda_runtime.h>
__device__ __forceinline__ void wg(float (&d)[32], const unsigned* a, unsigned long long desc)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, 1, 1, 1;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}
__global__ void __launch_bounds__(128) rate(float* out, int iters, int waitEvery)
{
    __shared__ __align__(128) float b[8192];
    for (int i = threadIdx.x; i < 8192; i += 128) b[i] = (i % 7) * 0.25f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const unsigned base = (unsigned)__cvta_generic_to_shared(b);
    float d[32];
    for (int i = 0; i < 32; ++i) d[i] = 0.0f;
    unsigned a[4] = {threadIdx.x, threadIdx.x * 3u, 7u, 11u};
    for (int it = 0; it < iters; ++it) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        #pragma unroll
        for (int j = 0; j < 12; ++j) {
            const unsigned addr = base + (j % 8) * 2048;
            const unsigned long long desc = (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)(8 * 128 >> 4) << 16 | (unsigned long long)(128 >> 4) << 32;
            wg(d, a, desc);
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        if (it % waitEvery == waitEvery - 1) asm volatile("wgmma.wait_group.sync.aligned 0;" : "+f"(d[0]), "+f"(d[31]) :: "memory");
        a[0] += 1;
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" : "+f"(d[0]), "+f"(d[31]) :: "memory");
    float s = 0.0f;
    for (int i = 0; i < 32; ++i) s += d[i];
    out[blockIdx.x * 128 + threadIdx.x] = s;
}
int main()
{
    float* out; cudaMalloc(&out, 132 * 8 * 128 * 4);
    const int iters = 20000;
    for (int wait = 1; wait <= 2; ++wait)
    for (int per = 1; per <= 4; ++per) {
        const int blocks = 132 * per;
        rate<<<blocks, 128>>>(out, 100, wait);
        cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
        cudaEventRecord(e0);
        rate<<<blocks, 128>>>(out, iters, wait);
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        const double flops = 2.0 * 64 * 64 * 8 * 12 * (double)iters * blocks;
        printf("wait every %d step(s), %d block(s) of 1 warpgroup an SM: %.3f ms, %.1f TFLOP/s TF32 (%s)\n", wait, per, ms, flops / ms / 1e9,
               cudaGetErrorString(cudaGetLastError()));
    }
    return 0;
}
