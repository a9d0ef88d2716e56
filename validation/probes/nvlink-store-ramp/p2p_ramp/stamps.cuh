// What p2p_ramp.cu and p2p_proto.cu share: the error check, the GPU's global timer, and one flow's JSON record
// (every block's stamps from the flow's first block, nanoseconds), which summarize.py reads.
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); exit(3); } } while (0)

__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One flow's record: ``stamps`` holds ``blocks`` x ``max_stamps`` timer values (0 past a block's last stamp).
inline void print_flow(bool first, int from, int to, size_t bytes_per_stamp, size_t bytes_per_block,
                       const std::vector<unsigned long long>& stamps, int blocks, int max_stamps) {
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < blocks; b++) t0 = std::min(t0, stamps[(size_t)b * max_stamps]);
  printf("%s{\"from\": %d, \"to\": %d, \"bytes_per_stamp\": %zu, \"bytes_per_block\": %zu, \"t_ns\": [",
         first ? "" : ", ", from, to, bytes_per_stamp, bytes_per_block);
  for (int b = 0; b < blocks; b++) {
    printf("%s[", b ? ", " : "");
    for (int k = 0; k < max_stamps; k++) {
      unsigned long long t = stamps[(size_t)b * max_stamps + k];
      if (k > 0 && t == 0) break;
      printf("%s%llu", k ? ", " : "", t - t0);
    }
    printf("]");
  }
  printf("]}");
}
