"""What NCCL's own tuning table decides for a communicator, from the topology's line rates.

Owns the link model's (:mod:`clustersim.collectives.linkmodel`) view of NCCL's choices (``tuning.cc`` as emulated by
:func:`clustersim.collectives.formulas.nccl_table`): which algorithm and protocol NCCL runs
for each size (:func:`nccl_choice`), and how NCCL's table changes a cell's bandwidth from two
nodes to more (:func:`node_bandwidth_factor`). Neither depends on fitted parameters: NCCL
decides with its constants, whatever the hardware really does.

>>> nccl_choice("all_reduce", 2, 1, np.array([2.0 ** 20, 2.0 ** 21]), sm=90, intra_line_GBps=450.0).tolist()
[0, 2]
"""

from __future__ import annotations

import math

import numpy as np

from clustersim.collectives import formulas as F

PROTOS = ("ll", "ll128", "simple")
#: NCCL's point-to-point chunk over NVLink (``NCCL_P2P_NVL_CHUNKSIZE``, 512 KiB, init.cc); ``addP2pToPlan``
#: (enqueue.cc) splits one peer's bytes into parts of at least chunk / 8 and at most 32 chunks on one node
P2P_NVL_CHUNK_BYTES = 512 * 1024
P2P_MIN_PART_CHUNKS = 1 / 8
P2P_MAX_PART_CHUNKS = 32
ALGOS = ("ring", "tree")
P2P_OPS = ("all_to_all", "send_recv")


def nccl_choice(op: str, ranks: int, nodes: int, sizes: np.ndarray, *, sm: int, intra_line_GBps: float,
                net_line_GBps: float = 0.0, nics_per_node: int = 0, intra_hw: str = "nvlink",
                algorithm: str | None = None, protocol: str | None = None) -> np.ndarray:
    """The (algorithm, protocol) NCCL runs for each size: index ``3 * ALGOS.index(a) + PROTOS.index(p)``.

    NCCL picks the cheapest cell of *its own* cost table (``tuning.cc``, built here by
    :func:`clustersim.collectives.formulas.nccl_table` from the topology's line rates and
    NCCL's constants), not the cell that is really fastest; where its table switches, the
    measured time jumps (2x H200 all_reduce: LL up to ~1.6 MiB, Simple above). The choice does
    not depend on the fitted parameters. Point-to-point ops (all_to_all, send_recv) are not in
    NCCL's table: they get ``-1``, the faster of LL and Simple in the fitted link model.
    NVLS is not modelled here. ``algorithm`` / ``protocol`` (a forced choice, as
    ``NCCL_ALGO`` / ``NCCL_PROTO`` do) keep only the table's cells of that algorithm or protocol.

    >>> [PROTOS[i % 3] for i in nccl_choice("all_reduce", 2, 1, np.array([2.0 ** 20, 2.0 ** 21]),
    ...                                     sm=90, intra_line_GBps=450.0)]
    ['ll', 'simple']
    """
    sizes = np.asarray(sizes, dtype=float)
    if op in P2P_OPS:
        return np.full(len(sizes), -1)
    ctx = nccl_context(ranks, nodes, sm, intra_line_GBps, net_line_GBps, nics_per_node, intra_hw)
    cells = [c for c in F.nccl_table(op, ctx) if c.algorithm in ALGOS
             and algorithm in (None, c.algorithm) and protocol in (None, c.protocol)]
    if not cells:
        a = ALGOS.index(algorithm) if algorithm in ALGOS else 0
        return np.full(len(sizes), 3 * a + PROTOS.index(protocol or "simple"))
    times = np.array([[c.time_us(float(S), op, ctx) for c in cells] for S in sizes])
    col = np.array([3 * ALGOS.index(c.algorithm) + PROTOS.index(c.protocol) for c in cells])
    return col[times.argmin(axis=1)]


