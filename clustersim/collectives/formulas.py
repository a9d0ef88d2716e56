"""Closed-form collective costs and NCCL's tuning model (engine-free: no simpy here).

Two layers live in this module:

1. Textbook alpha-beta costs (Thakur, Rabenseifner & Gropp, IJHPCA 19(1) 2005; MPICH
   ``src/mpi/coll`` comments; Patarasuk & Yuan, JPDC 69(2) 2009) for ring, double binary
   tree, recursive halving-doubling, direct / pairwise all-to-all, hierarchical and
   in-network reduction, plus the bandwidth lower bounds they are tested against.
   ``alpha`` is seconds per step, ``B`` bytes/s per direction per GPU, ``S`` bytes.
2. NCCL's own model structure (``src/graph/tuning.cc`` at NVIDIA/nccl 5067797c, v2.30;
   numbers copied from the project's reference ``nccl-model.md`` sections 1.2-1.7):
   base and per-hop latencies per algorithm / protocol / hardware class, per-channel
   bandwidth caps, the channel search, LL/LL128/Simple factors, tree correction factors,
   and the mid-size channel throttling of ``enqueue.cc`` that produces the bandwidth ramp.

Sizes follow nccl-tests (``all_gather``/``reduce_scatter``: the whole all-rank buffer;
``all_to_all``: each rank's whole send buffer; ``send_recv``: what each rank sends).

>>> round(ring_all_reduce_time(8, 2**30, 1e-6, 100e9) * 1e3, 4)
18.8045
>>> busbw_factor("all_reduce", 8)
1.75
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clustersim.errors import ClusterSimError

OPS = ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
       "scatter", "gather", "send_recv", "barrier")
PROTOCOLS = ("ll", "ll128", "simple")
#: Algorithms the model knows (NCCL's plus textbook ones the flow layer can also run).
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "halving_doubling", "hierarchical", "direct",
              "pairwise", "p2p")


# ----------------------------------------------------------------------------------------------
# nccl-tests conventions
# ----------------------------------------------------------------------------------------------

def busbw_factor(op: str, n: int) -> float:
    """nccl-tests bus-bandwidth factor (``src/*.cu *GetBw``): busbw = algbw * factor.

    >>> busbw_factor("all_gather", 4), busbw_factor("send_recv", 8), busbw_factor("barrier", 8)
    (0.75, 1.0, 0.0)
    """
    check_op(op)
    if n < 1:
        raise ClusterSimError(f"rank count must be >= 1, got {n}", field="ranks")
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"):
        return (n - 1) / n
    if op == "barrier":
        return 0.0
    return 1.0


def algbw(size_bytes: float, time_s: float) -> float:
    """Algorithm bandwidth in bytes/s (nccl-tests: size / time).

    >>> algbw(2**30, 0.01) / 1e9  # 1 GiB in 10 ms: GB/s
    107.3741824
    """
    return size_bytes / time_s if time_s > 0 else 0.0


def check_op(op: str) -> str:
    """Validate an operation name (ClusterSimError listing the known ones).

    >>> check_op("all_reduce")
    'all_reduce'
    >>> check_op("allreduce")
    Traceback (most recent call last):
    ...
    clustersim.errors.ClusterSimError: op: unknown operation 'allreduce' (known: broadcast, reduce, all_reduce, all_gather, reduce_scatter, all_to_all, scatter, gather, send_recv, barrier)
    """
    if op not in OPS:
        raise ClusterSimError(f"unknown operation {op!r} (known: {', '.join(OPS)})", field="op")
    return op


# ----------------------------------------------------------------------------------------------
# Textbook alpha-beta costs
# ----------------------------------------------------------------------------------------------

def ring_all_reduce_time(n: int, S: float, alpha: float, B: float) -> float:
    """Ring all-reduce: ``2(n-1) alpha + 2(n-1)/n S/B``.

    Multi-channel rings (NCCL) split S over c channels of B/c each: the bandwidth term is
    unchanged and the step latency is paid once, since channels run concurrently; so B is
    the sum over channels (NCCL's ``busBw = nChannels * bw``).

    4 GPUs, 1 GB, 1 us per step, 100 GB/s per direction: 6 steps plus 1.5 S/B, in ms:

    >>> round(ring_all_reduce_time(4, 1e9, 1e-6, 100e9) * 1e3, 6)
    15.006
    """
    if n <= 1:
        return 0.0
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * S / B


def ring_all_gather_time(n: int, S: float, alpha: float, B: float) -> float:
    """Ring all-gather (S = whole gathered buffer): ``(n-1) alpha + (n-1)/n S/B``.

    Half the all-reduce's traffic and steps (in ms; same reduce-scatter):

    >>> round(ring_all_gather_time(4, 1e9, 1e-6, 100e9) * 1e3, 6)
    7.503
    """
    if n <= 1:
        return 0.0
    return (n - 1) * alpha + (n - 1) / n * S / B


ring_reduce_scatter_time = ring_all_gather_time


def ring_broadcast_time(n: int, S: float, alpha: float, B: float, chunks: int | None = None) -> float:
    """Pipelined chain broadcast/reduce with ``k`` chunks: ``(n-2+k)(alpha + S/(kB))``.

    Default ``k`` is the optimum ``sqrt((n-2) S / (alpha B))`` (MPICH bcast comments), which
    tends to ``S/B`` for large S.

    >>> round(ring_broadcast_time(2, 1e9, 1e-6, 100e9) * 1e3, 6)  # two ranks: one send, ms
    10.001
    >>> round(ring_broadcast_time(8, 1e9, 1e-6, 100e9) * 1e3, 2)  # 8 ranks, pipelined: near S/B = 10 ms
    10.5
    """
    if n <= 1:
        return 0.0
    if n == 2:
        return alpha + S / B
    if chunks is None:
        chunks = max(1, round(math.sqrt((n - 2) * S / (alpha * B)))) if alpha > 0 else 1 << 20
    k = chunks
    return (n - 2 + k) * (alpha + S / (k * B))


def tree_all_reduce_time(n: int, S: float, alpha: float, B: float) -> float:
    """Pipelined double-binary-tree all-reduce (Sanders, Speck & Traeff 2009; NCCL >= 2.4).

    Reduce up and broadcast down, pipelined, each of the two trees carrying S/2:
    latency ``2 ceil(log2 n) alpha``, bandwidth ``S/B`` (NCCL: algbw = busBw * 0.5 with the
    bus bandwidth of 2 links' worth, i.e. each node sends and receives S per direction).

    16 GPUs: 2 x 4 latency steps instead of the ring's 30 (in us, S = 1 MB):

    >>> round(tree_all_reduce_time(16, 1e6, 1e-6, 100e9) * 1e6, 6)
    18.0
    >>> round(ring_all_reduce_time(16, 1e6, 1e-6, 100e9) * 1e6, 6)
    48.75
    """
    if n <= 1:
        return 0.0
    return 2 * math.ceil(math.log2(n)) * alpha + S / B


def halving_doubling_all_reduce_time(n: int, S: float, alpha: float, B: float) -> float:
    """Rabenseifner all-reduce (recursive halving RS + recursive doubling AG).

    Power of two: ``2 log2(n) alpha + 2(n-1)/n S/B``; otherwise MPICH's
    ``(2 floor(log2 n) + 2) alpha + (2(p'-1)/p' + 2) S/B`` where the extra ranks fold in first.

    >>> round(halving_doubling_all_reduce_time(8, 1e9, 1e-6, 100e9) * 1e3, 6)  # ms
    17.506
    """
    if n <= 1:
        return 0.0
    lg = int(math.floor(math.log2(n)))
    if 1 << lg == n:
        return 2 * lg * alpha + 2 * (n - 1) / n * S / B
    p2 = 1 << lg
    return (2 * lg + 2) * alpha + (2 * (p2 - 1) / p2 + 2) * S / B


def recursive_doubling_all_gather_time(n: int, S: float, alpha: float, B: float) -> float:
    """Recursive-doubling all-gather (power of two): ``log2(n) alpha + (n-1)/n S/B``.

    >>> round(recursive_doubling_all_gather_time(8, 8e6, 1e-6, 100e9) * 1e6, 6)  # us
    73.0
    """
    if n <= 1:
        return 0.0
    return math.ceil(math.log2(n)) * alpha + (n - 1) / n * S / B


def pairwise_all_to_all_time(n: int, S: float, alpha: float, B: float) -> float:
    """Pairwise exchange all-to-all, S = each rank's whole send buffer: ``(n-1)(alpha + S/(n B))``.

    >>> round(pairwise_all_to_all_time(8, 8e6, 1e-6, 100e9) * 1e6, 6)  # us: 7 steps of 1 MB
    77.0
    """
    if n <= 1:
        return 0.0
    return (n - 1) * alpha + (n - 1) / n * S / B


def direct_all_to_all_time(n: int, S: float, alpha: float, B: float) -> float:
    """Direct all-to-all (all peers at once, NCCL grouped send/recv): ``alpha + (n-1)/n S/B``.

    >>> round(direct_all_to_all_time(8, 8e6, 1e-6, 100e9) * 1e6, 6)  # us: one latency, same bytes
    71.0
    """
    if n <= 1:
        return 0.0
    return alpha + (n - 1) / n * S / B


def hierarchical_all_reduce_time(nodes: int, g: int, S: float, alpha_i: float, B_i: float,
                                 alpha_o: float, B_o: float) -> float:
    """Intra reduce-scatter, inter all-reduce on S/g, intra all-gather (nccl-model.md section 4.4).

    ``2(g-1) alpha_i + 2(g-1)/g S/B_i + 2(N-1) alpha_o + 2(N-1)/N (S/g)/B_o``.

    4 nodes of 8 GPUs, 1 GB: NVLink at 450 GB/s inside, 50 GB/s NICs across, no latency (ms):

    >>> round(hierarchical_all_reduce_time(4, 8, 1e9, 0.0, 450e9, 0.0, 50e9) * 1e3, 4)
    7.6389
    """
    t = 0.0
    if g > 1:
        t += 2 * (g - 1) * alpha_i + 2 * (g - 1) / g * S / B_i
    if nodes > 1:
        t += 2 * (nodes - 1) * alpha_o + 2 * (nodes - 1) / nodes * (S / g) / B_o
    return t


def in_network_all_reduce_time(S: float, alpha: float, B: float) -> float:
    """In-network reduction (NVLS / SHARP): each GPU sends S and receives S once: ``alpha + S/B``.

    >>> round(in_network_all_reduce_time(1e9, 25e-6, 450e9) * 1e3, 4)  # ms
    2.2472
    """
    return alpha + S / B


def all_reduce_lower_bound(n: int, S: float, B: float) -> float:
    """Bandwidth lower bound of any point-to-point all-reduce: ``2(n-1)/n S/B`` (Patarasuk & Yuan 2009).

    >>> all_reduce_lower_bound(4, 1e9, 100e9)  # s: the ring reaches it as alpha -> 0
    0.015
    """
    return 2 * (n - 1) / n * S / B if n > 1 else 0.0


def all_gather_lower_bound(n: int, S: float, B: float) -> float:
    """All-gather / reduce-scatter bound ``(n-1)/n S/B`` (S = whole buffer).

    >>> all_gather_lower_bound(4, 1e9, 100e9)
    0.0075
    """
    return (n - 1) / n * S / B if n > 1 else 0.0


def lower_bound(op: str, n: int, S: float, B: float) -> float:
    """Bandwidth lower bound of ``op`` for a per-GPU bandwidth B (no in-network reduction).

    It is the nccl-tests bus factor times S/B: busbw can never exceed B.

    >>> lower_bound("all_reduce", 4, 1e9, 100e9) == all_reduce_lower_bound(4, 1e9, 100e9)
    True
    """
    return busbw_factor(op, n) * S / B if n > 1 else 0.0


# ----------------------------------------------------------------------------------------------
# NCCL's tuning model (src/graph/tuning.cc; nccl-model.md sections 1.2-1.7)
# ----------------------------------------------------------------------------------------------

PROTO_IDX = {"ll": 0, "ll128": 1, "simple": 2}
HW_IDX = {"nvlink": 0, "pcie": 1, "network": 2}

#: baseLatencies[algo][proto] in microseconds (tuning.cc:147-176, HEAD).
BASE_LAT_US = {
    "tree": (6.8, 14.0, 8.4),
    "ring": (6.6, 14.0, 8.4),
    "nvls": (0.0, 0.0, 0.0),
    "nvls_tree": (0.0, 0.0, 0.0),
}
#: hwLatencies[hw][algo][proto] in microseconds (tuning.cc:147-176, HEAD).
HW_LAT_US = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0, 0, 25.0), "nvls_tree": (0, 0, 25.0)},
    "pcie": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "nvls": (0, 0, 0), "nvls_tree": (0, 0, 0)},
    "network": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0, 0, 18.0), "nvls_tree": (0, 0, 20.9)},
}
#: getNetOverhead() on Intel x86 (tuning.cc:225-234), microseconds.
NET_OVERHEAD_US = 1.0

# Arch index: Volta 0, Ampere 1, Hopper 2, Blackwell 3. Columns: 1 node, 2 nodes, >= 3 nodes.
LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
PER_CH_MAX_RING_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
PER_CH_MAX_TREE_LL128 = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
PER_CH_MAX_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
PER_CH_MAX_NVLS_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)

#: treeCorrectionFactor[proto][log2(S/64)] (tuning.cc:623-628).
TREE_CORRECTION = (
    (1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1, 1),
    (1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1, 1),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)

#: Channel-search speeds (GB/s per channel), search.cc:1051-1067.
SPEEDS_INTRA = {2: (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3),
                3: (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18)}
SPEEDS_INTRA_OLD = (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3)
SPEEDS_INTER = {2: (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
                3: (96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12)}
MAX_SEARCH_CHANNELS = 32  # MAXCHANNELS/2 for the ring graph (init.cc:1175-1213)
MAX_EXEC_CHANNELS = 32    # ring/tree channels are duplicated x2 at connect time, capped (connect.cc:460)

#: NCCL's effective NVLink bandwidth per link, GB/s, by compute capability (topo.h:19-24).
NVLINK_BW_PER_LINK = {60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.1}
#: Line rate per NVLink per direction, GB/s (NVLink 3/4: 25, NVLink 5: 50); used to count links.
NVLINK_LINE_RATE = {3: 25.0, 4: 25.0, 5: 50.0}
#: NCCL's PCIe model divided by the line rate: x16 Gen5 is 16*240/80 = 48 GB/s of ~63 GB/s (topo.cc:651-657).
PCIE_NCCL_FRACTION = 48.0 / 63.0

#: Threads per channel (device.h:93-114) and per-thread byte thresholds (comm.h:49-51).
MAX_THREADS = {"ll": 512, "ll128": 640, "simple": 512}
THREAD_THRESHOLD = {"ll": 8, "ll128": 8, "simple": 64}
NVLS_THREADS = 640


def arch_index(sm: int) -> int:
    """NCCL's compute-capability index: Volta 0, Ampere 1, Hopper 2, Blackwell 3."""
    return 3 if sm >= 100 else 2 if sm >= 90 else 1 if sm >= 80 else 0


def nvlink_bw_per_link(sm: int) -> float:
    """NCCL's per-link NVLink bandwidth (GB/s) for a compute capability (topo.h)."""
    best = 20.0
    for cc in sorted(NVLINK_BW_PER_LINK):
        if sm >= cc:
            best = NVLINK_BW_PER_LINK[cc]
    return best


def search_channels(total_bw: float, speeds: tuple[float, ...], per_channel_max: float = math.inf,
                    nic_bw: float = math.inf, nics: int = 1, max_channels: int = MAX_SEARCH_CHANNELS
                    ) -> tuple[int, float]:
    """Emulate NCCL's channel search: the (channels, GB/s per channel) with the most total bandwidth.

    Every channel consumes its speed on the GPU's links (``n * s <= total_bw``) and, across
    nodes, on one NIC (``ceil(n / nics) * s <= nic_bw``); speeds are tried highest first
    (``s <= per_channel_max``, NCCL's ``system->maxBw``) and a tie keeps the faster channel
    (search.cc:1150-1290). Returns ``(0, 0.0)`` when no speed fits.

    >>> search_channels(370.8, SPEEDS_INTRA[2], 370.8)
    (6, 60)
    """
    best = (0, 0.0)
    for s in speeds:
        if s > per_channel_max + 1e-9:
            continue
        n = min(max_channels, int(math.floor(total_bw / s + 1e-9)))
        if nic_bw < math.inf:
            n = min(n, nics * int(math.floor(nic_bw / s + 1e-9)))
        if n >= 1 and n * s > best[0] * best[1] + 1e-9:
            best = (n, s)
    return best


def dup_channels(n: int, s: float, sm: int, nvls: bool = False) -> tuple[int, float]:
    """``ncclTopoDupChannels``: double the channels at half speed when ``s >= 25`` (search.cc:1036-1049)."""
    if nvls or s < 25 or (sm > 80 and s < 50 and n > 4):
        return n, s
    return min(MAX_SEARCH_CHANNELS, 2 * n), s / 2


def tree_correction(proto: str, S: float) -> float:
    """``treeCorrectionFactor`` for a Tree all-reduce of S bytes (1 outside 64 B..256 MiB)."""
    if S < 64:
        return 1.0
    i = int(math.log2(S / 64))
    if 0 <= i < 23:
        return TREE_CORRECTION[PROTO_IDX[proto]][i]
    return 1.0


def throttle_fraction(S: float, channels: int, proto: str, n: int, algorithm: str, headroom: float = 1.0) -> float:
    """Fraction of the full bandwidth NCCL runs at for S bytes (``enqueue.cc`` topoGetAlgoInfo).

    ``while S < nc * nt * threshold: nc -= 1 (nc >= 2) else nt /= 2 (nt % 128 == 0)``, as its envelope. LL's
    threshold is per rank on rings (``x nRanks``). The achieved bandwidth scales with the
    channels and threads kept (NCCL's mid-size ramp) up to a cap of the whole call (``headroom``,
    :attr:`NcclAlgo.headroom`: LL's ``llMaxBw``). Without it a forced ring on 16 DGX H100 nodes ran LL at
    2 MiB in 1,131.6 us and LL128 at 4 MiB in 591.9 us.

    >>> throttle_fraction(2**21, 16, "ll", 128, "ring"), throttle_fraction(2**21, 16, "ll", 128, "ring", headroom=8.0)
    (0.25, 1.0)
    """
    nt0 = NVLS_THREADS if algorithm in ("nvls", "nvls_tree") else MAX_THREADS[proto]
    thr = THREAD_THRESHOLD[proto] * (n if proto == "ll" and algorithm == "ring" else 1)
    nc, nt = channels, nt0
    if S >= nc * nt * thr:
        return 1.0
    # the loop keeps thr..2 thr bytes per thread; its envelope at thr (where its steps land) is monotone in S
    # (no 2x saw in the bandwidth term); at least one channel of the fewest threads the loop reaches
    nt_min = nt
    while nt_min % 128 == 0:
        nt_min //= 2
    kept = max(nt_min, S / thr) / (channels * nt0)
    return min(1.0, kept * max(1.0, headroom))


@dataclass(frozen=True)
class NcclContext:
    """What NCCL's tuner knows about a communicator (built by ``CollectiveModel``).

    Bandwidths are GB/s, latencies microseconds (NCCL's units).
    """

    n: int
    nodes: int
    ppn: int
    sm: int
    intra_hw: str                 # "nvlink" or "pcie"
    intra_bw: float               # per-GPU effective intra-node bandwidth (NCCL graph value), GB/s
    nic_bw: float                 # per-NIC effective bandwidth, GB/s (0 single node)
    nics: int                     # NICs used per node
    intra_hop_us: tuple[float, float, float] | None = None   # per-proto override of hwLat[intra][ring]
    inter_hop_us: tuple[float, float, float] | None = None   # per-proto override of hwLat[NET][ring]
    nvls: bool = False


@dataclass(frozen=True)
class NcclAlgo:
    """One (algorithm, protocol) cell of NCCL's table: latency (us) and algorithm bandwidth (GB/s)."""

    algorithm: str
    protocol: str
    lat_us: float
    algbw_GBps: float
    channels: int
    #: the channels' own rate over the cell's bandwidth: > 1 where a cap of the whole call (llMaxBw) bounds it
    headroom: float = 1.0

    def time_us(self, S: float, op: str, ctx: NcclContext) -> float:
        """``ncclTopoGetAlgoTime``: ``lat * latCount + S / (1000 * bw)`` with NCCL's corrections."""
        bw = self.algbw_GBps
        lat = self.lat_us
        if self.algorithm == "tree" and op == "all_reduce":
            bw *= tree_correction(self.protocol, S)
        if (self.algorithm == "ring" and self.protocol == "simple" and ctx.nodes > 1 and op == "all_reduce"
                and S / (self.channels * ctx.n) >= 64):
            lat *= 1.9 if ctx.sm < 80 else 1.4  # "plateau effect of ring"
        return lat + S / (1000.0 * bw)


def _nsteps(op: str, n: int) -> int:
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("all_gather", "reduce_scatter"):
        return n - 1
    return n


def nccl_graphs(ctx: NcclContext) -> dict[str, tuple[int, float]]:
    """Search-graph results per pattern: ``{"ring": (nCh, bw), "tree": ..., "nvls": ..., "nvls_inter": ...}``."""
    a = arch_index(ctx.sm)
    intra_speeds = SPEEDS_INTRA.get(a, SPEEDS_INTRA_OLD) if a >= 2 else SPEEDS_INTRA_OLD
    inter_speeds = SPEEDS_INTER.get(a, SPEEDS_INTER[2])
    out: dict[str, tuple[int, float]] = {}
    if ctx.nodes == 1:
        n, s = search_channels(ctx.intra_bw, intra_speeds, ctx.intra_bw)
        if n == 0:  # slower than every table speed: one channel at the link speed
            n, s = 1, ctx.intra_bw
        out["ring"] = dup_channels(n, s, ctx.sm)
        # NCCL forces the tree graph to the ring's channel count (init.cc:1175-1213); the tree's
        # per-channel speed is taken equal to the ring's (a chain loads each link direction once
        # per channel, as a ring does). The 2xH200 dump shows a faster tree graph (12 x 60 vs
        # 12 x 30) but one 2-GPU sample does not say how that scales, so it is not used.
        out["tree"] = out["ring"]
    else:
        total = min(ctx.intra_bw if ctx.ppn > 1 else math.inf, ctx.nics * ctx.nic_bw)
        n, s = search_channels(total, inter_speeds, ctx.nic_bw, nic_bw=ctx.nic_bw, nics=max(1, ctx.nics))
        if n == 0:
            n, s = 1, min(ctx.nic_bw, ctx.intra_bw if ctx.ppn > 1 else math.inf)
        out["ring"] = dup_channels(n, s, ctx.sm)
        out["tree"] = out["ring"]
    if ctx.nvls and ctx.intra_hw == "nvlink" and ctx.ppn >= 2 and a >= 2:
        nch = min(32, ctx.ppn)  # NVLS graph: one channel per local GPU (search.cc:1124-1137)
        s = 0.0
        for sp in intra_speeds:
            if nch * sp <= ctx.intra_bw + 1e-9:
                s = sp
                break
        out["nvls"] = (nch, s)
        if ctx.nodes > 1:
            s_in = 0.0
            for sp in inter_speeds:
                if nch * sp <= ctx.nics * ctx.nic_bw + 1e-9 and sp <= ctx.nic_bw + 1e-9:
                    s_in = sp
                    break
            out["nvls_inter"] = (nch, s_in)
    return out


def nccl_table(op: str, ctx: NcclContext) -> list[NcclAlgo]:
    """NCCL's enabled (algorithm, protocol) cells for ``op`` (``ncclTopoTuneModel``, tuning.cc:243-437)."""
    n, nodes, ppn = ctx.n, ctx.nodes, ctx.ppn
    a = arch_index(ctx.sm)
    idx2 = 0 if nodes == 1 else 1 if nodes == 2 else 2
    g = nccl_graphs(ctx)
    nsteps = _nsteps(op, n)
    ll_max = LL_MAX_BW[a][0] if nodes == 1 else LL_MAX_BW[0][idx2]  # multi-node row = CPU vendor (Intel)
    out: list[NcclAlgo] = []
    algos = ["ring"]
    if op == "all_reduce":
        algos += ["tree", "nvls", "nvls_tree"]
    elif op in ("all_gather", "reduce_scatter") and nodes == 1:
        algos += ["nvls"]
    for algo in algos:
        if algo == "nvls" and ("nvls" not in g or nodes > 1):
            continue  # multi-node NVLS needs a CollNet/SHARP plugin (tuning.cc:497-540)
        if algo == "nvls_tree" and ("nvls" not in g or nodes == 1):
            continue
        if algo == "tree" and n <= 1:
            continue
        for proto in PROTOCOLS:
            if algo in ("nvls", "nvls_tree") and proto != "simple":
                continue
            p = PROTO_IDX[proto]
            # -- bandwidth
            if algo in ("nvls", "nvls_tree"):
                nch, s_in = g["nvls"]
                intra = s_in * NVLS_EFFICIENCY[a] * (nch - 1) / nch
                intra *= 2.0 if op == "all_reduce" else (ppn - 1) / ppn
                inter = math.inf
                if nodes > 1:
                    inter = g["nvls_inter"][1] * (2.0 if algo == "nvls_tree" and nodes <= 2 else 1.0)
                bw = min(intra, inter, PER_CH_MAX_NVLS_TREE[a][idx2] if algo == "nvls_tree" else math.inf)
                if nch < 2 or bw <= 0:
                    continue
                bus = chan_bus = nch * bw
            else:
                nch, s = g[algo]
                bus = nch * s
                chan_bus = bus  # the channels' own rate, above a cap of the whole call (headroom)
                if algo == "ring" and proto == "ll":
                    chan_bus = 0.5 * bus
                    bus = min(ll_max, chan_bus)
                elif algo == "ring" and proto == "ll128":
                    bus = min(0.92 * bus, nch * PER_CH_MAX_RING_LL128[a][idx2])
                elif algo == "tree":
                    base_bus = bus
                    bus = min(0.92 * base_bus, nch * PER_CH_MAX_TREE[a][idx2])
                    if proto == "ll":
                        chan_bus = base_bus / 3.8
                        bus = min(chan_bus, ll_max)
                    elif proto == "ll128":
                        bus = min(base_bus * (7 / 9 if nodes == 1 else 120 / 128),
                                  nch * PER_CH_MAX_TREE_LL128[a][idx2])
            if algo == "tree":
                alg = bus * 0.5
            elif algo == "ring" or (algo in ("nvls", "nvls_tree") and op == "all_reduce"):
                alg = bus * n / nsteps
            else:
                alg = bus  # non-ring RS/AG: no bus->alg conversion
            if alg <= 0:
                continue
            # -- latency
            intra_lat = (ctx.intra_hop_us[p] if ctx.intra_hop_us and algo in ("ring", "tree")
                         else HW_LAT_US[ctx.intra_hw][algo][p])
            net_algo = algo if ppn > 1 else "tree"
            inter_lat = (ctx.inter_hop_us[p] if ctx.inter_hop_us and algo in ("ring", "tree")
                         else HW_LAT_US["network"][net_algo][p])
            # NCCL adds graph.latencyInter (the NIC XML 'latency', usually 0) here, twice for Simple: not modelled
            lat = BASE_LAT_US[algo][p]
            if algo == "ring":
                if op in ("all_reduce", "all_gather", "reduce_scatter"):
                    if nodes > 1:
                        intra_lat = max(intra_lat, NET_OVERHEAD_US * (3 if proto == "simple" else 1))
                    n_inter = 0 if nodes == 1 else (2 * (nodes - 1) if op == "all_reduce" else nodes - 1)
                    lat += (nsteps - n_inter) * intra_lat + n_inter * inter_lat
                else:  # broadcast / reduce with sameChannels: one hop term
                    lat += inter_lat if nodes > 1 else intra_lat
            elif algo == "tree":
                lat += 2 * ((ppn - 1) * intra_lat + math.log2(nodes) * inter_lat)
            elif algo == "nvls":
                lat = intra_lat + (inter_lat if nodes > 1 else 0.0)
            elif algo == "nvls_tree":
                lat += intra_lat + 2 * math.log2(nodes) * inter_lat
            out.append(NcclAlgo(algorithm=algo, protocol=proto, lat_us=lat, algbw_GBps=alg, channels=nch,
                                headroom=max(1.0, chan_bus / bus)))
    return out


def exec_channels(cell: NcclAlgo) -> int:
    """Channels the kernel runs with: ring/tree search channels doubled at connect time (connect.cc:460)."""
    if cell.algorithm in ("nvls", "nvls_tree"):
        return cell.channels
    return min(MAX_EXEC_CHANNELS, 2 * cell.channels)
