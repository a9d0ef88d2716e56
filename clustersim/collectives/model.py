"""Analytical collective cost on a :class:`~clustersim.topology.Cluster` (Contract 2; engine-free).

``CollectiveModel.estimate`` returns what nccl-tests would measure (NCCL-level time, no
framework overhead). Order of precedence:

1. the most specific matching :class:`~clustersim.config.profile.CollectiveEntry` of the
   profile (op, algorithm, protocol, ranks, scope; mode ``nccl``) whose segments cover the
   size: ``t = alpha + S / algbw``;
   The bandwidth term is scaled by the entry's bottleneck line rate at measurement over the
   line rate now (:func:`~clustersim.collectives.linkrates.entry_scale`);
2. otherwise, where the profile has a fitted ``link_model`` (:mod:`clustersim.collectives.linkmodel`)
   that learned every link class the communicator crosses, that model: NCCL's own choice of
   algorithm and protocol and NCCL's cost structure with the learned per-protocol efficiencies
   (of the topology's line rate) and latencies, per-op floors and own-chunk rates
   (``source: "link_model"``); a profile measured without NVLS does not answer for NVLS;
3. otherwise NCCL's tuning model (:mod:`clustersim.collectives.formulas`) fed with the
   profile's link classes (``links.nvlink|pcie|network``: per-hop latency, and efficiency
   times the topology's line rate, :mod:`clustersim.collectives.linkrates`) or, where the
   profile has none, NCCL's own constants (NVLink count x 20.6 GB/s on SM90, PCIe x 48/63,
   NIC line rate), plus the
   GPU-side kernel gap ``compute.kernel_launch_us`` that back-to-back nccl-tests
   iterations pay; the mid-size channel throttling scales the bandwidth term.

``algorithm="auto"`` picks the lowest predicted time among NCCL's algorithms (ring, tree,
NVLS, NVLSTree) as NCCL's tuner does; textbook algorithms (``halving_doubling``,
``hierarchical``, ``pairwise``) and the one-sided ``nvshmem`` all-to-all (GPU-initiated puts,
the MoE dispatch/combine of ``parallelism.ep_transport: nvshmem``) are used only when asked for.

>>> from clustersim.topology import load_cluster
>>> m = CollectiveModel(load_cluster("hgx-h200", gpus=2), None)
>>> r = m.estimate("all_reduce", 2, 2**30)
>>> r.algorithm, r.protocol, 300 < r.busbw_GBps < 370
('ring', 'simple', True)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from clustersim.collectives import formulas as F
from clustersim.collectives.linkmodel import TABLE_OPS as LINK_TABLE_OPS
from clustersim.collectives.linkmodel import from_profile as link_model_from_profile
from clustersim.collectives.linkrates import communicator_rates, entry_scale
from clustersim.config.profile import CollectiveEntry, Profile
from clustersim.errors import ClusterSimError

GB = 1e9
NCCL_ALGOS = ("ring", "tree", "nvls", "nvls_tree")
#: Algorithms each operation accepts (first = what ``auto`` considers besides NCCL's table).
OP_ALGOS = {
    "all_reduce": ("ring", "tree", "nvls", "nvls_tree", "halving_doubling", "hierarchical"),
    "all_gather": ("ring", "nvls", "halving_doubling"),
    "reduce_scatter": ("ring", "nvls", "halving_doubling"),
    "broadcast": ("ring",),
    "reduce": ("ring",),
    "all_to_all": ("direct", "pairwise", "nvshmem"),
    "scatter": ("direct",),
    "gather": ("direct",),
    "send_recv": ("p2p",),
    "barrier": ("ring", "tree", "nvls", "nvls_tree"),
}
ALIASES = {"nvlstree": "nvls_tree", "nvls-tree": "nvls_tree", "sharp": "nvls", "in_network": "nvls",
           "in-network": "nvls", "rabenseifner": "halving_doubling", "halving-doubling": "halving_doubling",
           "hd": "halving_doubling", "double_binary_tree": "tree"}


@dataclass
class CollectiveResult:
    """Predicted cost of one collective.

    ``time_s = latency_s + bandwidth_time_s``; the flow simulation replays exactly this split.
    """

    op: str
    gpus: int
    nodes: int
    size_bytes: int
    time_s: float
    algorithm: str
    protocol: str
    algbw_GBps: float
    busbw_GBps: float
    latency_s: float = 0.0
    bandwidth_time_s: float = 0.0
    channels: int = 0
    source: str = "model"   # "model" (NCCL-structured), "profile" (calibrated entry) or "link_model" (fitted)
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-able dict (``time_us`` added for convenience)."""
        d = asdict(self)
        d["time_us"] = self.time_s * 1e6
        if not d["extra"]:
            d.pop("extra")
        return d