def nccl_context(ranks: int, nodes: int, sm: int, intra_line_GBps: float, net_line_GBps: float,
                 nics_per_node: int, intra_hw: str = "nvlink") -> F.NcclContext:
    """What NCCL's tuner knows of a communicator, from the topology's line rates.

    NCCL's own bandwidth of the intra-node class: NVLink count x its per-link constant
    (20.6 GB/s of 25 on SM90), PCIe 48 of 63 GB/s (``topo.h``, ``topo.cc``).
    """
    if intra_hw == "pcie":
        intra_bw = intra_line_GBps * F.PCIE_NCCL_FRACTION
    else:
        per_link = F.NVLINK_LINE_RATE[5] if sm >= 100 else F.NVLINK_LINE_RATE[4]
        intra_bw = intra_line_GBps * F.nvlink_bw_per_link(sm) / per_link
    return F.NcclContext(n=ranks, nodes=nodes, ppn=max(1, ranks // max(nodes, 1)), sm=sm, intra_hw=intra_hw,
                         intra_bw=intra_bw,
                         nic_bw=net_line_GBps if nodes > 1 else 0.0, nics=nics_per_node if nodes > 1 else 0)


def _p2p_plan(op: str, ranks: int, nodes: int, sizes: np.ndarray, *, sm: int, intra_line_GBps: float,
              intra_hw: str) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """(channels per peer, bytes per peer, peers served at once, channel pool) of NCCL's p2p schedule on one
    NVLink node, or ``None`` where it is not modelled (several nodes, PCIe, collectives)."""
    if op not in P2P_OPS or nodes > 1 or intra_hw != "nvlink" or ranks < 2:
        return None
    ctx = nccl_context(ranks, nodes, sm, intra_line_GBps, 0.0, 0, intra_hw)
    ring = F.nccl_graphs(ctx)["ring"]
    pool = 1 << max(0, math.ceil(math.log2(max(1, min(F.MAX_EXEC_CHANNELS, 2 * ring[0])))))
    per_peer = pool
    start = per_peer
    while start * ranks > pool and start > 1:
        start //= 2
    min_part = P2P_NVL_CHUNK_BYTES * P2P_MIN_PART_CHUNKS
    max_part = P2P_NVL_CHUNK_BYTES * P2P_MAX_PART_CHUNKS
    peer_bytes = np.asarray(sizes, dtype=float) / (1 if op == "send_recv" else ranks)
    channels = np.empty(len(peer_bytes))
    for i, b in enumerate(peer_bytes):
        nc = min(start, max(1, math.ceil(b / min_part)))
        part = max(min_part, math.ceil(b / nc))
        while part > max_part and nc <= per_peer // 2:
            nc *= 2
            part = math.ceil(b / nc)
        channels[i] = nc
    return channels, peer_bytes, 1 if op == "send_recv" else ranks - 1, pool


def p2p_channels(op: str, ranks: int, nodes: int, sizes: np.ndarray, *, sm: int, intra_line_GBps: float,
                 intra_hw: str = "nvlink") -> np.ndarray:
    """Channels (thread blocks) one GPU drives for a point-to-point op on one NVLink node; ``inf``: no cap here.

    NCCL's p2p schedule (``scheduleP2pTasksToPlan`` / ``addP2pToPlan``, enqueue.cc): the p2p channel pool
    is the collective channel count rounded up to a power of two (24 on 2x H200 -> 32,
    ``profiles/measurements/h200x2/nccl_debug.log``: "32 p2p channels, 32 p2p channels per peer"); one peer's
    operation starts on ``32 / ranks`` of them (16 on 2 ranks, 8 on 4) and doubles them while a part
    would exceed 32 x 512 KiB = 16 MiB. ``send_recv`` serves one peer; ``all_to_all`` its ``ranks - 1``
    peers at once, each with ``size / ranks``, on at most the whole pool. Across nodes (network rules)
    and on PCIe the cap is not modelled (``inf``). Collectives: ``inf``.

    >>> p2p_channels("send_recv", 4, 1, np.array([2.0 ** 27, 2.0 ** 28]), sm=90, intra_line_GBps=450.0).tolist()
    [8.0, 16.0]
    >>> p2p_channels("send_recv", 2, 1, np.array([2.0 ** 20]), sm=90, intra_line_GBps=450.0).tolist()
    [16.0]
    """
    plan = _p2p_plan(op, ranks, nodes, sizes, sm=sm, intra_line_GBps=intra_line_GBps, intra_hw=intra_hw)
    if plan is None:
        return np.full(len(np.atleast_1d(sizes)), np.inf)
    channels, _, peers, pool = plan
    return np.minimum(float(pool), peers * channels)


def node_bandwidth_factor(op: str, ranks: int, nodes: int, *, sm: int, intra_line_GBps: float,
                          net_line_GBps: float = 0.0, nics_per_node: int = 0, intra_hw: str = "nvlink") -> np.ndarray:
    """NCCL's own change of a cell's bus bandwidth from two nodes to ``nodes``: rows (ring, tree) x protocols.

    NCCL's table caps some cells harder at three nodes and more than at two (``llMaxBws``
    39 -> 20.4 GB/s, Ampere ``perChMaxTreeBws`` 23.6 -> 17.8 per channel, ``tuning.cc``;
    nccl-model.md §1.3): in a double binary tree over three or more nodes a node forwards to two
    children. The learned network efficiencies are what two nodes reach; a prediction for more
    nodes follows NCCL's ratio. One node, two nodes and point-to-point ops: 1.

    >>> f = node_bandwidth_factor("all_reduce", 32, 4, sm=80, intra_line_GBps=300.0, net_line_GBps=25.0,
    ...                           nics_per_node=8)
    >>> [round(float(x), 3) for x in f[1]]          # tree LL, LL128, Simple
    [0.523, 1.0, 0.806]
    """
    out = np.ones((2, 3))
    if nodes <= 2 or op in P2P_OPS:
        return out
    ppn = max(1, ranks // nodes)

    def bus(n: int, nn: int) -> dict[tuple[str, str], float]:
        ctx = nccl_context(n, nn, sm, intra_line_GBps, net_line_GBps, nics_per_node, intra_hw)
        steps = {"all_reduce": 2 * (n - 1), "all_gather": n - 1, "reduce_scatter": n - 1}.get(op, n)
        return {(c.algorithm, c.protocol): c.algbw_GBps * (2.0 if c.algorithm == "tree" else steps / n)
                for c in F.nccl_table(op, ctx) if c.algorithm in ALGOS}

    here, two = bus(ranks, nodes), bus(2 * ppn, 2)
    for (a, p), b in here.items():
        if two.get((a, p), 0) > 0:
            out[ALGOS.index(a), PROTOS.index(p)] = b / two[(a, p)]
    return out
