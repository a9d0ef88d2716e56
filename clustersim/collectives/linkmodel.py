"""The link model: NCCL's cost structure with learned link parameters, evaluated (engine-free).

Owns the prediction of one collective call from a small set of learned physical
parameters and the topology's line rates; fitting them to measurements is
:mod:`clustersim.calibration.fit.linkmodel`'s job, and the simulator reads them from a
profile's ``link_model`` section (:func:`from_profile`, used by
:class:`clustersim.collectives.model.CollectiveModel`). The cost structure is NCCL's own
(``nccl-model.md`` §1.5-1.7). For the algorithm ``a`` (ring or tree) and protocol ``p``
(LL, LL128, Simple) a call runs with ::

    t = floor[op] + base[p] + steps_intra x lat_intra[p] + steps_inter x lat_inter[p]
        + bus_bytes / (op_eff[op] x min(intra_line x eff_intra[p], nics x net_line x eff_inter[p]))
        + (size / n) / local[op]

where the wire term of LL128 and Simple, ``w``, is stretched by the call's start-up: a call's channels
start at ``1 - D`` of their rate and reach it with time constant ``tau``, so the wire takes ``T`` with
``T = w + D tau (1 - exp(-T / tau))`` (:func:`startup_time`); ``D`` is learned per op on the rows'
rank counts as the depth of two ranks and taken as ``2 / n`` of it on ``n`` ranks. ``steps`` are the ring's step counts (all_reduce ``2(n-1)``, of which ``2(N-1)`` cross
nodes; all_gather / reduce_scatter / broadcast ``n-1``, ``N-1`` crossing; all_to_all and
send_recv one step, their peers served at once) or the tree's
(``2(g-1)`` intra, ``2 log2(N)`` inter, hop latencies times NCCL's tree/ring ratio, twice
the size over the link: §1.6, §1.5 step 5); ``bus_bytes`` is the size times the
nccl-tests bus factor; the last term is the rank's own chunk (an out-of-place copy or the
reduction of its chunk, through memory rather than a link). ``intra_line`` and
``net_line`` are the topology's line rates, so a what-if on the topology moves the
prediction; the efficiencies are what calibration learned.

Which ``(a, p)`` runs is NCCL's decision, taken from *NCCL's own* cost table
(:func:`~clustersim.collectives.ncclchoice.nccl_choice`, the topology's line rates and NCCL's
constants), not from the fitted times: NCCL switches where its table says, and the measured
time jumps there (2x H200 all_reduce: LL up to ~1.6 MiB, Simple from 2 MiB, 16.6 -> 30.5 us).
Where the table leaves LL, whether LL128 or Simple runs depends on the NCCL version and
topology, so the model takes the faster of the two cells (a smooth minimum); point-to-point ops
(all_to_all, send_recv) take the faster of LL and Simple. Across three or more nodes a cell's
bandwidth follows NCCL's own table from two nodes
(:func:`~clustersim.collectives.ncclchoice.node_bandwidth_factor`).

>>> m = LinkModel(ops=("all_reduce",), floor_us=np.array([2.0]), op_eff=np.array([1.0]),
...               base_us=np.array([6.6, 14.0, 8.4]), lat_intra_us=np.array([0.6, 1.9, 3.4]),
...               lat_inter_us=np.array([2.7, 4.0, 14.0]), eff_intra=np.array([0.4, 0.75, 0.8]),
...               eff_inter=np.array([0.4, 0.75, 0.8]), intra_line_GBps=450.0)
>>> [round(float(t)) for t in m.predict_us([{"op": "all_reduce", "ranks": 8, "nodes": 1, "size_bytes": 2**30}])]
[5175]
>>> e = m.estimate("all_reduce", 8, 1, 2**30, intra_line_GBps=225.0)   # half the line rate
>>> e.algorithm, e.protocol, round(e.time_us)
('ring', 'simple', 10232)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from clustersim.collectives.ncclchoice import ALGOS, PROTOS, nccl_choice, node_bandwidth_factor, p2p_channels
from clustersim.collectives import formulas as F
from clustersim.errors import ClusterSimError

__all__ = ["ALGOS", "PROTOS", "Design", "LinkEstimate", "LinkModel", "MODEL_OPS", "design", "from_profile"]

MODEL_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
#: ops whose rank also handles its own 1/n chunk locally (out-of-place copy into the output, or the
#: reduction of its own chunk): bytes ``size / n`` through the GPU's memory, not over a link
LOCAL_OPS = ("all_reduce", "all_gather", "reduce_scatter", "reduce", "all_to_all")
#: smooth-minimum sharpness over the protocols of a point-to-point op: 1/k-norm of times; k=12 is
#: within 6% of the minimum where two protocols tie and within 0.1% one factor of 2 away
SOFTMIN_K = 12.0
#: NCCL's tree hop latency relative to its ring hop, per link class and protocol (tuning.cc hwLat):
#: the fit learns the ring's hop and the tree keeps NCCL's ratio (NVLink Simple 4.0 / 3.4, NET LL 5.0 / 2.7)
TREE_RATIO_INTRA = tuple(t / r for t, r in zip(F.HW_LAT_US["nvlink"]["tree"], F.HW_LAT_US["nvlink"]["ring"]))
TREE_RATIO_INTER = tuple(t / r for t, r in zip(F.HW_LAT_US["network"]["tree"], F.HW_LAT_US["network"]["ring"]))
_TREE_INTRA, _TREE_INTER = np.array(TREE_RATIO_INTRA), np.array(TREE_RATIO_INTER)
#: starting rate (GB/s of chunk bytes) of an op's local work on its own chunk: a device-to-device copy
#: moves ~2.1 TB/s of copied bytes on H200 (tests/data/h200x2/gemm.jsonl d2d_copy, 4,195 GB/s read+write)
PRIOR_LOCAL_GBPS = 2000.0
#: the collectives of NCCL's table: its model moves their bus bytes at one bus bandwidth per link
#: and protocol (nCh x bw, tuning.cc), with no per-op efficiency, so theirs is fixed at 1 and what an
#: op takes beyond the wire is its own chunk's time; point-to-point ops (all_to_all, send_recv) are
#: not in that table and keep a fitted efficiency relative to the link
TABLE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
P2P_OPS = ("all_to_all", "send_recv")
#: starting values of the start-up transient (NCCL's cost model has none): a small depth and a 1 ms time constant.
#: Why it exists, measured (docs/calibration.md, "What the drift is"): NCCL's Simple protocol emulated without
#: NCCL on 2x H200 (validation/probes/nvlink-store-ramp/p2p_ramp/p2p_proto.cu, rounds 11-13) starts ~15% below the link on 24
#: channels exchanging both ways and reaches it over ~200 us (longer with the own chunk's copy), while one
#: direction and 8 channels run flat; NCCL's large-call lines start 94-209 us late on 2-4 H200 ranks
STARTUP_PRIOR_DEPTH = 0.05
STARTUP_PRIOR_US = 1000.0


def _bus_factor(op: np.ndarray, n: np.ndarray) -> np.ndarray:
    ar = 2.0 * (n - 1) / n
    part = (n - 1) / n
    return np.where(op == "all_reduce", ar, np.where(np.isin(op, ("all_gather", "reduce_scatter", "all_to_all")),
                                                     part, 1.0))


def _steps(op: np.ndarray, n: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sequential steps of one call: (intra-node steps, inter-node steps) (``nccl-model.md`` §1.6).

    Ring collectives step around the ring. Point-to-point ops take one step: all_to_all is a
    group of sends and receives to every peer that NCCL runs at once, not one after another.
    """
    ar = op == "all_reduce"
    p2p = np.isin(op, P2P_OPS)
    total = np.where(ar, 2.0 * (n - 1), n - 1.0)
    total = np.where(p2p, 1.0, total)
    inter = np.where(ar, 2.0 * (nodes - 1), nodes - 1.0)
    inter = np.where(p2p, np.minimum(nodes - 1.0, 1.0), inter)
    return total - inter, inter


