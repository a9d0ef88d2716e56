// The Monte-Carlo pi exercise's sampling kernel (fasrc/User_Codes Training/Distributed_GPU_Computing/Exercise4):
// grid-stride, a 64-bit LCG mixed by splitmix64, two doubles per sample, a hit test; one count per thread.
// Included by pi_fixed_cost.cu (one process, no NCCL) and pi_lib.cu (the library strong_scaling.py loads).
#pragma once
#include <cstdint>

__device__ __forceinline__ uint64_t finalise(uint64_t z) {  // splitmix64's output mixer
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ double next_unit(uint64_t &s) {  // 64-bit LCG step, mixed, 53 bits -> [0, 1)
    s = s * 2862933555777941757ULL + 3037000493ULL;
    return (double)(finalise(s) >> 11) * 0x1.0p-53;
}

__global__ void sample_kernel(unsigned long long *out, long long n, uint64_t seed) {
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long step = (long long)gridDim.x * blockDim.x;
    uint64_t s = finalise(seed + (uint64_t)first * 6364136223846793005ULL);
    unsigned long long inside = 0;
    for (long long k = first; k < n; k += step) {
        const double a = next_unit(s), b = next_unit(s);
        inside += (a * a + b * b <= 1.0);
    }
    out[first] = inside;
}
