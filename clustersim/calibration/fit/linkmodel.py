"""Link-level collective model fitted jointly over every operation, size and rank count.

Owns the step from many collective rows (any ops, rank counts, node counts) to one
small set of physical parameters, and the prediction those parameters make for an
(op, ranks, nodes, size) that was never measured. The cost structure is NCCL's own
(``nccl-model.md`` §1.5-1.7): for each protocol ``p`` in LL, LL128, Simple ::

    t_p = floor[op] + base[p] + steps_intra x lat_intra[p] + steps_inter x lat_inter[p]
          + bus_bytes / (op_eff[op] x min(intra_line x eff_intra[p], nics x net_line x eff_inter[p]))

and, for an all_reduce across nodes, NCCL's tree as well (``2((g-1) lat_intra +
log2(N) lat_inter)`` latency, twice the size over the link: §1.6, §1.5 step 5);
NCCL runs the cheapest algorithm and protocol (a smooth minimum, so the fit has a gradient
at the switch points). ``steps`` are the ring's step counts (all_reduce ``2(n-1)``,
of which ``2(N-1)`` cross nodes; all_gather / reduce_scatter / all_to_all ``n-1``,
``N-1`` crossing), ``bus_bytes`` is the size times the nccl-tests bus factor.
The learned quantities: per link class and protocol an efficiency of the topology's
line rate and a per-step latency, per protocol NCCL's base latency, and per operation
a launch floor (microseconds) and a relative efficiency (a reduction or a broadcast
tree does not reach the copy rate of an all_gather; NCCL's pull is to 1).
Fitted by least squares in log-time (relative error) over all rows at once, with a
weak pull towards NCCL's own constants so that a parameter the rows do not
determine (the network on a one-node data set) stays at NCCL's value.

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

from clustersim.errors import ClusterSimError

PROTOS = ("ll", "ll128", "simple")
MODEL_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
#: NCCL's starting values (tuning.cc, nccl-model.md §1.2, §1.5): per-hop latency (us) of NVLink / NET
#: Ring for LL, LL128, Simple, and the protocol's data efficiency (LL 50% of the wire, LL128 120/128)
PRIOR_LAT_INTRA_US = (0.6, 1.9, 3.4)
PRIOR_LAT_INTER_US = (2.7, 4.0, 14.0)
PRIOR_EFF = (0.4, 0.75, 0.8)
PRIOR_BASE_US = (6.6, 14.0, 8.4)
#: smooth-minimum sharpness over the protocols: 1/k-norm of times; k=12 is within 6% of the minimum
#: where two protocols tie and within 0.1% one factor of 2 away
SOFTMIN_K = 12.0
#: weight of the pull towards NCCL's constants relative to one row's log residual
PRIOR_WEIGHT = 0.05


def _bus_factor(op: np.ndarray, n: np.ndarray) -> np.ndarray:
    ar = 2.0 * (n - 1) / n
    part = (n - 1) / n
    return np.where(op == "all_reduce", ar, np.where(np.isin(op, ("all_gather", "reduce_scatter", "all_to_all")),
                                                     part, 1.0))


def _steps(op: np.ndarray, n: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ring steps of one call: (intra-node steps, inter-node steps) (``nccl-model.md`` §1.6)."""
    ar = op == "all_reduce"
    total = np.where(ar, 2.0 * (n - 1), n - 1.0)
    total = np.where(op == "send_recv", 1.0, total)
    inter = np.where(ar, 2.0 * (nodes - 1), nodes - 1.0)
    inter = np.where(op == "send_recv", np.minimum(nodes - 1.0, 1.0), inter)
    return total - inter, inter


@dataclass(frozen=True)
class Design:
    """The rows' structure, vectorised: what the model needs besides its parameters."""

    op_index: np.ndarray
    size: np.ndarray
    bus_bytes: np.ndarray
    steps_intra: np.ndarray
    steps_inter: np.ndarray
    intra_line: np.ndarray
    net_line: np.ndarray
    multi_node: np.ndarray
    tree_intra: np.ndarray
    tree_inter: np.ndarray
    tree: np.ndarray


