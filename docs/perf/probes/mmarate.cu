// Probe, not a generated kernel: the tensor rate of mma.sync m16n8k8 TF32
// (the sm80 files' products), back to back from registers, 8 independent
// accumulators a warp so the pipe never waits on one, for 4..32 warps an
// SM. Built as compute_80 PTX it runs on an H200 the way an sm80 file does
// (the driver compiles the PTX); built for sm_90a it is the same code as
// the GPU's own. Prints TFLOP/s counting 2 flops a multiply-add (one TF32
// product; 3xTF32 does three). Run:
//   nvcc -gencode=arch=compute_80,code=compute_80 -O3 -o mmarate80 docs/perf/probes/mmarate.cu && ./mmarate80
//   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -o mmarate90 docs/perf/probes/mmarate.cu && ./mmarate90
#include <cstdio>
#include <cuda_runtime.h>

__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__global__ void rate(float* out, int iters)
{
    float d[8][4] = {};
    unsigned a[4] = {threadIdx.x, threadIdx.x * 3u, 7u, 11u};
    unsigned b[8][2];
    for (int j = 0; j < 8; ++j) b[j][0] = threadIdx.x + j, b[j][1] = 5u * j;
    for (int it = 0; it < iters; ++it) {
        #pragma unroll
        for (int j = 0; j < 8; ++j) mma(d[j], a, b[j]);
    }
    float s = 0.0f;
    for (int j = 0; j < 8; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main()
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    const int iters = 4096;
    for (int warps = 4; warps <= 32; warps *= 2) {
        const int blocks = sms * (warps / 4), threads = 128;
        float* out;
        cudaMalloc(&out, sizeof(float) * blocks * threads);
        rate<<<blocks, threads>>>(out, 16);
        cudaEvent_t t0, t1;
        cudaEventCreate(&t0);
        cudaEventCreate(&t1);
        cudaEventRecord(t0);
        rate<<<blocks, threads>>>(out, iters);
        cudaEventRecord(t1);
        cudaEventSynchronize(t1);
        float ms = 0;
        cudaEventElapsedTime(&ms, t0, t1);
        const double flops = 2.0 * 16 * 8 * 8 * 8.0 * iters * (blocks * threads / 32.0);
        printf("%s: %d warps an SM: %.1f TFLOP/s of TF32 products (%s)\n", prop.name, warps, flops / ms / 1e9,
               cudaGetErrorString(cudaGetLastError()));
        cudaFree(out);
    }
    return 0;
}
