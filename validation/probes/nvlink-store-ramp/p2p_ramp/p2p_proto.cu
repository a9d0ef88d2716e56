// p2p_proto: a two-GPU emulation of NCCL's Simple protocol on NVLink, to find what makes its rate drift.
//
// Round 9 (p2p_ramp.cu) showed plain stores to a peer run flat at 363-371 GB/s per direction from 20 us on, while
// NCCL's ring all_gather on the same 24 SM channels drifts from ~244 to ~322 GB/s over a call's length. This adds
// NCCL's Simple protocol around the stores, one piece at a time: each channel (thread block) writes a slice into a
// FIFO slot on the peer, fences, bumps the peer's tail counter; the peer waits for the tail, copies the slot out to
// its output buffer and hands the slot back through a head counter that the sender waits on (SLOTS slots per
// channel, as NCCL_STEPS). Both GPUs send and receive at once (role bi, as a 2-rank all_gather), GPU 0 only sends
// and GPU 1 only receives (role uni, as a 2-rank broadcast), or every visible GPU sends to the next and receives
// from the previous (role ring, as an n-rank ring step; ring on 2 GPUs is bi). Every ~256 KiB a block stamps the
// global timer.
//
//   nvcc -O3 -arch=sm_90 -o p2p_proto p2p_proto.cu
//   ./p2p_proto ROLE CHANNELS MIB SLICE_KIB SLOTS FENCE [REPS] [OWN]
//
// ROLE bi | uni | ring; MIB: bytes each sender moves; FENCE 1: __threadfence_system before the tail (NCCL), 0: none.
// OWN 1: a sender also copies each slice it sends into its own output (an out-of-place all_gather's own chunk, which
// NCCL's ring copies in the same pass as it sends). One JSON row per repetition on stdout, in p2p_ramp.cu's form
// (summarize.py reads both).

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <algorithm>

#include "stamps.cuh"


typedef unsigned long long u64;
constexpr int PAD = 16;   // counters 128 bytes apart

// copy n16 words from s to d, and to d2 as well when it is not null
__device__ __forceinline__ void copy16(const int4* __restrict__ s, int4* __restrict__ d, size_t n16,
                                       int4* __restrict__ d2 = nullptr) {
  constexpr int U = 8;
  for (size_t i = threadIdx.x; i < n16; i += U * blockDim.x) {
    int4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      size_t j = i + (size_t)u * blockDim.x;
      if (j < n16) v[u] = s[j];
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      size_t j = i + (size_t)u * blockDim.x;
      if (j < n16) d[j] = v[u];
    }
    if (d2) {
#pragma unroll
      for (int u = 0; u < U; u++) {
        size_t j = i + (size_t)u * blockDim.x;
        if (j < n16) d2[j] = v[u];
      }
    }
  }
}

// send: 1 if this GPU sends, recv: 1 if it receives. fifo_peer / tail_peer live on the GPU this one sends to,
// head_peer on the one it receives from; fifo_mine / tail_mine / head_mine here (the sender to this GPU writes
// tail_mine, the receiver of this GPU's slices writes head_mine).
__global__ void proto_kernel(int send, int recv, const int4* __restrict__ input, int4* __restrict__ output,
                             int4* fifo_peer, const int4* fifo_mine, volatile u64* tail_peer, volatile u64* tail_mine,
                             volatile u64* head_peer, volatile u64* head_mine, int steps, size_t slice16, int slots,
                             int fence, int every, u64* stamps, int max_stamps, const volatile int* go,
                             int4* __restrict__ own) {
  const int c = blockIdx.x;
  if (threadIdx.x == 0) { while (*go == 0) { } }
  __syncthreads();
  u64* st = stamps + (size_t)c * max_stamps;
  if (threadIdx.x == 0) st[0] = gtimer();
  int k = 1;
  const int4* in = input + (size_t)c * steps * slice16;
  int4* out = output + (size_t)c * steps * slice16;
  int4* fp = fifo_peer + (size_t)c * slots * slice16;
  const int4* fm = fifo_mine + (size_t)c * slots * slice16;
  for (int i = 0; i < steps; i++) {
    int slot = i % slots;
    if (send) {
      if (threadIdx.x == 0) { while (head_mine[c * PAD] + slots <= (u64)i) { } }   // the peer freed the slot
      __syncthreads();
      copy16(in + (size_t)i * slice16, fp + (size_t)slot * slice16, slice16,
             own ? own + ((size_t)c * steps + i) * slice16 : nullptr);
      __syncthreads();
      if (threadIdx.x == 0) {
        if (fence) __threadfence_system();
        tail_peer[c * PAD] = (u64)i + 1;
      }
    }
    if (recv) {
      if (threadIdx.x == 0) { while (tail_mine[c * PAD] < (u64)i + 1) { } }   // the slice has landed
      __syncthreads();
      copy16(fm + (size_t)slot * slice16, out + (size_t)i * slice16, slice16);
      __syncthreads();
      if (threadIdx.x == 0) head_peer[c * PAD] = (u64)i + 1;
    }
    if (threadIdx.x == 0 && (i + 1) % every == 0 && k < max_stamps) st[k++] = gtimer();
  }
  if (threadIdx.x == 0 && k < max_stamps) st[k] = gtimer();
}