@dataclass(frozen=True)
class Design:
    """The rows' structure, vectorised: what the model needs besides its parameters.

    ``exact``: rows whose (algorithm, protocol) was forced -- their ``choice`` cell is taken as it
    is, without the smooth minimum over LL128 / Simple.
    """

    op_index: np.ndarray
    size: np.ndarray
    bus_bytes: np.ndarray
    local_bytes: np.ndarray
    steps_intra: np.ndarray
    steps_inter: np.ndarray
    intra_line: np.ndarray
    net_line: np.ndarray
    multi_node: np.ndarray
    tree_intra: np.ndarray
    tree_inter: np.ndarray
    choice: np.ndarray
    node_factor: np.ndarray
    fixed_eff: np.ndarray
    exact: np.ndarray
    p2p_cap: np.ndarray
    ranks: np.ndarray


def design(rows: Sequence[dict[str, Any]], *, ops: Sequence[str], intra_line_GBps: float,
           net_line_GBps: float = 0.0, nics_per_node: int = 0, sm: int = 90, intra_hw: str = "nvlink",
           algorithm: str | None = None, protocol: str | None = None) -> Design:
    """Vectorised structure of ``rows`` (each with op, ranks, nodes, size_bytes).

    ``intra_line_GBps``: one GPU's line rate to its node (NVLink count x rate);
    ``net_line_GBps`` x ``nics_per_node``: the node's line rate to the network;
    ``sm``: the GPU's compute capability x 10 (NCCL's tables depend on it); ``algorithm`` /
    ``protocol``: a forced choice (``None``: NCCL's own).
    """
    op = np.array([r["op"] for r in rows])
    n = np.array([float(r.get("ranks") or 2) for r in rows])
    nodes = np.array([float(r.get("nodes") or 1) for r in rows])
    size = np.array([float(r["size_bytes"]) for r in rows])
    if np.any(nodes > 1) and (net_line_GBps <= 0 or nics_per_node <= 0):
        raise ClusterSimError("rows span several nodes: give the network line rate and NICs per node")
    index = {o: i for i, o in enumerate(ops)}
    unknown = sorted(set(op.tolist()) - set(index))
    if unknown:
        raise ClusterSimError(f"no model parameters for {', '.join(unknown)}")
    si, sx = _steps(op, n, nodes)
    choice = np.zeros(len(rows), dtype=int)
    node_factor = np.ones((len(rows), 3))
    exact = np.zeros(len(rows), dtype=bool)
    # a point-to-point op on one NVLink node moves its bytes on as many channels as NCCL's p2p schedule
    # gives it, each at NCCL's per-NVLink rate (20.6 GB/s on SM90; the 4-rank H200 send_recv log: 161 GB/s
    # on 8 channels = 20.1): bytes/s, inf where no cap applies
    p2p_cap = np.full(len(rows), np.inf)
    per_channel = F.nvlink_bw_per_link(sm) * 1e9
    lines = {"sm": sm, "intra_line_GBps": intra_line_GBps, "net_line_GBps": net_line_GBps,
             "nics_per_node": nics_per_node, "intra_hw": intra_hw}
    ctx = np.array([f"{o}|{int(a)}|{int(b)}" for o, a, b in zip(op, n, nodes)])
    for key in np.unique(ctx):
        m = ctx == key
        o, a, b = key.split("|")
        if o in P2P_OPS and protocol is not None:
            choice[m] = PROTOS.index(protocol)   # a forced protocol of a point-to-point op: that cell
            exact[m] = True
        else:
            choice[m] = nccl_choice(o, int(a), int(b), size[m], algorithm=algorithm, protocol=protocol, **lines)
            exact[m] = protocol is not None
        f = node_bandwidth_factor(o, int(a), int(b), **lines)
        node_factor[m] = f[np.maximum(choice[m], 0) // 3]
        if o in P2P_OPS:
            p2p_cap[m] = per_channel * p2p_channels(o, int(a), int(b), size[m], sm=sm, intra_line_GBps=intra_line_GBps,
                                                    intra_hw=intra_hw)

    return Design(
        op_index=np.array([index[o] for o in op], dtype=int), size=size, bus_bytes=size * _bus_factor(op, n),
        local_bytes=np.where(np.isin(op, LOCAL_OPS), size / n, 0.0),
        # no intra-node line (one GPU per node): nothing to bound the bandwidth on that side
        steps_intra=si, steps_inter=sx,
        intra_line=np.full(len(rows), intra_line_GBps * 1e9 if intra_line_GBps > 0 else np.inf),
        net_line=np.full(len(rows), max(net_line_GBps, 1e-9) * 1e9 * max(nics_per_node, 1)),
        multi_node=nodes > 1,
        # tree all_reduce: up and down the tree (nccl-model.md §1.6)
        tree_intra=2.0 * (n / nodes - 1), tree_inter=2.0 * np.log2(np.maximum(nodes, 1.0)),
        choice=choice, node_factor=node_factor, fixed_eff=np.isin(op, TABLE_OPS), exact=exact, p2p_cap=p2p_cap,
        ranks=n)


@dataclass(frozen=True)
class LinkEstimate:
    """One call as the link model predicts it, microseconds.

    ``latency_us``: what does not grow with the bytes on a link (launch floor, protocol base,
    per-step latencies) plus the rank's own-chunk work through memory; ``bandwidth_us``: the
    bus bytes over the link bandwidth (line rate x learned efficiency). The flow fidelity
    replays this split: the first as a wait, the second as flows on the links.
    """

    algorithm: str
    protocol: str
    latency_us: float
    bandwidth_us: float

    @property
    def time_us(self) -> float:
        """``latency_us + bandwidth_us``."""
        return self.latency_us + self.bandwidth_us


@dataclass
class LinkModel:
    """Learned parameters (microseconds, dimensionless efficiencies) and their fit's residuals.

    ``eff_*`` and ``lat_*`` are indexed by :data:`PROTOS`; ``floor_us``, ``op_eff`` and
    ``local_GBps`` by ``ops`` (``op_eff`` is 1 for the ops of NCCL's table, :data:`TABLE_OPS`).
    ``startup_depth`` (by ``ops``, the depth ``D`` on two ranks) and ``startup_us`` (``tau``) are the
    call's start-up transient (:func:`startup_time`); no transient: depth 0.
    ``residuals`` are the log-time residuals (model / measured - 1, approximately) at the fit rows.
    ``intra_line_GBps``, ``net_line_GBps``, ``nics_per_node``, ``sm`` and ``intra_class`` describe the
    hardware it was fitted on (the default line rates of :meth:`predict_us`).
    """

    ops: tuple[str, ...]
    floor_us: np.ndarray
    op_eff: np.ndarray
    base_us: np.ndarray
    lat_intra_us: np.ndarray
    lat_inter_us: np.ndarray
    eff_intra: np.ndarray
    eff_inter: np.ndarray
    intra_line_GBps: float
    net_line_GBps: float = 0.0
    nics_per_node: int = 0
    sm: int = 90
    local_GBps: np.ndarray | None = None
    residuals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    intra_class: str = "nvlink"
    startup_depth: np.ndarray | None = None
    startup_us: float = STARTUP_PRIOR_US

    def __post_init__(self) -> None:
        if self.local_GBps is None:
            self.local_GBps = np.full(len(self.ops), PRIOR_LOCAL_GBPS)
        if self.startup_depth is None:
            self.startup_depth = np.zeros(len(self.ops))

    def design(self, rows: Sequence[dict[str, Any]]) -> Design:
        """:func:`design` with this model's line rates."""
        return design(rows, ops=self.ops, intra_line_GBps=self.intra_line_GBps, net_line_GBps=self.net_line_GBps,
                      nics_per_node=self.nics_per_node, sm=self.sm, intra_hw=self.intra_class)

    def predict_us(self, rows: Sequence[dict[str, Any]]) -> np.ndarray:
        """Predicted time (us) of each row from the link model alone."""
        return np.exp(_log_time(self.vector(), self.design(rows), len(self.ops)))

    def estimate(self, op: str, ranks: int, nodes: int, size_bytes: float, *, intra_line_GBps: float,
                 net_line_GBps: float = 0.0, nics_per_node: int = 0, sm: int | None = None,
                 algorithm: str | None = None, protocol: str | None = None) -> LinkEstimate:
        """One call of ``op`` on ``ranks`` GPUs over ``nodes`` nodes with the given line rates (GB/s per direction).

        ``algorithm`` / ``protocol``: a forced choice (``None``: NCCL's own). The time equals
        :meth:`predict_us` of the same row on those line rates.
        """
        row = [{"op": op, "ranks": ranks, "nodes": nodes, "size_bytes": float(size_bytes)}]
        d = design(row, ops=self.ops, intra_line_GBps=intra_line_GBps, net_line_GBps=net_line_GBps,
                   nics_per_node=nics_per_node, sm=self.sm if sm is None else sm, intra_hw=self.intra_class,
                   algorithm=algorithm, protocol=protocol)
        lat, bw, col = _split(self.vector(), d, len(self.ops))
        c = int(col[0])
        algo = ALGOS[c // 3] if op not in P2P_OPS else ("direct" if op == "all_to_all" else "p2p")
        return LinkEstimate(algorithm=algo, protocol=PROTOS[c % 3], latency_us=float(lat[0]),
                            bandwidth_us=float(bw[0]))

    def vector(self) -> np.ndarray:
        """The parameters as the fit's unconstrained vector."""
        return np.concatenate([np.log(self.floor_us), np.log(self.op_eff), np.log(self.local_GBps),
                               np.log(self.base_us), np.log(self.lat_intra_us), np.log(self.lat_inter_us),
                               _logit(self.eff_intra), _logit(self.eff_inter), _logit(self.startup_depth),
                               [np.log(self.startup_us)]])

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers, for a report."""
        local = {o: round(float(v), 1) for o, v in zip(self.ops, self.local_GBps) if o in LOCAL_OPS}
        return {"floor_us": dict(zip(self.ops, np.round(self.floor_us, 3).tolist())),
                "op_efficiency": dict(zip(self.ops, np.round(self.op_eff, 4).tolist())),
                "local_GBps": local,
                "startup_depth": dict(zip(self.ops, np.round(self.startup_depth, 4).tolist())),
                "startup_us": round(float(self.startup_us), 1),
                "base_us": dict(zip(PROTOS, np.round(self.base_us, 3).tolist())),
                **{f"{cls}.{p}": {"latency_us": round(float(lat[i]), 3), "efficiency": round(float(eff[i]), 4)}
                   for cls, lat, eff in (("intra", self.lat_intra_us, self.eff_intra),
                                         ("network", self.lat_inter_us, self.eff_inter))
                   for i, p in enumerate(PROTOS)}}


def from_profile(section: Any) -> LinkModel:
    """The :class:`LinkModel` of a profile's ``link_model`` section (:class:`clustersim.config.profile.LinkModelParams`).

    A class the section does not hold (the network of a one-node fit) gets NCCL's constants
    here; the collective model does not use the link model for a communicator crossing it.

    >>> from clustersim.config.profile import LinkModelParams
    >>> p = {"efficiency": 0.8, "latency_us": 3.4}
    >>> s = LinkModelParams(links={"nvlink": {"ll": p, "ll128": p, "simple": p}},
    ...                     base_us={"ll": 6.6, "ll128": 14.0, "simple": 8.4},
    ...                     ops={"send_recv": {"floor_us": 2.0}},
    ...                     provenance={"rows": 10, "line_rates_GBps": {"nvlink": 450.0}})
    >>> m = from_profile(s)
    >>> m.intra_class, m.ops, float(m.eff_intra[2]), float(m.eff_inter[2])
    ('nvlink', ('send_recv',), 0.8, 0.8)
    """
    intra = section.intra_class
    net = section.links.get("network")
    ops = tuple(o for o in MODEL_OPS if o in section.ops)

    def arr(cls, attr, prior):
        return np.array([getattr(cls[p], attr) for p in PROTOS]) if cls is not None else np.array(prior, float)

    intra_cls = section.links.get(intra) if intra else None
    prior_eff = (0.4, 0.75, 0.8)
    return LinkModel(
        ops=ops, floor_us=np.array([section.ops[o].floor_us for o in ops]),
        op_eff=np.array([section.ops[o].op_efficiency for o in ops]),
        local_GBps=np.array([section.ops[o].local_GBps or PRIOR_LOCAL_GBPS for o in ops]),
        base_us=np.array([section.base_us[p] for p in PROTOS]),
        lat_intra_us=arr(intra_cls, "latency_us", F.HW_LAT_US[intra or "nvlink"]["ring"]),
        lat_inter_us=arr(net, "latency_us", F.HW_LAT_US["network"]["ring"]),
        eff_intra=arr(intra_cls, "efficiency", prior_eff), eff_inter=arr(net, "efficiency", prior_eff),
        startup_depth=np.array([section.ops[o].startup_depth for o in ops]), startup_us=float(section.startup_us),
        intra_line_GBps=float(section.provenance.line_rates_GBps.get(intra or "nvlink", 0.0) or 0.0),
        net_line_GBps=float(section.provenance.line_rates_GBps.get("network", 0.0) or 0.0),
        nics_per_node=int(section.provenance.nics_per_node or 0), intra_class=intra or "nvlink")


def _logit(x: np.ndarray) -> np.ndarray:
    x = np.clip(np.asarray(x, dtype=float), 1e-6, 1 - 1e-6)
    return np.log(x / (1 - x))


def _unpack(theta: np.ndarray, n_ops: int) -> tuple[np.ndarray, ...]:
    k = n_ops
    floor = np.exp(theta[:k])
    op_eff = np.exp(theta[k:2 * k])   # relative to the link's efficiency (NCCL: 1)
    local = np.exp(theta[2 * k:3 * k])
    k *= 3
    base, lat_i, lat_x = np.exp(theta[k:k + 3]), np.exp(theta[k + 3:k + 6]), np.exp(theta[k + 6:k + 9])
    eff_i = 1 / (1 + np.exp(-theta[k + 9:k + 12]))
    eff_x = 1 / (1 + np.exp(-theta[k + 12:k + 15]))
    return floor, op_eff, local, base, lat_i, lat_x, eff_i, eff_x


def _startup(theta: np.ndarray, n_ops: int) -> tuple[np.ndarray, float]:
    """(depth per op on two ranks, time constant us) of the start-up transient from the parameter vector."""
    k = 4 * n_ops + 15
    return 1 / (1 + np.exp(-theta[k - n_ops:k])), float(np.exp(theta[k]))


def startup_time(wire_us: np.ndarray, depth: np.ndarray, tau_us: float) -> np.ndarray:
    """Time (us) of a wire term ``wire_us`` whose channels start at ``1 - depth`` of their rate.

    The rate rises as ``1 - depth exp(-t / tau)``, so the bytes of ``wire_us`` at the full rate take
    ``T`` with ``T = wire_us + depth tau (1 - exp(-T / tau))``: ``wire_us / (1 - depth)`` for a short
    call, ``wire_us + depth tau`` for a long one. Solved by Newton's method from ``wire_us / (1 - depth)``,
    which lies at or above the root of this increasing convex equation, so the steps fall monotonically
    onto it (8 steps: to rounding).

    >>> [round(float(t), 2) for t in startup_time(np.array([1.0, 10000.0]), np.array([0.2, 0.2]), 100.0)]
    [1.25, 10020.0]
    >>> float(startup_time(np.array([5.0]), np.array([0.0]), 100.0)[0])
    5.0
    """
    w = np.asarray(wire_us, dtype=float)
    dep = np.clip(np.asarray(depth, dtype=float), 0.0, 0.99)
    t = w / (1 - dep)
    for _ in range(8):
        e = np.exp(-t / tau_us)
        t = t - (t - w - dep * tau_us * (1 - e)) / (1 - dep * e)
    return t


def _cells(theta: np.ndarray, d: Design, n_ops: int):
    """Every row under each protocol of the algorithm NCCL chose: (fixed us, wire us) as rows x 3,
    the smooth minimum's candidate columns, the time of the cell(s) that run, the floor and the own
    chunk (us)."""
    floor, op_eff, local, base, lat_i, lat_x, eff_i, eff_x = _unpack(theta, n_ops)
    p2p = d.choice < 0
    choice = np.where(p2p, 2, d.choice)
    tree = (choice // 3 == 1)[:, None]
    proto = choice % 3
    wire = np.where(tree[:, 0], 2.0 * d.size, d.bus_bytes)[:, None]     # tree moves 2S per GPU
    steps_i = np.where(tree[:, 0], d.tree_intra, d.steps_intra)[:, None]
    steps_x = np.where(tree[:, 0], d.tree_inter, d.steps_inter)[:, None]
    local_us = 1e6 * d.local_bytes / (local[d.op_index] * 1e9)
    # every row under each protocol (rows x 3), then the protocol NCCL runs
    bw = np.minimum(d.intra_line[:, None] * eff_i[None, :],
                    np.where(d.multi_node[:, None], d.net_line[:, None] * eff_x[None, :] * d.node_factor, np.inf))
    # the p2p channel cap binds Simple's wire only: LL moves 8-byte lines at its own, far lower efficiency
    bw = np.where(np.arange(3)[None, :] == 2, np.minimum(bw, d.p2p_cap[:, None]), bw)
    hop_i = lat_i[None, :] * np.where(tree, _TREE_INTRA[None, :], 1.0)
    hop_x = lat_x[None, :] * np.where(tree, _TREE_INTER[None, :], 1.0)
    fixed = base[None, :] + steps_i * hop_i + steps_x * hop_x
    wire_us = 1e6 * wire / (bw * np.where(d.fixed_eff, 1.0, op_eff[d.op_index])[:, None])
    # the start-up transient of LL128 and Simple (LL's calls are microseconds long): learned as the depth of
    # two ranks, 2 / n of it on n ranks (NCCL's large-call lines start 170 / 147 / 111 us late for all_reduce on
    # 2 / 3 / 4 H200 ranks, all_gather 197 / 152 / 94, reduce_scatter 209 / 187 / 129)
    depth, tau = _startup(theta, n_ops)
    dep = depth[d.op_index] * 2.0 / np.maximum(d.ranks, 2.0)
    wire_us[:, 1:] = startup_time(wire_us[:, 1:], dep[:, None], tau)   # LL's column stays as it is
    cells = fixed + wire_us   # us
    lt = np.log(cells)
    # where NCCL's table leaves LL, LL128 or Simple runs: which of the two is version- and topology-
    # dependent (LL128 enablement and its 0.92 / 7/9 factors changed between 2.18 and 2.28,
    # nccl-model.md §1.10), so the faster of the two fitted cells; point-to-point runs LL or Simple
    # (no LL128 path): the faster of those. Smooth minimum in logs: -1/k log sum exp(-k log t).
    cols = np.where(p2p[:, None], np.array([0, 2])[None, :], np.array([1, 2])[None, :])
    pair = np.where(p2p[:, None], lt[:, [0, 2]], lt[:, [1, 2]])
    m = pair.min(axis=1)
    soft = m - np.log(np.exp(-SOFTMIN_K * (pair - m[:, None])).sum(axis=1)) / SOFTMIN_K
    use_soft = (p2p | (proto > 0)) & ~d.exact
    t = np.where(use_soft, np.exp(soft), cells[np.arange(len(proto)), proto])
    return fixed, wire_us, cols, pair, use_soft, proto, choice, t, floor[d.op_index], local_us


def _log_time(theta: np.ndarray, d: Design, n_ops: int) -> np.ndarray:
    """log of the predicted time (us) of every row: floor + the cell NCCL chose + the local chunk."""
    *_, t, floor, local_us = _cells(theta, d, n_ops)
    return np.log(floor + t + local_us)


def _split(theta: np.ndarray, d: Design, n_ops: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(latency us, bandwidth us, cell index ``3 algorithm + protocol``) of every row.

    Where the smooth minimum decides, the faster cell's split is scaled to the smooth time
    (they differ by at most 6%, where two protocols tie).
    """
    fixed, wire_us, cols, pair, use_soft, proto, choice, t, floor, local_us = _cells(theta, d, n_ops)
    rows = np.arange(len(t))
    col = np.where(use_soft, cols[rows, pair.argmin(axis=1)], proto)
    ratio = t / (fixed[rows, col] + wire_us[rows, col])
    index = 3 * (choice // 3) + col
    return floor + fixed[rows, col] * ratio + local_us, wire_us[rows, col] * ratio, index


def _subset(d: Design, index: np.ndarray) -> Design:
    """The rows ``index`` of a design."""
    return Design(**{k: getattr(d, k)[index] for k in d.__dataclass_fields__})
