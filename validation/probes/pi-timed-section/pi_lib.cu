// The Monte-Carlo pi exercise's sampling kernel and CUB sum as a shared library, so that a
// torch.distributed program can run the exercise's timed section (kernel, CUB sum, NCCL all-reduce,
// stream sync, barrier) on its own stream (issue 15, the pi study's 0.982).
//
// The kernel is the exercise's (fasrc/User_Codes Training/Distributed_GPU_Computing/Exercise4):
// grid-stride, a 64-bit LCG mixed by splitmix64, two doubles per sample, a hit test; blocks = 32 per SM
// (capped by the work), threads from cudaOccupancyMaxPotentialBlockSize.
//
//   nvcc -O3 -arch=sm_90 -Xcompiler -fPIC -shared -o libpi.so pi_lib.cu
#include <cstdint>
#include <cub/device/device_reduce.cuh>

#include "pi_kernel.cuh"

static unsigned long long *g_counts = nullptr;
static void *g_tmp = nullptr;
static size_t g_tmp_bytes = 0;
static long long g_blocks = 0, g_total = 0, g_n = 0;
static int g_threads = 0;

// allocate for n local samples on the current device; returns 0 on success
extern "C" int pi_setup(long long n, int *blocks, int *threads) {
    cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return 1;
    int min_grid = 0;
    if (cudaOccupancyMaxPotentialBlockSize(&min_grid, &g_threads, sample_kernel, 0, 0) != cudaSuccess) return 2;
    g_blocks = (long long)prop.multiProcessorCount * 32;
    const long long by_work = (n + g_threads - 1) / g_threads;
    if (g_blocks > by_work) g_blocks = by_work;
    g_total = g_blocks * g_threads;
    g_n = n;
    if (cudaMalloc(&g_counts, g_total * sizeof(unsigned long long)) != cudaSuccess) return 3;
    unsigned long long *dummy = nullptr;
    cub::DeviceReduce::Sum(nullptr, g_tmp_bytes, g_counts, dummy, (int)g_total, (cudaStream_t)0);
    if (cudaMalloc(&g_tmp, g_tmp_bytes) != cudaSuccess) return 4;
    if (cudaDeviceSynchronize() != cudaSuccess) return 5;
    *blocks = (int)g_blocks;
    *threads = g_threads;
    return 0;
}

// enqueue the timed section's kernel and CUB sum on `stream`, the local hit count into `hits` (device, 8 bytes)
extern "C" int pi_kernel(void *stream, unsigned long long seed) {
    sample_kernel<<<(unsigned)g_blocks, g_threads, 0, (cudaStream_t)stream>>>(g_counts, g_n, seed);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

extern "C" int pi_sum(void *stream, unsigned long long *hits) {
    return cub::DeviceReduce::Sum(g_tmp, g_tmp_bytes, g_counts, hits, (int)g_total, (cudaStream_t)stream)
           == cudaSuccess ? 0 : 1;
}
