// p2p_ramp: how fast SM stores reach a peer GPU over NVLink, over the time of one kernel.
//
// Why: NCCL's ring collectives on 2x H200 move bytes at a per-channel rate that rises with the length of
// the call (docs/calibration.md, "What the drift is"): all_gather 244 -> 279 GB/s of marginal bus bandwidth
// from 16 MiB to 1 GiB on 24 channels, flat on 8. This probe asks whether plain stores do the same,
// without NCCL: B thread blocks on each GPU copy their slice of a local buffer into a buffer on the peer,
// and every block stamps the GPU's global timer each time it has issued another `stamp` KiB. All GPUs
// start together on a flag in host memory. The rate of every time window, summed over blocks, is printed.
//
//   nvcc -O3 -arch=sm_90 -o p2p_ramp p2p_ramp.cu
//   ./p2p_ramp MODE BLOCKS MIB [STAMP_KIB] [FIFO_KIB] [REPS]
//
// MODE: uni (GPU 0 -> 1), bi (0 <-> 1 at once), ring (GPU i -> i+1 on every GPU), pairs (0 <-> 1, 2 <-> 3),
// local (each GPU copies within its own memory); MIB: bytes each sending GPU moves; FIFO_KIB > 0: each
// block writes into a window of that many KiB on the peer, over and over (NCCL's Simple protocol writes
// into a 4 MiB buffer per channel), instead of one contiguous span. One JSON row per repetition on stdout.

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <algorithm>

#include "stamps.cuh"


// Each block copies n16 int4 (16-byte) words starting at blockIdx.x * n16 of src into dst (same offset, or
// modulo fifo16 words of its own window), stamping the timer after every `every16` words.
__global__ void copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst, size_t n16, size_t every16,
                            size_t fifo16, unsigned long long* stamps, int max_stamps, const volatile int* go) {
  if (threadIdx.x == 0) {
    while (*go == 0) { }
  }
  __syncthreads();
  const int4* s = src + blockIdx.x * n16;
  int4* d = fifo16 ? dst + blockIdx.x * fifo16 : dst + blockIdx.x * n16;
  unsigned long long* st = stamps + (size_t)blockIdx.x * max_stamps;
  if (threadIdx.x == 0) st[0] = gtimer();
  int k = 1;
  for (size_t off = 0; off < n16; off += every16) {
    size_t end = off + every16 < n16 ? off + every16 : n16;
    // 8 loads in flight per thread before their stores (NCCL's copies unroll the same way): one load at a
    // time would make the block latency-bound (~8 KB per microsecond), far below what a link takes
    constexpr int U = 8;
    for (size_t i = off + threadIdx.x; i < end; i += U * blockDim.x) {
      int4 v[U];
#pragma unroll
      for (int u = 0; u < U; u++) {
        size_t j = i + (size_t)u * blockDim.x;
        if (j < end) v[u] = s[j];
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        size_t j = i + (size_t)u * blockDim.x;
        if (j < end) d[fifo16 ? j % fifo16 : j] = v[u];
      }
    }
    __syncthreads();
    if (threadIdx.x == 0 && k < max_stamps) st[k++] = gtimer();
  }
  if (threadIdx.x == 0) {
    __threadfence_system();
    if (k < max_stamps) st[k] = gtimer();   // after the fence: the stores have landed
  }
}

