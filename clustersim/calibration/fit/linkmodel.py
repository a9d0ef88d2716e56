"""Link-level collective model fitted jointly over every operation, size and rank count.

Owns the step from many collective rows (any ops, rank counts, node counts) to one
small set of physical parameters, and the prediction those parameters make for an
(op, ranks, nodes, size) that was never measured. The cost structure is NCCL's own
(``nccl-model.md`` §1.5-1.7). For the algorithm ``a`` (ring or tree) and protocol ``p``
(LL, LL128, Simple) a call runs with ::

    t = floor[op] + base[p] + steps_intra x lat_intra[p] + steps_inter x lat_inter[p]
        + bus_bytes / (op_eff[op] x min(intra_line x eff_intra[p], nics x net_line x eff_inter[p]))
        + (size / n) / local[op]

``steps`` are the ring's step counts (all_reduce ``2(n-1)``, of which ``2(N-1)`` cross
nodes; all_gather / reduce_scatter / broadcast ``n-1``, ``N-1`` crossing; all_to_all and
send_recv one step, their peers served at once) or the tree's
(``2(g-1)`` intra, ``2 log2(N)`` inter, hop latencies times NCCL's tree/ring ratio, twice
the size over the link: §1.6, §1.5 step 5); ``bus_bytes`` is the size times the
nccl-tests bus factor; the last term is the rank's own chunk (an out-of-place copy or the
reduction of its chunk, through memory rather than a link).

Which ``(a, p)`` runs is NCCL's decision, taken from *NCCL's own* cost table
(:func:`~clustersim.calibration.fit.ncclchoice.nccl_choice`, the topology's line rates and NCCL's constants), not from the fitted
times: NCCL switches where its table says, and the measured time jumps there (2x H200
all_reduce: LL up to ~1.6 MiB, Simple from 2 MiB, 16.6 -> 30.5 us). Where the table leaves
LL, whether LL128 or Simple runs depends on the NCCL version and topology, so the model
takes the faster of the two fitted cells (a smooth minimum); point-to-point ops
(all_to_all, send_recv) take the faster of LL and Simple.

The learned quantities: per link class and protocol an efficiency of the topology's
line rate and a per-step latency, per protocol NCCL's base latency, and per operation
a launch floor (microseconds) and the rate of its local chunk work (GB/s); point-to-point ops
also a relative efficiency (the collectives of NCCL's table have none: one bus bandwidth per
link and protocol for all of them, ``op_eff = 1``). Across three or more nodes a cell's
bandwidth follows NCCL's own table from two nodes
(:func:`~clustersim.calibration.fit.ncclchoice.node_bandwidth_factor`). Fitted by least squares
in log-time (relative error) over all rows at once, with a weak pull towards NCCL's own constants so that a parameter the rows do
not determine (the network on a one-node data set, LL128 where no row ran it) stays at
NCCL's value.

:func:`refine` adds the exact measured points back: the model's log-residual at
the measured sizes of a measured (op, ranks, nodes) is interpolated in log-size,
so the prediction passes through the measurements there and is the link model's
everywhere else (other rank counts, other node counts).

>>> rows = [{"op": "all_reduce", "ranks": 2, "nodes": 1, "size_bytes": s,
...          "time_us": 10 + 2 * 1e-3 * s / 300} for s in 4.0 ** np.arange(5, 15)]
>>> fit = fit_link_model(rows, intra_line_GBps=450.0)
>>> bool(np.median(np.abs(fit.residuals)) < 0.05)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from clustersim.calibration.fit.ncclchoice import ALGOS, PROTOS, nccl_choice, node_bandwidth_factor
from clustersim.collectives import formulas as F
from clustersim.errors import ClusterSimError

__all__ = ["ALGOS", "PROTOS", "Design", "LinkModel", "design", "fit_link_model", "nccl_choice",
           "node_bandwidth_factor", "refine"]

MODEL_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
#: ops whose rank also handles its own 1/n chunk locally (out-of-place copy into the output, or the
#: reduction of its own chunk): bytes ``size / n`` through the GPU's memory, not over a link
LOCAL_OPS = ("all_reduce", "all_gather", "reduce_scatter", "reduce", "all_to_all")
#: smooth-minimum sharpness over the protocols of a point-to-point op: 1/k-norm of times; k=12 is
#: within 6% of the minimum where two protocols tie and within 0.1% one factor of 2 away
SOFTMIN_K = 12.0
#: NCCL's starting values (tuning.cc, nccl-model.md §1.2, §1.5): per-hop latency (us) of NVLink / NET
#: Ring for LL, LL128, Simple, and the protocol's data efficiency (LL 50% of the wire, LL128 120/128)
PRIOR_LAT_INTRA_US = F.HW_LAT_US["nvlink"]["ring"]
PRIOR_LAT_INTER_US = F.HW_LAT_US["network"]["ring"]
PRIOR_EFF = (0.4, 0.75, 0.8)
PRIOR_BASE_US = F.BASE_LAT_US["ring"]
#: NCCL's tree hop latency relative to its ring hop, per link class and protocol (tuning.cc hwLat):
#: the fit learns the ring's hop and the tree keeps NCCL's ratio (NVLink Simple 4.0 / 3.4, NET LL 5.0 / 2.7)
TREE_RATIO_INTRA = tuple(t / r for t, r in zip(F.HW_LAT_US["nvlink"]["tree"], F.HW_LAT_US["nvlink"]["ring"]))
TREE_RATIO_INTER = tuple(t / r for t, r in zip(F.HW_LAT_US["network"]["tree"], F.HW_LAT_US["network"]["ring"]))
_TREE_INTRA, _TREE_INTER = np.array(TREE_RATIO_INTRA), np.array(TREE_RATIO_INTER)
#: starting rate (GB/s of chunk bytes) of an op's local work on its own chunk: a device-to-device copy
#: moves ~2.1 TB/s of copied bytes on H200 (tests/data/h200x2/gemm.jsonl d2d_copy, 4,195 GB/s read+write)
PRIOR_LOCAL_GBPS = 2000.0
#: weight of the pull towards NCCL's constants relative to one row's log residual
PRIOR_WEIGHT = 0.05
#: the collectives of NCCL's table: its model moves their bus bytes at one bus bandwidth per link
#: and protocol (nCh x bw, tuning.cc), with no per-op efficiency, so theirs is fixed at 1 and what an
#: op takes beyond the wire is its own chunk's time; point-to-point ops (all_to_all, send_recv) are
#: not in that table and keep a fitted efficiency relative to the link
TABLE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")
#: the own-chunk rate's pull is 10x weaker: NCCL's model gives no value for it
LOCAL_PRIOR_SCALE = 0.1


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
    p2p = np.isin(op, ("send_recv", "all_to_all"))
    total = np.where(ar, 2.0 * (n - 1), n - 1.0)
    total = np.where(p2p, 1.0, total)
    inter = np.where(ar, 2.0 * (nodes - 1), nodes - 1.0)
    inter = np.where(p2p, np.minimum(nodes - 1.0, 1.0), inter)
    return total - inter, inter


@dataclass(frozen=True)
class Design:
    """The rows' structure, vectorised: what the model needs besides its parameters."""

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


