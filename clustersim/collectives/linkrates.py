"""Effective bandwidth of a communicator's link classes: the topology's line rate x a learned efficiency.

One source per fact (docs/calibration.md, "One source of bandwidth"): the topology holds the
line rates (NVLink count x rate, PCIe, NIC, fabric cable), the profile holds what calibration
learns per link class -- the achievable fraction of that line rate -- and a class the profile
leaves out uses NCCL's own constants, which are the same kind of fraction (``topo.h``: 20.6 GB/s
per 25 GB/s NVLink4 link on SM90, 20.0 on SM80; ``topo.cc``: PCIe x16 Gen5 48 of 63 GB/s; the NIC
at its line rate). Both fidelities read these numbers (the flow layer caps each flow at the
analytical rate and shares the topology's line rates), so any edit of a topology moves every
prediction that depends on it.

>>> from clustersim.topology import load_cluster
>>> c = load_cluster("dgx-h100", nodes=2)
>>> r = communicator_rates(c, {}, tuple(range(16)))   # NCCL constants: NIC 50, its PCIe path 63 x 48/63
>>> r.intra_hw, round(r.intra_bw, 1), r.intra_line, r.nic_bw, r.nics
('nvlink', 370.8, 450.0, 48.0, 8)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from clustersim.collectives import formulas as F

GB = 1e9


def nccl_efficiency(link_class: str, gpu_spec) -> float:
    """NCCL's own fraction of line rate for a link class (used where the profile has no entry).

    >>> from clustersim.config.topology import gpu_spec
    >>> round(nccl_efficiency("nvlink", gpu_spec("H100-SXM")), 3), nccl_efficiency("network", None)
    (0.824, 1.0)
    """
    if link_class == "nvlink":
        sm = gpu_spec.sm
        gen = gpu_spec.nvlink_generation or (5 if sm >= 100 else 4 if sm >= 90 else 3)
        return F.nvlink_bw_per_link(sm) / F.NVLINK_LINE_RATE.get(gen, 25.0)
    if link_class == "pcie":
        return F.PCIE_NCCL_FRACTION
    return 1.0  # NCCL's NIC model: speed/8000, the line rate (topo.cc:416-418)


def effective_GBps(links: Mapping, link_class: str, line_GBps: float, gpu_spec) -> float:
    """Effective per-direction GB/s of ``link_class`` on a path of ``line_GBps``: line rate x efficiency."""
    lp = links.get(link_class)
    if lp is not None:
        return lp.effective_GBps(line_GBps)
    if link_class == "nvlink":
        sm = gpu_spec.sm
        gen = gpu_spec.nvlink_generation or (5 if sm >= 100 else 4 if sm >= 90 else 3)
        # NCCL counts the links and multiplies by its per-link figure (topo.cc:811-857)
        return line_GBps / F.NVLINK_LINE_RATE.get(gen, 25.0) * F.nvlink_bw_per_link(sm)
    return line_GBps * nccl_efficiency(link_class, gpu_spec)


def entry_scale(links: Mapping, link_class: str, line_GBps: float) -> float:
    """Factor on a measured collective entry's bandwidth term on a path of ``line_GBps``.

    A profile entry was measured on the link class's ``line_rate_GBps``; on a topology whose
    bottleneck line rate of that class differs, the bandwidth time scales by
    ``measured line rate / line rate now`` (1.0 when the profile does not record the line rate).

    >>> from clustersim.config.profile import LinkParams
    >>> entry_scale({"nvlink": LinkParams(latency_us=3.4, efficiency=0.824, line_rate_GBps=450)}, "nvlink", 225.0)
    2.0
    """
    lp = links.get(link_class)
    if lp is None or lp.line_rate_GBps is None or not line_GBps or not math.isfinite(line_GBps):
        return 1.0
    return lp.line_rate_GBps / line_GBps


@dataclass(frozen=True)
class CommRates:
    """Link classes and bandwidths (GB/s per direction) of one communicator.

    ``nodes`` hosts with at most ``ppn`` of its ranks each;
    ``intra_*``: the slowest consecutive pair of one node's ring (class, effective bandwidth per
    GPU, its line rate); ``nic_bw``: effective bandwidth of one NIC (line rate x efficiency, bounded
    by the GPU-to-NIC PCIe path x the PCIe efficiency as NCCL's path bandwidth is); ``net_line``:
    the NIC's (or the crossed fabric cable's) line rate; ``nic_gpu``: one GPU's share of its NIC.
    """

    nodes: int
    ppn: int
    intra_hw: str
    intra_bw: float
    intra_line: float
    nic_bw: float
    net_line: float
    nics: int
    nic_gpu: float


def communicator_rates(cluster, links: Mapping, ranks: tuple[int, ...]) -> CommRates:
    """:class:`CommRates` of ``ranks`` on ``cluster`` with the profile's link classes ``links``."""
    c = cluster
    spec = c.gpu_spec
    rk = np.asarray(ranks)
    hosts = c.host_of[rk]
    counts = np.bincount(hosts)  # (np.unique would import numpy.ma on first use: ~30 ms)
    uh = np.flatnonzero(counts)
    counts = counts[uh]
    nodes, ppn = len(uh), int(counts.max())
    intra_hw, intra_bw, intra_line = "nvlink", math.inf, math.inf
    if ppn > 1:
        # the slowest consecutive pair of one node's ring decides (a 4-GPU PCIe server with
        # NVLink-bridged pairs runs its ring over PCIe between the pairs)
        h0 = int(uh[np.argmax(counts)])
        local = rk[hosts == h0].tolist()
        best = None
        for a, b in zip(local, local[1:] + local[:1]):
            cls = "nvlink" if c.path_class(a, b) == "nvlink" else "pcie"
            line = float(c.link_bandwidth[c.route(a, b)].min()) / GB
            eff = effective_GBps(links, cls, line, spec)
            if best is None or eff < best[1]:
                best = (cls, eff, line)
        intra_hw, intra_bw, intra_line = best
    nic_bw, net_line, nics, nic_gpu = 0.0, 0.0, 0, 0.0
    if nodes > 1:
        t = c.template
        locals_ = np.flatnonzero(np.bincount(c.local_of[rk])).tolist()
        rails = [t.rail[i] for i in locals_]
        nics = len(set(rails))
        net_line = c.network_line_rate(uh, rails) / GB
        nic_bw = effective_GBps(links, "network", net_line, spec)
        if c.gdr:
            # GPUDirect RDMA: NCCL's GPU->NET path bandwidth is the minimum over its links, the PCIe hop included
            pcie_line = min(c.nic_path_bandwidth(i) for i in locals_) / GB
            if math.isfinite(pcie_line):
                nic_bw = min(nic_bw, effective_GBps(links, "pcie", pcie_line, spec))
        else:
            # bounce buffer in host memory: the staged PCIe path bounds the NIC
            r0 = ranks[0]
            other = int(rk[np.argmax(hosts != c.host_of[r0])])
            path_line = float(c.link_bandwidth[c.route(r0, other)].min()) / GB
            nic_bw = min(nic_bw, effective_GBps(links, "pcie", path_line, spec))
        share = max(rails.count(r) for r in set(rails))
        nic_gpu = nic_bw / share
    return CommRates(nodes, ppn, intra_hw, intra_bw, intra_line, nic_bw, net_line, nics, nic_gpu)