@dataclass(frozen=True)
class _Ctx:
    ranks: tuple[int, ...]
    nccl: F.NcclContext
    scope: str
    intra_bw: float      # GB/s per GPU
    nic_gpu_bw: float    # GB/s per GPU share of its NIC
    hop_intra: tuple[float, float, float]
    hop_inter: tuple[float, float, float]
    intra_line: float = math.inf   # GB/s line rate of the intra-node bottleneck pair
    net_line: float = 0.0          # GB/s line rate of one NIC's path (0 on one node)


def normalise_algorithm(name: str | None) -> str:
    """Canonical algorithm name: lower case, aliases resolved, None -> ``"auto"``.

    >>> normalise_algorithm(" NVLSTree "), normalise_algorithm(None)
    ('nvls_tree', 'auto')
    """
    name = (name or "auto").strip().lower()
    return ALIASES.get(name, name)


class CollectiveModel:
    """NCCL-structured analytical collective model over a cluster and a profile.

    Parameters
    ----------
    cluster : clustersim.topology.Cluster
    profile : clustersim.config.profile.Profile or None
        Calibration profile (None: NCCL constants only).
    nvls : bool or None
        In-network reduction (NVLS / NVLSTree) on NVSwitch; None = ``profile.nvls``.
    p2p, gdr : bool
        GPU peer-to-peer and GPUDirect RDMA; off stages data through host memory.
    """

    def __init__(self, cluster, profile: Profile | None = None, nvls: bool | None = None,
                 p2p: bool = True, gdr: bool = True):
        self.profile = profile
        c = cluster
        if not p2p and getattr(c, "p2p", True):
            c = c.with_p2p(False)
        if not gdr and getattr(c, "gdr", True):
            c = c.with_gdr(False)
        self.cluster = c
        self.p2p, self.gdr = bool(p2p), bool(gdr)
        want = nvls if nvls is not None else (profile.nvls if profile is not None else False)
        self.nvls = bool(want) and bool(c.nvls_capable) and self.p2p
        self.launch_s = (profile.compute.kernel_launch_us if profile is not None else 4.0) * 1e-6
        self._ctx: dict[tuple[int, ...], _Ctx] = {}
        self._first: dict[int, tuple[int, ...]] = {}
        self._ctx_id: dict[int, _Ctx] = {}
        self._tables: dict[tuple, list] = {}
        section = profile.link_model if profile is not None else None
        self._link = link_model_from_profile(section) if section is not None else None
        self._link_cache: dict[tuple, tuple | None] = {}

    # -- context --------------------------------------------------------------------------
    def ranks_of(self, ranks: int | Sequence[int]) -> tuple[int, ...]:
        """Normalise ``ranks`` (a count = the first N ranks, or a list of rank ids)."""
        n_all = self.cluster.n_gpus
        if isinstance(ranks, tuple):
            hit = self._ctx_id.get(id(ranks))
            if hit is not None and hit.ranks is ranks:
                return ranks
        if isinstance(ranks, (int, np.integer)):
            n = int(ranks)
            if not 1 <= n <= n_all:
                raise ClusterSimError(f"ranks must be 1..{n_all} on this cluster, got {n}", field="ranks")
            hit = self._first.get(n)
            if hit is None:
                hit = self._first[n] = tuple(range(n))
            return hit
        out = tuple(int(r) for r in ranks)
        if not out:
            raise ClusterSimError("ranks is empty", field="ranks")
        if len(set(out)) != len(out):
            raise ClusterSimError("ranks has duplicates", field="ranks")
        known = self._ctx.get(out)
        if known is not None:
            return known.ranks  # the canonical tuple: later lookups are by identity, not by hashing
        for r in out:
            if not 0 <= r < n_all:
                raise ClusterSimError(f"rank {r} out of range (0..{n_all - 1})", field="ranks")
        return out

    def context(self, ranks: tuple[int, ...]) -> _Ctx:
        """Per-communicator facts (cached): nodes, GPUs per node, link classes and bandwidths."""
        hit = self._ctx_id.get(id(ranks))
        if hit is not None and hit.ranks is ranks:
            return hit
        hit = self._ctx.get(ranks)
        if hit is not None:
            return hit
        c = self.cluster
        sm = c.gpu_spec.sm
        links = self.profile.links if self.profile is not None else {}
        # effective bandwidth = the topology's line rate x the learned (or NCCL's) efficiency
        rates = communicator_rates(c, links, ranks)
        nodes, ppn = rates.nodes, rates.ppn
        intra_hw, intra_bw = rates.intra_hw, rates.intra_bw
        nic_bw, nics, nic_gpu = rates.nic_bw, rates.nics, rates.nic_gpu

        def hop(cls: str) -> tuple[float, float, float] | None:
            if cls not in links:
                return None
            simple = F.HW_LAT_US[cls]["ring"][2]
            lat = links[cls].latency_us
            return tuple(lat * F.HW_LAT_US[cls]["ring"][p] / simple for p in range(3))

        nctx = F.NcclContext(n=len(ranks), nodes=nodes, ppn=ppn, sm=sm, intra_hw=intra_hw,
                             intra_bw=intra_bw if math.isfinite(intra_bw) else 0.0, nic_bw=nic_bw, nics=nics,
                             intra_hop_us=hop(intra_hw), inter_hop_us=hop("network"), nvls=self.nvls)
        hi = nctx.intra_hop_us or F.HW_LAT_US[intra_hw]["ring"]
        ho = nctx.inter_hop_us or F.HW_LAT_US["network"]["ring"]
        ctx = _Ctx(ranks=ranks, nccl=nctx, scope="intra" if nodes == 1 else "inter", intra_bw=intra_bw,
                   nic_gpu_bw=nic_gpu, hop_intra=tuple(hi), hop_inter=tuple(ho),
                   intra_line=rates.intra_line, net_line=rates.net_line)
        self._ctx[ranks] = ctx
        self._ctx_id[id(ranks)] = ctx
        return ctx

    # -- profile entries ------------------------------------------------------------------
    def match_entry(self, op: str, algorithm: str, protocol: str, n: int, scope: str,
                    size: float) -> tuple[CollectiveEntry, object] | None:
        """Most specific profile entry (and its segment) covering ``size``; None if none."""
        if self.profile is None or not self.profile.collectives:
            return None
        best, best_key = None, -1
        for i, e in enumerate(self.profile.collectives):
            if e.op != op or e.mode != "nccl":
                continue
            if e.algorithm is not None and (algorithm == "auto" or normalise_algorithm(e.algorithm) != algorithm):
                continue
            if e.protocol is not None and (protocol == "auto" or e.protocol != protocol):
                continue
            if e.algorithm is None and algorithm != "auto":
                continue  # an entry measured with NCCL's own choice says nothing about a forced algorithm
            if e.protocol is None and protocol != "auto":
                continue
            if e.ranks is not None and e.ranks != n:
                continue
            if e.scope is not None and e.scope != scope:
                continue
            if e.algorithm is None and self.nvls and self.profile.source.nvls is False:
                continue  # measured without NVLS; the what-if asks for it
            seg = next((s for s in e.segments if s.size_min_bytes <= size
                        and (s.size_max_bytes is None or size < s.size_max_bytes)), None)
            if seg is None:
                continue
            key = sum(x is not None for x in (e.algorithm, e.protocol, e.ranks, e.scope))
            if key > best_key:
                best, best_key = (e, seg), key
        return best

    # -- estimates ------------------------------------------------------------------------
    def estimate(self, op: str, ranks: int | Sequence[int], size_bytes: float, algorithm: str = "auto",
                 protocol: str = "auto") -> CollectiveResult:
        """Predicted NCCL-level cost of one collective (see the module docstring)."""
        F.check_op(op)
        rk = self.ranks_of(ranks)
        S = float(size_bytes)
        if not math.isfinite(S) or S < 0:
            raise ClusterSimError(f"size must be a finite number >= 0, got {size_bytes}", field="size")
        algo = normalise_algorithm(algorithm)
        proto = (protocol or "auto").strip().lower()
        if proto not in ("auto",) + F.PROTOCOLS:
            raise ClusterSimError(f"unknown protocol {protocol!r} (auto, ll, ll128, simple)", field="protocol")
        if algo != "auto" and algo not in OP_ALGOS[op]:
            raise ClusterSimError(f"{op} has no algorithm {algorithm!r} (choose auto, {', '.join(OP_ALGOS[op])})",
                                  field="algorithm")
        ctx = self.context(rk)
        n = len(rk)
        if op == "barrier":
            r = self.estimate("all_reduce", rk, 4, algorithm, protocol) if n > 1 else None
            if r is None:
                return CollectiveResult(op=op, gpus=n, nodes=ctx.nccl.nodes, size_bytes=0, time_s=0.0,
                                        algorithm="none", protocol="none", algbw_GBps=0.0, busbw_GBps=0.0)
            return CollectiveResult(op=op, gpus=n, nodes=r.nodes, size_bytes=0, time_s=r.time_s,
                                    algorithm=r.algorithm, protocol=r.protocol, algbw_GBps=0.0, busbw_GBps=0.0,
                                    latency_s=r.latency_s, bandwidth_time_s=r.bandwidth_time_s,
                                    channels=r.channels, source=r.source)
        if n == 1 or S == 0:
            return CollectiveResult(op=op, gpus=n, nodes=ctx.nccl.nodes, size_bytes=int(S), time_s=0.0,
                                    algorithm=algo if algo != "auto" else "none",
                                    protocol=proto if proto != "auto" else "none", algbw_GBps=0.0, busbw_GBps=0.0)
        hit = self.match_entry(op, algo, proto, n, ctx.scope, S)
        if hit is not None:
            e, seg = hit
            # entries hold NCCL-level time without the launch (CUDA-graph replay); a back-to-back call
            # pays the GPU-side kernel gap on top, exactly as the model cells below do
            lat, bwt = self.launch_s + seg.alpha_us * 1e-6, S / (seg.algbw_GBps * GB)
            # measured on the profile's line rate of the entry's bottleneck class: a topology with
            # another line rate there scales the bandwidth term (docs/calibration.md)
            bwt *= self._entry_scale(ctx)
            auto = self._best(op, ctx, S, algo, proto)
            return self._result(op=op, ctx=ctx, size_bytes=S, latency_s=lat, bandwidth_time_s=bwt,
                                algorithm=e.algorithm or auto[0], protocol=e.protocol or auto[1], channels=0,
                                source="profile")
        fitted = self._link_estimate(op, ctx, S, algo, proto)
        if fitted is not None:
            a, p, lat, bwt = fitted
            return self._result(op=op, ctx=ctx, size_bytes=S, latency_s=lat, bandwidth_time_s=bwt, algorithm=a,
                                protocol=p, channels=0, source="link_model")
        a, p, lat, bwt, ch = self._best(op, ctx, S, algo, proto)
        return self._result(op=op, ctx=ctx, size_bytes=S, latency_s=lat, bandwidth_time_s=bwt, algorithm=a,
                            protocol=p, channels=ch, source="model")

    def _link_estimate(self, op: str, ctx: _Ctx, S: float, algo: str, proto: str) -> tuple | None:
        """(algorithm, protocol, latency_s, bandwidth_time_s) from the profile's link model, or None where it
        does not answer: no link model, an op it has no parameters for, a link class it did not learn
        (the network of a one-node fit, PCIe of an NVLink fit), NVLS on, or an algorithm / protocol
        outside NCCL's ring and tree (LL128 of a point-to-point op)."""
        lm = self._link
        if lm is None or op not in lm.ops or self.nvls:
            return None
        nc = ctx.nccl
        learned = self.profile.link_model
        if (nc.ppn > 1 and nc.intra_hw != learned.intra_class) or (nc.nodes > 1 and "network" not in learned.links):
            return None
        if op in LINK_TABLE_OPS:
            if algo not in ("auto", "ring", "tree"):
                return None
        elif algo not in ("auto", "direct", "p2p") or proto == "ll128":
            return None
        key = (op, id(ctx), S, algo, proto)
        hit = self._link_cache.get(key)
        if hit is not None:
            return hit
        # the communicator's line rates from the topology (one source per fact): a what-if moves them
        e = lm.estimate(op, len(ctx.ranks), nc.nodes, S, sm=nc.sm,
                        intra_line_GBps=ctx.intra_line if math.isfinite(ctx.intra_line) else 0.0,
                        net_line_GBps=ctx.net_line, nics_per_node=nc.nics,
                        algorithm=algo if algo in ("ring", "tree") else None,
                        protocol=None if proto == "auto" else proto)
        # the fit's rows are NCCL-level times of CUDA-graph replays (no launch); a back-to-back call pays
        # the GPU-side kernel gap on top, as the entries and the model cells do
        hit = self._link_cache[key] = (e.algorithm, e.protocol, self.launch_s + e.latency_us * 1e-6,
                                       e.bandwidth_us * 1e-6)
        return hit

    def _entry_scale(self, ctx: _Ctx) -> float:
        """Measured line rate / line rate now of the class that bounds a profile entry of this scope."""
        links = self.profile.links if self.profile is not None else {}
        if ctx.nccl.nodes > 1:
            return entry_scale(links, "network", ctx.net_line)
        return entry_scale(links, ctx.nccl.intra_hw, ctx.intra_line)

    def candidates(self, op: str, ranks: int | Sequence[int], size_bytes: float) -> list[CollectiveResult]:
        """Every (algorithm, protocol) the model can run for ``op`` (model only, no profile entries)."""
        rk = self.ranks_of(ranks)
        ctx = self.context(rk)
        out = []
        for a, p, lat, bwt, ch in self._cells(op, ctx, float(size_bytes)):
            out.append(self._result(op=op, ctx=ctx, size_bytes=float(size_bytes), latency_s=lat,
                                    bandwidth_time_s=bwt, algorithm=a, protocol=p, channels=ch, source="model"))
        return sorted(out, key=lambda r: r.time_s)

    def _result(self, *, op: str, ctx: _Ctx, size_bytes: float, latency_s: float, bandwidth_time_s: float,
                algorithm: str, protocol: str, channels: int, source: str) -> CollectiveResult:
        t = latency_s + bandwidth_time_s
        n = len(ctx.ranks)
        alg = size_bytes / t / GB if t > 0 else 0.0
        return CollectiveResult(op=op, gpus=n, nodes=ctx.nccl.nodes, size_bytes=int(size_bytes), time_s=t,
                                algorithm=algorithm, protocol=protocol, algbw_GBps=alg,
                                busbw_GBps=alg * F.busbw_factor(op, n), latency_s=latency_s,
                                bandwidth_time_s=bandwidth_time_s, channels=channels, source=source)

    def _best(self, op, ctx, S, algo, proto):
        cells = self._cells(op, ctx, S, algo, proto)
        if not cells:
            what = f"{algo}/{proto}" if proto != "auto" else algo
            raise ClusterSimError(f"{op}: no algorithm/protocol available for {what} on {len(ctx.ranks)} ranks "
                                  f"({ctx.nccl.nodes} node(s){', NVLS off' if not self.nvls else ''})",
                                  field="algorithm")
        # NCCL's tuner ranks by its model time (before channel throttling), then runs throttled.
        best = min(cells, key=lambda c: c[5])
        return best[:5]

    def _cells(self, op, ctx, S, algo="auto", proto="auto"):
        """[(algorithm, protocol, latency_s, bandwidth_time_s, channels, selection_time_s)]."""
        out = []
        n = len(ctx.ranks)
        nc = ctx.nccl
        launch = self.launch_s
        if op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"):
            key = (op, id(ctx))
            table = self._tables.get(key)
            if table is None:
                table = self._tables[key] = F.nccl_table(op, nc)
            for cell in table:
                if algo not in ("auto", cell.algorithm) or proto not in ("auto", cell.protocol):
                    continue
                t_model = cell.time_us(S, op, nc) * 1e-6
                lat_model = (cell.time_us(0.0, op, nc) if S > 0 else cell.lat_us) * 1e-6
                if cell.algorithm == "ring" and cell.protocol == "simple" and nc.nodes > 1 and op == "all_reduce" \
                        and S / (cell.channels * n) >= 64:
                    lat_model = cell.lat_us * (1.9 if nc.sm < 80 else 1.4) * 1e-6
                bw_model = max(0.0, t_model - lat_model)
                frac = F.throttle_fraction(S, F.exec_channels(cell), cell.protocol, n, cell.algorithm, cell.headroom)
                out.append((cell.algorithm, cell.protocol, launch + lat_model, bw_model / frac,
                            F.exec_channels(cell), t_model))
        if algo == "auto" and out:
            return out
        out += self._generic(op, ctx, S, algo, proto)
        return out

    def _generic(self, op, ctx, S, algo, proto):
        """Textbook algorithms over the link classes (alpha = per-hop latency, B = per-GPU bandwidth)."""
        n = len(ctx.ranks)
        nc = ctx.nccl
        launch = self.launch_s
        base = F.BASE_LAT_US["ring"][2] * 1e-6
        Bi = ctx.intra_bw * GB if ctx.intra_bw and math.isfinite(ctx.intra_bw) else math.inf
        Bo = ctx.nic_gpu_bw * GB if nc.nodes > 1 else math.inf
        ai, ao = ctx.hop_intra[2] * 1e-6, ctx.hop_inter[2] * 1e-6
        out = []
        ppn, nodes = nc.ppn, nc.nodes

        def add(a, p, lat, bwt, ch=1):
            out.append((a, p, launch + base + lat, bwt, ch, launch + base + lat + bwt))

        if op == "all_reduce" and algo in ("halving_doubling", "auto") and proto in ("auto", "simple"):
            lg = int(math.floor(math.log2(n)))
            if 1 << lg == n:
                lat = bwt = 0.0
                for k in range(lg):
                    inter = (1 << k) >= ppn and nodes > 1
                    a_k, B_k = (ao, Bo) if inter else (ai, Bi)
                    lat += 2 * a_k
                    bwt += 2 * (S / 2 ** (k + 1)) / B_k
            else:
                B = min(Bi, Bo)
                a = max(ai, ao) if nodes > 1 else ai
                t = F.halving_doubling_all_reduce_time(n, S, a, B)
                lat = (2 * lg + 2) * a
                bwt = t - lat
            if algo == "halving_doubling":
                add("halving_doubling", "simple", lat, bwt)
        if op == "all_reduce" and algo == "hierarchical" and proto in ("auto", "simple"):
            g = ppn
            lat = 2 * (g - 1) * ai + 2 * (nodes - 1) * ao
            bwt = (2 * (g - 1) / g * S / Bi if g > 1 else 0.0) + \
                (2 * (nodes - 1) / nodes * (S / g) / Bo if nodes > 1 else 0.0)
            add("hierarchical", "simple", lat, bwt)
        if op in ("all_gather", "reduce_scatter") and algo == "halving_doubling" and proto in ("auto", "simple"):
            lg = math.ceil(math.log2(n))
            lat, bwt = 0.0, 0.0
            for k in range(lg):
                inter = (1 << k) >= ppn and nodes > 1
                a_k, B_k = (ao, Bo) if inter else (ai, Bi)
                lat += a_k
                bwt += min(S / 2 ** (lg - k), S * (n - 1) / n) / B_k
            add("halving_doubling", "simple", lat, bwt)
        if op in ("all_to_all", "scatter", "gather") and proto in ("auto", "simple"):
            intra_b = S * (ppn - 1) / n
            inter_b = S * (n - ppn) / n
            if algo in ("auto", "direct"):
                lat = max(ai if ppn > 1 else 0.0, ao if nodes > 1 else 0.0)
                bwt = max(intra_b / Bi if ppn > 1 else 0.0, inter_b / Bo if nodes > 1 else 0.0)
                add("direct", "simple", lat, bwt)
            if algo == "pairwise" and op == "all_to_all":
                lat = (ppn - 1) * ai + (n - ppn) * ao
                bwt = (intra_b / Bi if ppn > 1 else 0.0) + (inter_b / Bo if nodes > 1 else 0.0)
                add("pairwise", "simple", lat, bwt)
        if op == "all_to_all" and algo == "nvshmem" and proto == "auto":
            out.append(self._nvshmem_all_to_all(ctx, S))
        if op == "send_recv" and algo in ("auto", "p2p"):
            inter = nodes > 1
            B = Bo if inter else Bi
            for p in F.PROTOCOLS:
                if proto not in ("auto", p):
                    continue
                pi = F.PROTO_IDX[p]
                hop = (ctx.hop_inter if inter else ctx.hop_intra)[pi] * 1e-6
                eff = {"ll": 0.5, "ll128": 0.92, "simple": 1.0}[p]
                Bp = B * eff
                if p == "ll":
                    Bp = min(Bp, F.LL_MAX_BW[F.arch_index(nc.sm)][0] * GB)
                lat = F.BASE_LAT_US["ring"][pi] * 1e-6 + hop
                out.append(("p2p", p, launch + lat, S / Bp, 1, launch + lat + S / Bp))
        return out


    @staticmethod
    def _nvshmem_all_to_all(ctx, S):
        """All-to-all as one-sided GPU-initiated puts (NVSHMEM; DeepEP's dispatch and combine).

        Each rank writes its slices straight into the receivers' buffers from the kernel that
        produced them: no collective kernel of its own to launch (no ``kernel_launch_us`` gap, no
        NCCL base latency of 6.6-14 us) and no per-step rendezvous. What remains is one message's
        flight on the slowest link class it crosses, costed as NCCL's Low-Latency (flag-in-data)
        per-hop latency, the same one-message path: NVLink 0.6 us, PCIe 1.0 us, network 2.7 us
        (NCCL src/graph/tuning.cc:147-176 hwLat, LL column;
        :data:`~clustersim.collectives.formulas.HW_LAT_US`), scaled like the other columns where the
        profile calibrates the class. That is the "few us" per message that DeepEP's low-latency
        kernels rely on. DeepEP's published H800 table (README of deepseek-ai/DeepEP: EP8 dispatch of
        128 tokens x 7168 x top-8 in FP8, about 7.5 MB per rank, 77 us at 98 GB/s) is bandwidth
        bound; this latency is under 4 % of it. The bandwidth term is the direct all-to-all's: the
        same bytes on the same links at the topology's line rate times the learned efficiency.
        """
        n, nc = len(ctx.ranks), ctx.nccl
        ppn, nodes = nc.ppn, nc.nodes
        Bi = ctx.intra_bw * GB if ctx.intra_bw and math.isfinite(ctx.intra_bw) else math.inf
        Bo = ctx.nic_gpu_bw * GB if nodes > 1 else math.inf
        lat = max(ctx.hop_intra[0] * 1e-6 if ppn > 1 else 0.0, ctx.hop_inter[0] * 1e-6 if nodes > 1 else 0.0)
        bwt = max(S * (ppn - 1) / n / Bi if ppn > 1 else 0.0, S * (n - ppn) / n / Bo if nodes > 1 else 0.0)
        return ("nvshmem", "put", lat, bwt, 1, lat + bwt)