def design(rows: Sequence[dict[str, Any]], *, ops: Sequence[str], intra_line_GBps: float,
           net_line_GBps: float = 0.0, nics_per_node: int = 0, sm: int = 90) -> Design:
    """Vectorised structure of ``rows`` (each with op, ranks, nodes, size_bytes).

    ``intra_line_GBps``: one GPU's line rate to its node (NVLink count x rate);
    ``net_line_GBps`` x ``nics_per_node``: the node's line rate to the network;
    ``sm``: the GPU's compute capability x 10 (NCCL's tables depend on it).
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
    ctx = np.array([f"{o}|{int(a)}|{int(b)}" for o, a, b in zip(op, n, nodes)])
    for key in np.unique(ctx):
        m = ctx == key
        o, a, b = key.split("|")
        choice[m] = nccl_choice(o, int(a), int(b), size[m], sm=sm, intra_line_GBps=intra_line_GBps,
                                net_line_GBps=net_line_GBps, nics_per_node=nics_per_node)
        f = node_bandwidth_factor(o, int(a), int(b), sm=sm, intra_line_GBps=intra_line_GBps,
                                  net_line_GBps=net_line_GBps, nics_per_node=nics_per_node)
        node_factor[m] = f[np.maximum(choice[m], 0) // 3]
    return Design(
        op_index=np.array([index[o] for o in op], dtype=int), size=size, bus_bytes=size * _bus_factor(op, n),
        local_bytes=np.where(np.isin(op, LOCAL_OPS), size / n, 0.0),
        steps_intra=si, steps_inter=sx, intra_line=np.full(len(rows), intra_line_GBps * 1e9),
        net_line=np.full(len(rows), max(net_line_GBps, 1e-9) * 1e9 * max(nics_per_node, 1)),
        multi_node=nodes > 1,
        # tree all_reduce: up and down the tree (nccl-model.md §1.6)
        tree_intra=2.0 * (n / nodes - 1), tree_inter=2.0 * np.log2(np.maximum(nodes, 1.0)),
        choice=choice, node_factor=node_factor, fixed_eff=np.isin(op, TABLE_OPS),
    )


@dataclass
class LinkModel:
    """Learned parameters (microseconds, dimensionless efficiencies) and their fit's residuals.

    ``eff_*`` and ``lat_*`` are indexed by :data:`PROTOS`; ``floor_us``, ``op_eff`` and
    ``local_GBps`` by ``ops`` (``op_eff`` is 1 for the ops of NCCL's table, :data:`TABLE_OPS`). ``residuals`` are the log-time residuals (model / measured - 1,
    approximately) at the fit rows.
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

    def __post_init__(self) -> None:
        if self.local_GBps is None:
            self.local_GBps = np.full(len(self.ops), PRIOR_LOCAL_GBPS)

    def design(self, rows: Sequence[dict[str, Any]]) -> Design:
        """:func:`design` with this model's line rates."""
        return design(rows, ops=self.ops, intra_line_GBps=self.intra_line_GBps, net_line_GBps=self.net_line_GBps,
                      nics_per_node=self.nics_per_node, sm=self.sm)

    def predict_us(self, rows: Sequence[dict[str, Any]]) -> np.ndarray:
        """Predicted time (us) of each row from the link model alone."""
        return np.exp(_log_time(self.vector(), self.design(rows), len(self.ops)))

    def vector(self) -> np.ndarray:
        """The parameters as the fit's unconstrained vector."""
        return np.concatenate([np.log(self.floor_us), np.log(self.op_eff), np.log(self.local_GBps),
                               np.log(self.base_us), np.log(self.lat_intra_us), np.log(self.lat_inter_us),
                               _logit(self.eff_intra), _logit(self.eff_inter)])

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers, for a profile or a report."""
        local = {o: round(float(v), 1) for o, v in zip(self.ops, self.local_GBps) if o in LOCAL_OPS}
        return {"floor_us": dict(zip(self.ops, np.round(self.floor_us, 3).tolist())),
                "op_efficiency": dict(zip(self.ops, np.round(self.op_eff, 4).tolist())),
                "local_GBps": local,
                "base_us": dict(zip(PROTOS, np.round(self.base_us, 3).tolist())),
                **{f"{cls}.{p}": {"latency_us": round(float(lat[i]), 3), "efficiency": round(float(eff[i]), 4)}
                   for cls, lat, eff in (("intra", self.lat_intra_us, self.eff_intra),
                                         ("network", self.lat_inter_us, self.eff_inter))
                   for i, p in enumerate(PROTOS)}}


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


def _log_time(theta: np.ndarray, d: Design, n_ops: int) -> np.ndarray:
    """log of the predicted time (us) of every row: floor + the cell NCCL chose + the local chunk."""
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
    hop_i = lat_i[None, :] * np.where(tree, _TREE_INTRA[None, :], 1.0)
    hop_x = lat_x[None, :] * np.where(tree, _TREE_INTER[None, :], 1.0)
    cells = (base[None, :] + steps_i * hop_i + steps_x * hop_x
             + 1e6 * wire / (bw * np.where(d.fixed_eff, 1.0, op_eff[d.op_index])[:, None]))   # us
    lt = np.log(cells)
    # where NCCL's table leaves LL, LL128 or Simple runs: which of the two is version- and topology-
    # dependent (LL128 enablement and its 0.92 / 7/9 factors changed between 2.18 and 2.28,
    # nccl-model.md §1.10), so the faster of the two fitted cells; point-to-point runs LL or Simple
    # (no LL128 path): the faster of those. Smooth minimum in logs: -1/k log sum exp(-k log t).
    pair = np.where(p2p[:, None], lt[:, [0, 2]], lt[:, [1, 2]])
    m = pair.min(axis=1)
    soft = m - np.log(np.exp(-SOFTMIN_K * (pair - m[:, None])).sum(axis=1)) / SOFTMIN_K
    t = np.where(p2p | (proto > 0), np.exp(soft), cells[np.arange(len(proto)), proto])
    return np.log(floor[d.op_index] + t + local_us)


def _prior(n_ops: int, floors: np.ndarray) -> np.ndarray:
    return np.concatenate([np.log(floors), np.zeros(n_ops), np.full(n_ops, math.log(PRIOR_LOCAL_GBPS)),
                           np.log(PRIOR_BASE_US), np.log(PRIOR_LAT_INTRA_US), np.log(PRIOR_LAT_INTER_US),
                           _logit(PRIOR_EFF), _logit(PRIOR_EFF)])


def fit_link_model(rows: Sequence[dict[str, Any]], *, intra_line_GBps: float, net_line_GBps: float = 0.0,
                   nics_per_node: int = 0, sm: int = 90, ops: Sequence[str] | None = None) -> LinkModel:
    """Fit the link model to collective rows (op, ranks, nodes, size_bytes, time_us) jointly.

    Least squares on ``log(model) - log(measured)`` over every row, plus a weak pull
    (:data:`PRIOR_WEIGHT`) of each parameter to NCCL's constant, so that protocol or
    link parameters the rows do not reach stay physical.
    """
    from scipy.optimize import least_squares  # scipy is a calibrate extra

    if not rows:
        raise ClusterSimError("no collective rows to fit the link model to")
    ops = tuple(ops or [o for o in MODEL_OPS if any(r["op"] == o for r in rows)])
    d = design(rows, ops=ops, intra_line_GBps=intra_line_GBps, net_line_GBps=net_line_GBps,
               nics_per_node=nics_per_node, sm=sm)
    y = np.log(np.array([float(r["time_us"]) for r in rows]))
    # starting floor of each op: its smallest measured time (the floor cannot be more)
    floors = np.array([float(np.exp(y[d.op_index == i].min())) * 0.3 for i in range(len(ops))])
    prior = _prior(len(ops), floors)
    w = np.full(len(prior), PRIOR_WEIGHT * math.sqrt(len(rows) / max(len(prior), 1)) / 10)
    w[2 * len(ops):3 * len(ops)] *= LOCAL_PRIOR_SCALE
    # rows of one (op, ranks, nodes, size) cell share a prediction: least squares on the cells' mean
    # log-time weighted by sqrt(count) has the same minimum and is ~7x cheaper on 10,000 rows
    key = np.stack([d.op_index, d.steps_intra, d.steps_inter, d.size, d.bus_bytes, d.local_bytes])
    _, first, inv, count = np.unique(key, axis=1, return_index=True, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    cells = _subset(d, first)
    y_cell = np.bincount(inv, weights=y) / count
    sw = np.sqrt(count)

    def resid(theta: np.ndarray) -> np.ndarray:
        return np.concatenate([sw * (_log_time(theta, cells, len(ops)) - y_cell), w * (theta - prior)])

    sol = least_squares(resid, prior, method="trf", x_scale=1.0, max_nfev=400)
    floor, op_eff, local, base, lat_i, lat_x, eff_i, eff_x = _unpack(sol.x, len(ops))
    return LinkModel(ops=ops, floor_us=floor, op_eff=op_eff, base_us=base, lat_intra_us=lat_i, lat_inter_us=lat_x,
                     eff_intra=eff_i, eff_inter=eff_x, intra_line_GBps=intra_line_GBps, net_line_GBps=net_line_GBps,
                     nics_per_node=nics_per_node, sm=sm, local_GBps=local,
                     residuals=_log_time(sol.x, d, len(ops)) - y)


def _subset(d: Design, index: np.ndarray) -> Design:
    """The rows ``index`` of a design."""
    return Design(**{k: getattr(d, k)[index] for k in d.__dataclass_fields__})


def _context(r: dict[str, Any]) -> tuple:
    return (r["op"], int(r.get("ranks") or 2), int(r.get("nodes") or 1))


def refine(model: LinkModel, fit_rows: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]]) -> np.ndarray:
    """Predicted time (us) of ``rows``: the link model, corrected at measured (op, ranks, nodes) contexts.

    For a context of ``fit_rows`` the log-residual (measured / model) at its sizes is
    interpolated linearly in log-size (held constant beyond the measured range); a
    context without measurements gets the link model alone.
    """
    pred = model.predict_us(rows)
    if not fit_rows:
        return pred
    base = model.predict_us(fit_rows)
    by_ctx: dict[tuple, list[tuple[float, float]]] = {}
    for r, b in zip(fit_rows, base):
        by_ctx.setdefault(_context(r), []).append((math.log(float(r["size_bytes"])),
                                                   math.log(float(r["time_us"]) / b)))
    out = pred.copy()
    for i, r in enumerate(rows):
        pts = by_ctx.get(_context(r))
        if not pts:
            continue
        pts.sort()
        xs = np.array([p[0] for p in pts])
        ys = np.array([p[1] for p in pts])
        # several rows of one size (repeats): interpolate their mean
        ux, inv = np.unique(xs, return_inverse=True)
        uy = np.bincount(inv, weights=ys) / np.bincount(inv)
        out[i] = pred[i] * math.exp(float(np.interp(math.log(float(r["size_bytes"])), ux, uy)))
    return out