int main(int argc, char** argv) {
  if (argc < 7) {
    fprintf(stderr, "usage: %s ROLE CHANNELS MIB SLICE_KIB SLOTS FENCE [REPS]\n", argv[0]);
    return 2;
  }
  std::string role = argv[1];
  int C = atoi(argv[2]);
  double mib = atof(argv[3]);
  size_t slice = (size_t)atol(argv[4]) * 1024;
  int slots = atoi(argv[5]);
  int fence = atoi(argv[6]);
  int reps = argc > 7 ? atoi(argv[7]) : 3;
  int own_copy = argc > 8 ? atoi(argv[8]) : 0;
  if (role != "bi" && role != "uni" && role != "ring") { fprintf(stderr, "ROLE is bi, uni or ring\n"); return 2; }
  int ngpu = 0;
  CK(cudaGetDeviceCount(&ngpu));
  if (ngpu < 2) { fprintf(stderr, "needs 2 GPUs, found %d\n", ngpu); return 2; }
  int n = role == "ring" ? ngpu : 2;
  size_t bytes = (size_t)(mib * 1048576.0);
  int steps = (int)(bytes / C / slice);
  if (steps < 1) { fprintf(stderr, "MIB too small for %d channels of %zu-byte slices\n", C, slice); return 2; }
  size_t slice16 = slice / 16;
  int every = std::max(1, (int)((256 * 1024) / slice));   // a stamp every ~256 KiB a channel
  int max_stamps = steps / every + 4;

  int* go;
  CK(cudaHostAlloc(&go, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  int* go_dev;
  CK(cudaHostGetDevicePointer(&go_dev, go, 0));
  std::vector<int4*> in(n), out(n), fifo(n), own(n, nullptr);
  std::vector<u64*> tail(n), head(n), stamps(n);
  std::vector<cudaStream_t> stream(n);
  for (int g = 0; g < n; g++) {
    CK(cudaSetDevice(g));
    for (int p = 0; p < n; p++) {
      if (p == g) continue;
      cudaError_t e = cudaDeviceEnablePeerAccess(p, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CK(e);
      cudaGetLastError();
    }
    CK(cudaMalloc(&in[g], (size_t)C * steps * slice));
    CK(cudaMemset(in[g], 1, (size_t)C * steps * slice));
    CK(cudaMalloc(&out[g], (size_t)C * steps * slice));
    CK(cudaMalloc(&fifo[g], (size_t)C * slots * slice));
    if (own_copy) CK(cudaMalloc(&own[g], (size_t)C * steps * slice));
    CK(cudaMalloc(&tail[g], sizeof(u64) * C * PAD));
    CK(cudaMalloc(&head[g], sizeof(u64) * C * PAD));
    CK(cudaMalloc(&stamps[g], sizeof(u64) * C * max_stamps));
    CK(cudaStreamCreateWithFlags(&stream[g], cudaStreamNonBlocking));
  }
  std::vector<u64> host((size_t)C * max_stamps);
  for (int rep = 0; rep < reps; rep++) {
    *(volatile int*)go = 0;
    for (int g = 0; g < n; g++) {
      CK(cudaSetDevice(g));
      CK(cudaMemset(tail[g], 0, sizeof(u64) * C * PAD));
      CK(cudaMemset(head[g], 0, sizeof(u64) * C * PAD));
      CK(cudaMemset(stamps[g], 0, sizeof(u64) * C * max_stamps));
      CK(cudaDeviceSynchronize());
    }
    for (int g = 0; g < n; g++) {
      CK(cudaSetDevice(g));
      int send = role != "uni" || g == 0, recv = role != "uni" || g == 1;
      int next = (g + 1) % n, prev = (g + n - 1) % n;
      proto_kernel<<<C, 512, 0, stream[g]>>>(send, recv, in[g], out[g], fifo[next], fifo[g], tail[next], tail[g],
                                             head[prev], head[g], steps, slice16, slots, fence, every, stamps[g],
                                             max_stamps, go_dev, own[g]);
      CK(cudaGetLastError());
    }
    for (volatile int w = 0; w < 20000000; w++) { }
    *(volatile int*)go = 1;
    for (int g = 0; g < n; g++) { CK(cudaSetDevice(g)); CK(cudaStreamSynchronize(stream[g])); }
    printf("{\"mode\": \"proto-%s-f%d-s%d-o%d\", \"blocks\": %d, \"mib\": %.3f, \"stamp_kib\": %zu, \"fifo_kib\": %zu, "
           "\"rep\": %d, \"flows\": [", (role + std::to_string(role == "ring" ? n : 2)).c_str(), fence, slots, own_copy, C, mib,
           every * slice / 1024, slice / 1024, rep);
    for (int g = 0; g < n; g++) {
      CK(cudaSetDevice(g));
      CK(cudaMemcpy(host.data(), stamps[g], sizeof(u64) * host.size(), cudaMemcpyDeviceToHost));
      print_flow(g == 0, g, (g + 1) % n, (size_t)every * slice, (size_t)steps * slice, host, C, max_stamps);
    }
    printf("]}\n");
    fflush(stdout);
  }
  return 0;
}
