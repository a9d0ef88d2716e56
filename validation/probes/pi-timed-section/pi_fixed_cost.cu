// Fixed cost per run of a Monte-Carlo pi sample on one GPU (issue 15, the pi study's 0.982).
//
// The FASRC exercise (fasrc/User_Codes Training/Distributed_GPU_Computing/Exercise4) times, per
// process: one grid-stride sampling kernel (64-bit LCG + splitmix64 finaliser, two doubles, a
// hit test), a CUB sum of the per-thread counts, one NCCL all-reduce and a stream sync, between
// two MPI barriers. This program repeats that timed section once per process (so first-use costs
// such as loading CUB's kernels fall inside it, as they do there), without MPI and NCCL, for
// N/n samples. If T(N/n) = c + W/n, then c = (n T(N/n) - T(N)) / (n - 1): the part of a run that
// does not shrink with the ranks, measured rather than fitted to the exercise's times.
//
//   nvcc -O3 -arch=sm_90 -o pi_fixed_cost pi_fixed_cost.cu
//   ./pi_fixed_cost SAMPLES   -> one line: samples blocks threads timed_s kernel_s pi_estimate
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cub/device/device_reduce.cuh>

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; } } while (0)

#include "pi_kernel.cuh"

int main(int argc, char **argv) {
    const long long n = argc > 1 ? atoll(argv[1]) : 1000000000LL;
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    CHECK(cudaSetDevice(0));
    int min_grid = 0, threads = 0;
    CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &threads, sample_kernel, 0, 0));
    long long blocks = (long long)prop.multiProcessorCount * 32;  // the exercise's cap: 32 blocks per SM
    const long long by_work = (n + threads - 1) / threads;
    if (blocks > by_work) blocks = by_work;
    const long long total = blocks * threads;
    unsigned long long *counts = nullptr, *hits = nullptr;
    void *tmp = nullptr;
    size_t tmp_bytes = 0;
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaMalloc(&counts, total * sizeof(unsigned long long)));
    CHECK(cudaMalloc(&hits, sizeof(unsigned long long)));
    CHECK(cub::DeviceReduce::Sum(nullptr, tmp_bytes, counts, hits, (int)total, stream));
    CHECK(cudaMalloc(&tmp, tmp_bytes));
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));

    // the timed section: kernel, CUB sum, sync (host clock, as MPI_Wtime there)
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(cudaEventRecord(e0, stream));
    sample_kernel<<<(unsigned)blocks, threads, 0, stream>>>(counts, n, 0x5DEECE66DULL);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(e1, stream));
    CHECK(cub::DeviceReduce::Sum(tmp, tmp_bytes, counts, hits, (int)total, stream));
    CHECK(cudaStreamSynchronize(stream));
    const double timed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    float k_ms = 0;
    CHECK(cudaEventElapsedTime(&k_ms, e0, e1));
    unsigned long long h = 0;
    CHECK(cudaMemcpy(&h, hits, sizeof(h), cudaMemcpyDeviceToHost));
    printf("%lld %lld %d %.6f %.6f %.8f\n", n, blocks, threads, timed, k_ms * 1e-3, 4.0 * (double)h / (double)n);
    return 0;
}