#: Operations whose algorithm/protocol NCCL's tuner picks by its cost table (``ncclTopoGetAlgoTime``);
#: p2p-based ones (all_to_all, send_recv, scatter, gather) follow fixed thresholds the model does not hold.
TUNED_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce")


def tuner_switches(model: CollectiveModel, op: str, ranks: int | Sequence[int], lo: float = 1.0,
                   hi: float = float(2**36), per_octave: int = 32) -> list[float]:
    """Sizes (bytes) in ``[lo, hi]`` where NCCL's tuner, as modelled, changes (algorithm, protocol) for ``op``.

    Uses the NCCL-structured model only (profile entries are ignored): the first size of each new
    choice on a geometric grid of ``per_octave`` points per doubling, refined by bisection to one byte.
    Empty for operations NCCL does not tune by its table (:data:`TUNED_OPS`). The calibration fit uses it
    to keep a protocol change a step rather than a ramp (:func:`clustersim.calibration.fit.fit_piecewise`).

    >>> from clustersim.topology import load_cluster
    >>> m = CollectiveModel(load_cluster("hgx-h200", gpus=2), None)
    >>> [round(s / 2**20, 2) for s in tuner_switches(m, "all_reduce", 2, 2**10, 2**32)]  # LL -> Simple
    [1.64]
    """
    if op not in TUNED_OPS:
        return []
    rk = model.ranks_of(ranks)
    if len(rk) < 2:
        return []
    ctx = model.context(rk)

    def choice(S: float) -> tuple[str, str]:
        a, p, *_ = model._best(op, ctx, float(S), "auto", "auto")
        return a, p

    n = max(2, int(math.ceil(math.log2(hi / lo) * per_octave)) + 1)
    grid = np.geomspace(lo, hi, n)
    out: list[float] = []
    prev = choice(grid[0])
    for a, b in zip(grid, grid[1:]):
        cur = choice(b)
        if cur != prev:
            x, y = float(a), float(b)   # choice(x) == prev, choice(y) == cur
            while y - x > 1.0:
                mid = math.floor((x + y) / 2)
                if mid <= x:
                    break
                if choice(mid) == prev:
                    x = float(mid)
                else:
                    y = float(mid)
            out.append(float(math.ceil(y)))
            prev = cur
    return out


def communicator_lines(topology, max_gpus: int):
    """``(lines, sm)`` for fitting a link model on ``topology`` (name or file): ``lines(n)`` is what the
    topology gives a communicator of its first ``n`` GPUs (``intra_hw`` class, ``intra_line`` GB/s,
    ``nodes``, ``net_line`` GB/s per NIC, ``nics`` per node), ``sm`` its GPU's compute capability x 10.

    >>> lines, sm = communicator_lines("hgx-h200", 8)
    >>> lines(2)["intra_line"], lines(2)["nodes"], sm
    (450.0, 1, 90)
    """
    from clustersim.topology import load_cluster

    model = CollectiveModel(load_cluster(topology, gpus=max_gpus), None)

    def lines(n: int) -> dict:
        c = model.context(model.ranks_of(n))
        return {"intra_hw": c.nccl.intra_hw, "intra_line": c.intra_line, "nodes": c.nccl.nodes,
                "net_line": c.net_line, "nics": c.nccl.nics}

    return lines, model.cluster.gpu_spec.sm