struct Flow { int from, to; };

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s MODE BLOCKS MIB [STAMP_KIB] [FIFO_KIB] [REPS]\n", argv[0]);
    return 2;
  }
  std::string mode = argv[1];
  int blocks = atoi(argv[2]);
  double mib = atof(argv[3]);
  size_t stamp_kib = argc > 4 ? atol(argv[4]) : 256;
  size_t fifo_kib = argc > 5 ? atol(argv[5]) : 0;
  int reps = argc > 6 ? atoi(argv[6]) : 3;
  int ngpu = 0;
  CK(cudaGetDeviceCount(&ngpu));
  std::vector<Flow> flows;
  if (mode == "uni") flows = {{0, 1}};
  else if (mode == "bi") flows = {{0, 1}, {1, 0}};
  else if (mode == "ring") for (int g = 0; g < ngpu; g++) flows.push_back({g, (g + 1) % ngpu});
  else if (mode == "pairs") flows = {{0, 1}, {1, 0}, {2, 3}, {3, 2}};
  else if (mode == "local") for (int g = 0; g < ngpu; g++) flows.push_back({g, g});
  else { fprintf(stderr, "unknown mode %s\n", mode.c_str()); return 2; }
  for (auto& f : flows) if (f.from >= ngpu || f.to >= ngpu) { fprintf(stderr, "mode %s needs more GPUs than %d\n", mode.c_str(), ngpu); return 2; }

  size_t bytes = (size_t)(mib * 1048576.0);
  size_t n16 = bytes / 16 / blocks;
  size_t every16 = stamp_kib * 1024 / 16;
  size_t fifo16 = fifo_kib * 1024 / 16;
  int max_stamps = (int)(n16 / every16) + 4;

  int* go;   // host flag every kernel spins on, so that all GPUs start together
  CK(cudaHostAlloc(&go, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  int* go_dev;
  CK(cudaHostGetDevicePointer(&go_dev, go, 0));

  std::vector<int4*> src(flows.size()), dst(flows.size());
  std::vector<unsigned long long*> stamps(flows.size());
  std::vector<cudaStream_t> streams(flows.size());
  for (size_t i = 0; i < flows.size(); i++) {
    auto f = flows[i];
    CK(cudaSetDevice(f.from));
    if (f.to != f.from) {
      int ok = 0;
      CK(cudaDeviceCanAccessPeer(&ok, f.from, f.to));
      if (!ok) { fprintf(stderr, "no peer access %d -> %d\n", f.from, f.to); return 3; }
      cudaError_t e = cudaDeviceEnablePeerAccess(f.to, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
      cudaGetLastError();
    }
    CK(cudaMalloc(&src[i], n16 * blocks * 16));
    CK(cudaMemset(src[i], 1, n16 * blocks * 16));
    CK(cudaMalloc(&stamps[i], sizeof(unsigned long long) * max_stamps * blocks));
    CK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    CK(cudaSetDevice(f.to));
    CK(cudaMalloc(&dst[i], (fifo16 ? fifo16 : n16) * blocks * 16));
  }
  std::vector<unsigned long long> host((size_t)max_stamps * blocks);
  for (int rep = 0; rep < reps; rep++) {
    *(volatile int*)go = 0;
    for (size_t i = 0; i < flows.size(); i++) {
      CK(cudaSetDevice(flows[i].from));
      CK(cudaMemsetAsync(stamps[i], 0, sizeof(unsigned long long) * max_stamps * blocks, streams[i]));
      copy_kernel<<<blocks, 512, 0, streams[i]>>>(src[i], dst[i], n16, every16, fifo16, stamps[i], max_stamps, go_dev);
      CK(cudaGetLastError());
    }
    // let every kernel reach its spin, then release them together
    for (volatile int w = 0; w < 20000000; w++) { }
    *(volatile int*)go = 1;
    for (size_t i = 0; i < flows.size(); i++) { CK(cudaSetDevice(flows[i].from)); CK(cudaStreamSynchronize(streams[i])); }
    printf("{\"mode\": \"%s\", \"blocks\": %d, \"mib\": %.3f, \"stamp_kib\": %zu, \"fifo_kib\": %zu, \"rep\": %d, \"flows\": [",
           mode.c_str(), blocks, mib, stamp_kib, fifo_kib, rep);
    for (size_t i = 0; i < flows.size(); i++) {
      CK(cudaSetDevice(flows[i].from));
      CK(cudaMemcpy(host.data(), stamps[i], sizeof(unsigned long long) * host.size(), cudaMemcpyDeviceToHost));
      print_flow(i == 0, flows[i].from, flows[i].to, every16 * 16, n16 * 16, host, blocks, max_stamps);
    }
    printf("]}\n");
    fflush(stdout);
  }
  return 0;
}