def design(rows: Sequence[dict[str, Any]], *, ops: Sequence[str], intra_line_GBps: float,
           net_line_GBps: float = 0.0, nics_per_node: int = 0) -> Design:
    """Vectorised structure of ``rows`` (each with op, ranks, nodes, size_bytes).

    ``intra_line_GBps``: one GPU's line rate to its node (NVLink count x rate);
    ``net_line_GBps`` x ``nics_per_node``: the node's line rate to the network.
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
    return Design(
        op_index=np.array([index[o] for o in op], dtype=int), size=size, bus_bytes=size * _bus_factor(op, n),
        steps_intra=si, steps_inter=sx, intra_line=np.full(len(rows), intra_line_GBps * 1e9),
        net_line=np.full(len(rows), max(net_line_GBps, 1e-9) * 1e9 * max(nics_per_node, 1)),
        multi_node=nodes > 1,
        # tree all_reduce (only across nodes: NCCL disables it in one node): up and down the tree
        tree_intra=2.0 * (n / nodes - 1), tree_inter=2.0 * np.log2(np.maximum(nodes, 1.0)),
        tree=(op == "all_reduce") & (nodes > 1),
    )


@dataclass
class LinkModel:
    """Learned parameters (microseconds, dimensionless efficiencies) and their fit's residuals.

    ``eff_*`` and ``lat_*`` are indexed by :data:`PROTOS`; ``floor_us`` by ``ops``.
    ``residuals`` are the log-time residuals (model / measured - 1, approximately) at the fit rows.
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
    residuals: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def design(self, rows: Sequence[dict[str, Any]]) -> Design:
        """:func:`design` with this model's line rates."""
        return design(rows, ops=self.ops, intra_line_GBps=self.intra_line_GBps, net_line_GBps=self.net_line_GBps,
                      nics_per_node=self.nics_per_node)

    def predict_us(self, rows: Sequence[dict[str, Any]]) -> np.ndarray:
        """Predicted time (us) of each row from the link model alone."""
        return np.exp(_log_time(self.vector(), self.design(rows), len(self.ops)))

    def vector(self) -> np.ndarray:
        """The parameters as the fit's unconstrained vector."""
        return np.concatenate([np.log(self.floor_us), np.log(self.op_eff), np.log(self.base_us),
                               np.log(self.lat_intra_us), np.log(self.lat_inter_us),
                               _logit(self.eff_intra), _logit(self.eff_inter)])

    def as_dict(self) -> dict[str, Any]:
        """Plain numbers, for a profile or a report."""
        return {"floor_us": dict(zip(self.ops, np.round(self.floor_us, 3).tolist())),
                "op_efficiency": dict(zip(self.ops, np.round(self.op_eff, 4).tolist())),
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
    k *= 2
    base, lat_i, lat_x = np.exp(theta[k:k + 3]), np.exp(theta[k + 3:k + 6]), np.exp(theta[k + 6:k + 9])
    eff_i = 1 / (1 + np.exp(-theta[k + 9:k + 12]))
    eff_x = 1 / (1 + np.exp(-theta[k + 12:k + 15]))
    return floor, op_eff, base, lat_i, lat_x, eff_i, eff_x


def _log_time(theta: np.ndarray, d: Design, n_ops: int) -> np.ndarray:
    """log of the predicted time (us) of every row: floor + smooth minimum over the protocols."""
    floor, op_eff, base, lat_i, lat_x, eff_i, eff_x = _unpack(theta, n_ops)
    bw_intra = d.intra_line[:, None] * eff_i[None, :]                     # bytes/s, rows x protocols
    bw_net = np.where(d.multi_node[:, None], d.net_line[:, None] * eff_x[None, :], np.inf)
    bw = np.minimum(bw_intra, bw_net) * op_eff[d.op_index][:, None]
    t = (base[None, :] + d.steps_intra[:, None] * lat_i[None, :] + d.steps_inter[:, None] * lat_x[None, :]
         + 1e6 * d.bus_bytes[:, None] / bw)                                # us
    if d.tree.any():
        tt = (base[None, :] + d.tree_intra[:, None] * lat_i[None, :] + d.tree_inter[:, None] * lat_x[None, :]
              + 1e6 * 2.0 * d.size[:, None] / bw)                         # us; tree moves 2S per GPU
        t = np.concatenate([t, np.where(d.tree[:, None], tt, np.inf)], axis=1)
    # smooth minimum over algorithms and protocols, in logs for stability: -1/k log sum exp(-k log t)
    lt = np.log(np.maximum(t, 1e-9))
    m = lt.min(axis=1)
    soft = m - np.log(np.exp(-SOFTMIN_K * (lt - m[:, None])).sum(axis=1)) / SOFTMIN_K
    return np.log(floor[d.op_index] + np.exp(soft))


def _prior(n_ops: int, floors: np.ndarray) -> np.ndarray:
    return np.concatenate([np.log(floors), np.zeros(n_ops), np.log(PRIOR_BASE_US), np.log(PRIOR_LAT_INTRA_US), np.log(PRIOR_LAT_INTER_US),
                           _logit(PRIOR_EFF), _logit(PRIOR_EFF)])


def fit_link_model(rows: Sequence[dict[str, Any]], *, intra_line_GBps: float, net_line_GBps: float = 0.0,
                   nics_per_node: int = 0, ops: Sequence[str] | None = None) -> LinkModel:
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
               nics_per_node=nics_per_node)
    y = np.log(np.array([float(r["time_us"]) for r in rows]))
    # starting floor of each op: its smallest measured time (the floor cannot be more)
    floors = np.array([float(np.exp(y[d.op_index == i].min())) * 0.3 for i in range(len(ops))])
    prior = _prior(len(ops), floors)
    w = np.full(len(prior), PRIOR_WEIGHT * math.sqrt(len(rows) / max(len(prior), 1)) / 10)
    # rows of one (op, ranks, nodes, size) cell share a prediction: least squares on the cells' mean
    # log-time weighted by sqrt(count) has the same minimum and is ~7x cheaper on 10,000 rows
    key = np.stack([d.op_index, d.steps_intra, d.steps_inter, d.size, d.bus_bytes])
    _, first, inv, count = np.unique(key, axis=1, return_index=True, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    cells = _subset(d, first)
    y_cell = np.bincount(inv, weights=y) / count
    sw = np.sqrt(count)

    def resid(theta: np.ndarray) -> np.ndarray:
        return np.concatenate([sw * (_log_time(theta, cells, len(ops)) - y_cell), w * (theta - prior)])

    sol = least_squares(resid, prior, method="trf", x_scale=1.0, max_nfev=400)
    floor, op_eff, base, lat_i, lat_x, eff_i, eff_x = _unpack(sol.x, len(ops))
    return LinkModel(ops=ops, floor_us=floor, op_eff=op_eff, base_us=base, lat_intra_us=lat_i, lat_inter_us=lat_x, eff_intra=eff_i,
                     eff_inter=eff_x, intra_line_GBps=intra_line_GBps, net_line_GBps=net_line_GBps,
                     nics_per_node=nics_per_node, residuals=_log_time(sol.x, d, len(ops)) - y)


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
