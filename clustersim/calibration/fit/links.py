"""Link classes from collective fits: effective per-hop latency and bandwidth of nvlink, pcie, network.

Owns the link-class part of the profile that the fit can determine: a 2-rank
ring fit is one link's worth of traffic, so its smallest-size alpha divided by
the ring steps of one call is the per-hop latency, and its largest-size algbw
times the nccl-tests busbw factor is what one GPU's link carries per direction.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from clustersim.calibration.fit.profile_file import rounded
from clustersim.collectives.formulas import busbw_factor
from clustersim.config.profile import CollectiveEntry, LinkParams


def _nsteps(op: str, n: int) -> int:
    """Ring steps of one call (``nccl-model.md`` §1.5): latency terms per call."""
    if op == "all_reduce":
        return 2 * (n - 1)
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return n - 1
    return 1


def link_params_from(entry: CollectiveEntry) -> LinkParams:
    """Effective link parameters from a 2-rank (or n-rank ring) intra-node fit.

    Latency: the smallest-size regime's alpha divided by the ring steps of one
    call (2(n-1) for all_reduce, 1 for send_recv); bandwidth: the largest-size
    regime's algbw times the busbw factor (what one GPU's link carries per
    direction). Their intervals are scaled the same way.
    """
    n = entry.ranks or 2
    first, last = entry.segments[0], entry.segments[-1]
    steps = _nsteps(entry.op, n)
    f = busbw_factor(entry.op, n)
    lat_ci = (first.alpha_ci_us[0] / steps, first.alpha_ci_us[1] / steps) if first.alpha_ci_us else None
    bw_ci = (last.algbw_ci_GBps[0] * f, last.algbw_ci_GBps[1] * f) if last.algbw_ci_GBps else None
    return LinkParams(
        latency_us=rounded(first.alpha_us / steps), bandwidth_GBps=rounded(last.algbw_GBps * f),
        latency_ci_us=tuple(rounded(v) for v in lat_ci) if lat_ci else None,
        bandwidth_ci_GBps=tuple(rounded(v) for v in bw_ci) if bw_ci else None,
    )


def _link_class(entry: CollectiveEntry, intra_class: str) -> str | None:
    if entry.scope == "intra":
        return intra_class
    if entry.scope == "inter":
        return "network"
    return None


def links_from(entries: Sequence[CollectiveEntry], meta: dict[str, Any] | None = None) -> dict[str, LinkParams]:
    """Link classes determinable from the fits.

    Intra-node 2-rank NCCL-mode entries (send_recv preferred, else all_reduce)
    give ``nvlink`` -- or ``pcie`` when the meta row's ``topo_m`` (``nvidia-smi
    topo -m``) shows no ``NV<k>`` connection; 2-rank inter-node entries (one
    rank per node) give ``network``. Forced algorithms other than ring are not
    used (their step counts differ).
    """
    topo = str((meta or {}).get("topo_m") or "")
    intra = "pcie" if topo and not re.search(r"\bNV\d+\b", topo) else "nvlink"
    out: dict[str, LinkParams] = {}
    for op in ("send_recv", "all_reduce"):
        for e in entries:
            if e.op != op or e.ranks != 2 or e.mode != "nccl" or e.algorithm not in (None, "ring"):
                continue
            cls = _link_class(e, intra)
            if cls and cls not in out:
                out[cls] = link_params_from(e)
    return out
