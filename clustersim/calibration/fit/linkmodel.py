"""Fitting the link model jointly over every operation, size and rank count.

Owns the step from many collective rows (any ops, rank counts, node counts) to one
small set of physical parameters; the model itself -- NCCL's cost structure, which
(algorithm, protocol) NCCL's own table runs, and the prediction for an (op, ranks, nodes,
size) on given line rates -- is :mod:`clustersim.collectives.linkmodel`, which the
simulator evaluates from a profile's ``link_model`` section.

The learned quantities: per link class and protocol an efficiency of the topology's
line rate and a per-step latency, per protocol NCCL's base latency, per operation
a launch floor (microseconds), the rate of its local chunk work (GB/s) and the depth of its
start-up transient (with one time constant for all); point-to-point ops
also a relative efficiency (the collectives of NCCL's table have none: one bus bandwidth per
link and protocol for all of them, ``op_eff = 1``). Fitted by least squares
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
from typing import Any, Sequence

import numpy as np

from clustersim.collectives import formulas as F
from clustersim.collectives.linkmodel import (ALGOS, LOCAL_OPS, MODEL_OPS, PRIOR_LOCAL_GBPS, PROTOS, SOFTMIN_K,
                                              STARTUP_PRIOR_DEPTH, STARTUP_PRIOR_US, TABLE_OPS, Design, LinkModel,
                                              _log_time, _logit, _startup, _subset, _unpack, design)
from clustersim.collectives.ncclchoice import nccl_choice, node_bandwidth_factor
from clustersim.errors import ClusterSimError

__all__ = ["ALGOS", "LOCAL_OPS", "MODEL_OPS", "PROTOS", "SOFTMIN_K", "TABLE_OPS", "Design", "LinkModel", "design",
           "fit_link_model", "nccl_choice", "node_bandwidth_factor", "refine"]

#: NCCL's starting values (tuning.cc, nccl-model.md §1.2, §1.5): per-hop latency (us) of NVLink / NET
#: Ring for LL, LL128, Simple, and the protocol's data efficiency (LL 50% of the wire, LL128 120/128)
PRIOR_LAT_INTRA_US = F.HW_LAT_US["nvlink"]["ring"]
PRIOR_LAT_INTER_US = F.HW_LAT_US["network"]["ring"]
PRIOR_EFF = (0.4, 0.75, 0.8)
PRIOR_BASE_US = F.BASE_LAT_US["ring"]
#: weight of the pull towards NCCL's constants relative to one row's log residual
PRIOR_WEIGHT = 0.05
#: the own-chunk rate's pull is 10x weaker: NCCL's model gives no value for it
LOCAL_PRIOR_SCALE = 0.1
#: a link class's per-step latencies are held at NCCL's constants (a pull this much stronger) where the rows
#: cannot tell them from the ops' launch floors: every op crossing that class with one step count only
#: (one rank count on a node, one node count across nodes)
HOLD_PRIOR_SCALE = 1e4


def steps_identified(d: Design) -> tuple[bool, bool]:
    """Whether the rows determine the per-step latency of the intra-node and of the network class.

    A call's fixed time is ``floor[op] + base[p] + steps x latency[p]`` with a free floor per op, so
    the per-step latency is seen only through an op measured at two or more step counts on that
    class (two rank counts on a node; one and two nodes, or two node counts, across nodes): rows of
    one op share its floor. Otherwise any split between the floors and the steps fits the rows
    alike, and the fit keeps NCCL's latency.

    >>> rows = [{"op": "all_reduce", "ranks": n, "nodes": 1, "size_bytes": 1024.0} for n in (2, 4)]
    >>> steps_identified(design(rows, ops=("all_reduce",), intra_line_GBps=450.0))
    (True, False)
    >>> steps_identified(design(rows[:1], ops=("all_reduce",), intra_line_GBps=450.0))
    (False, False)
    """
    def seen(steps: np.ndarray, tree_steps: np.ndarray) -> bool:
        tree = (np.maximum(d.choice, 0) // 3 == 1) & (d.choice >= 0)
        eff = np.where(tree, tree_steps, steps)
        # an op's rows at two step counts on the class (none counts: one node against two) share its floor
        return any(len(np.unique(eff[d.op_index == i])) >= 2 for i in np.unique(d.op_index))
    return seen(d.steps_intra, d.tree_intra), seen(d.steps_inter, d.tree_inter)


def _prior(n_ops: int, floors: np.ndarray) -> np.ndarray:
    return np.concatenate([np.log(floors), np.zeros(n_ops), np.full(n_ops, math.log(PRIOR_LOCAL_GBPS)),
                           np.log(PRIOR_BASE_US), np.log(PRIOR_LAT_INTRA_US), np.log(PRIOR_LAT_INTER_US),
                           _logit(PRIOR_EFF), _logit(PRIOR_EFF), _logit(np.full(n_ops, STARTUP_PRIOR_DEPTH)),
                           [math.log(STARTUP_PRIOR_US)]])


#: the last fits by their inputs: a fit is a pure function of them and takes seconds (one process that fits the
#: same rows again -- a fit and then its report, a test module's fits of one log -- gets a copy of the first)
_FITS: dict[tuple, LinkModel] = {}
_FITS_KEPT = 8


def fit_link_model(rows: Sequence[dict[str, Any]], *, intra_line_GBps: float, net_line_GBps: float = 0.0,
                   nics_per_node: int = 0, sm: int = 90, ops: Sequence[str] | None = None,
                   intra_hw: str = "nvlink") -> LinkModel:
    """Fit the link model to collective rows (op, ranks, nodes, size_bytes, time_us) jointly.

    Least squares on ``log(model) - log(measured)`` over every row, plus a weak pull
    (:data:`PRIOR_WEIGHT`) of each parameter to NCCL's constant, so that protocol or
    link parameters the rows do not reach stay physical. The same inputs again give a copy of the
    first fit (the last :data:`_FITS_KEPT` are kept).
    """
    import copy

    key = (tuple((r["op"], r.get("ranks"), r.get("nodes"), float(r["size_bytes"]), float(r["time_us"]))
                 for r in rows), intra_line_GBps, net_line_GBps, nics_per_node, sm,
           tuple(ops) if ops is not None else None, intra_hw)
    hit = _FITS.get(key)
    if hit is None:
        hit = _fit_link_model(rows, intra_line_GBps=intra_line_GBps, net_line_GBps=net_line_GBps,
                              nics_per_node=nics_per_node, sm=sm, ops=ops, intra_hw=intra_hw)
        if len(_FITS) >= _FITS_KEPT:
            _FITS.pop(next(iter(_FITS)))
        _FITS[key] = hit
    return copy.deepcopy(hit)


def _fit_link_model(rows: Sequence[dict[str, Any]], *, intra_line_GBps: float, net_line_GBps: float,
                    nics_per_node: int, sm: int, ops: Sequence[str] | None, intra_hw: str) -> LinkModel:
    """:func:`fit_link_model` without the memo."""
    from scipy.optimize import least_squares  # scipy is a calibrate extra

    if not rows:
        raise ClusterSimError("no collective rows to fit the link model to")
    ops = tuple(ops or [o for o in MODEL_OPS if any(r["op"] == o for r in rows)])
    d = design(rows, ops=ops, intra_line_GBps=intra_line_GBps, net_line_GBps=net_line_GBps,
               nics_per_node=nics_per_node, sm=sm, intra_hw=intra_hw)
    y = np.log(np.array([float(r["time_us"]) for r in rows]))
    # starting floor of each op: its smallest measured time (the floor cannot be more)
    floors = np.array([float(np.exp(y[d.op_index == i].min())) * 0.3 for i in range(len(ops))])
    prior = _prior(len(ops), floors)
    w = np.full(len(prior), PRIOR_WEIGHT * math.sqrt(len(rows) / max(len(prior), 1)) / 10)
    w[2 * len(ops):3 * len(ops)] *= LOCAL_PRIOR_SCALE
    k = 3 * len(ops)
    intra_seen, inter_seen = steps_identified(d)
    if not intra_seen:
        w[k + 3:k + 6] *= HOLD_PRIOR_SCALE
    if not inter_seen:
        w[k + 6:k + 9] *= HOLD_PRIOR_SCALE
    # rows of one (op, ranks, nodes, size) cell share a prediction: least squares on the cells' mean
    # log-time weighted by sqrt(count) has the same minimum and is ~7x cheaper on 10,000 rows
    key = np.stack([d.op_index, d.steps_intra, d.steps_inter, d.size, d.bus_bytes, d.local_bytes,
                    np.where(np.isfinite(d.p2p_cap), d.p2p_cap, 0.0), d.ranks])
    _, first, inv, count = np.unique(key, axis=1, return_index=True, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    cells = _subset(d, first)
    y_cell = np.bincount(inv, weights=y) / count
    sw = np.sqrt(count)

    def resid(theta: np.ndarray) -> np.ndarray:
        return np.concatenate([sw * (_log_time(theta, cells, len(ops)) - y_cell), w * (theta - prior)])

    sol = least_squares(resid, prior, method="trf", x_scale=1.0, max_nfev=400)
    floor, op_eff, local, base, lat_i, lat_x, eff_i, eff_x = _unpack(sol.x, len(ops))
    depth, tau = _startup(sol.x, len(ops))
    return LinkModel(ops=ops, floor_us=floor, op_eff=op_eff, base_us=base, lat_intra_us=lat_i, lat_inter_us=lat_x,
                     eff_intra=eff_i, eff_inter=eff_x, intra_line_GBps=intra_line_GBps, net_line_GBps=net_line_GBps,
                     nics_per_node=nics_per_node, sm=sm, local_GBps=local, intra_class=intra_hw,
                     startup_depth=depth, startup_us=tau, residuals=_log_time(sol.x, d, len(ops)) - y)


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
