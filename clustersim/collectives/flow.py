"""Collective algorithms as SimPy processes emitting flows (flow fidelity).

Design rule (docs/architecture.md, Contract 2): every phase waits its latency term, then
starts one flow per (aggregated) transfer with a rate cap equal to its uncontended rate
from the analytical model (``bytes / bandwidth_time``). Uncontended, a collective therefore
takes exactly its analytical time; link capacities make concurrent collectives,
oversubscription, degraded links and rail layouts show up.

Patterns (``S`` bytes, nccl-tests conventions):

- ring: one flow per ring edge carrying that edge's total bytes (all_reduce ``2(n-1)/n S``,
  all_gather / reduce_scatter ``(n-1)/n S``, broadcast / reduce: a chain of ``S``). Across
  nodes NCCL runs one ring per NIC (channel); ring ``k`` is rotated inside each node so it
  leaves through NIC ``k`` and, as PXN does, crosses NVLink to the GPU of the rail first, so
  inter-node hops stay on their rail.
- tree: NCCL's intra-node chain plus a binary tree over the node leaders, ``S`` each way.
- nvls: every GPU sends and receives ``S`` through the switch (in-network reduction);
  nvls_tree adds the inter-node exchange of each GPU's ``S/ppn`` slice on its rail.
- halving_doubling: one phase per step (partner ``i xor 2^k``); hierarchical: intra RS,
  inter all-reduce on each rail, intra AG, as three phases.
- direct / pairwise all_to_all, scatter, gather: intra-node pairs directly; inter-node data
  aggregated per (GPU, destination node) on the GPU's rail (``n x nodes`` flows, never
  ``n^2``). Pairwise runs as one phase (its steps share no bottleneck uncontended); nvshmem
  (one-sided puts) moves the same bytes on the same paths.
- p2p (send_recv): rank ``i`` sends ``S`` to ``i+1`` (nccl-tests' sendrecv pattern).

The engine knows flows only; :class:`FlowCollectives` is what a
:class:`~clustersim.engine.Simulation` is given to run these patterns, and
:func:`flow_simulation` builds one.

>>> from clustersim.topology import load_cluster
>>> sim = flow_simulation(load_cluster("hgx-h200", gpus=2), None)
>>> p = sim.collective("all_reduce", [0, 1], 2**30)
>>> sim.env.run()
>>> abs(p.value.time_s - sim.collectives.model.estimate("all_reduce", 2, 2**30).time_s) < 1e-9
True
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import numpy as np

from clustersim.collectives.model import CollectiveModel, CollectiveResult
from clustersim.engine import Simulation


class _Paths:
    """Route builder with PXN hops (cached through the cluster's route cache)."""

    def __init__(self, cluster):
        self.c = cluster

    def route(self, a: int, b: int) -> np.ndarray:
        return self.c.route(a, b)

    def pxn(self, a: int, via: int, b: int) -> np.ndarray:
        if a == via:
            return self.c.route(a, b)
        return np.concatenate([self.c.route(a, via), self.c.route(via, b)])


def _by_host(cluster, ranks: tuple[int, ...]) -> list[list[int]]:
    order = sorted(ranks, key=lambda r: (int(cluster.host_of[r]), int(cluster.local_of[r])))
    out: list[list[int]] = []
    last = None
    for r in order:
        h = int(cluster.host_of[r])
        if h != last:
            out.append([])
            last = h
        out[-1].append(r)
    return out


def ring_edges(cluster, ranks: tuple[int, ...], nrings: int, chain: bool = False) -> list[tuple[np.ndarray, int]]:
    """Paths of ``nrings`` rotated rings (or chains) over ``ranks``: [(path, ring)]."""
    P = _Paths(cluster)
    hosts = _by_host(cluster, ranks)
    out = []
    H = len(hosts)
    for k in range(nrings):
        seq: list[tuple[int, int | None]] = []  # (rank, pxn-via for the edge leaving it)
        for hi, L in enumerate(hosts):
            g = len(L)
            rot = (k * g // nrings) % g
            order = L[rot:] + L[:rot]
            for j, r in enumerate(order):
                via = order[0] if (j == g - 1 and H > 1) else None
                seq.append((r, via))
        m = len(seq)
        last = m - 1 if chain else m
        for i in range(last):
            a, via = seq[i]
            b = seq[(i + 1) % m][0]
            if via is not None and via != a:
                # the next host's first GPU has the same local index (rail) as this host's first
                out.append((P.pxn(a, via, b), k))
            else:
                out.append((P.route(a, b), k))
    return out


def _nrings(model, ctx) -> int:
    return max(1, ctx.nccl.nics) if ctx.nccl.nodes > 1 else 1


def plan(model, res: CollectiveResult, ranks: tuple[int, ...]) -> list[tuple[float, float, list, np.ndarray]]:
    """Phases ``[(latency_s, bandwidth_time_s, paths, bytes)]`` whose uncontended sum is ``res.time_s``."""
    c = model.cluster
    ctx = model.context(ranks)
    n = len(ranks)
    S = float(res.size_bytes)
    op, algo = res.op, res.algorithm
    L, T = res.latency_s, res.bandwidth_time_s
    if n <= 1 or op == "barrier" or S == 0:
        return [(res.time_s, 0.0, [], np.zeros(0))]
    P = _Paths(c)
    hosts = _by_host(c, ranks)
    N, ppn = len(hosts), ctx.nccl.ppn
    phases: list[tuple[float, list, np.ndarray]] = []  # (bw weight, paths, bytes); latency split evenly

    if algo == "ring":
        K = _nrings(model, ctx)
        chain = op in ("broadcast", "reduce")
        per = {"all_reduce": 2 * (n - 1) / n * S, "all_gather": (n - 1) / n * S,
               "reduce_scatter": (n - 1) / n * S}.get(op, S) / K
        edges = ring_edges(c, ranks, K, chain=chain)
        phases.append((1.0, [p for p, _ in edges], np.full(len(edges), per)))
    elif algo == "tree":
        # NCCL Tree: a chain inside each node and a double binary tree between nodes, one
        # per channel/NIC (rotated so the chain's head sits on rail k); tree B mirrors tree A
        # so interior nodes of one are leaves of the other (Sanders, Speck & Traeff 2009).
        K = _nrings(model, ctx)
        paths, nb = [], []
        for k in range(K):
            heads = []
            for Lh in hosts:
                g = len(Lh)
                rot = (k * g // K) % g
                order = Lh[rot:] + Lh[:rot]
                heads.append(order[0])
                for a, b in zip(order[:-1], order[1:]):
                    paths += [P.route(a, b), P.route(b, a)]
                    nb += [S / K, S / K]
            for mirror in (False, True):
                hs = heads[::-1] if mirror else heads
                for i in range(1, len(hs)):
                    par = hs[(i - 1) // 2]
                    paths += [P.route(hs[i], par), P.route(par, hs[i])]
                    nb += [S / (2 * K), S / (2 * K)]
        phases.append((1.0, paths, np.asarray(nb)))
    elif algo in ("nvls", "nvls_tree"):
        paths, nb = [], []
        vol = S if op == "all_reduce" else (ppn - 1) / ppn * S
        for Lh in hosts:
            g = len(Lh)
            for j in range(g if g > 1 else 0):
                paths.append(P.route(Lh[j], Lh[(j + 1) % g]))
                nb.append(vol)
        if N > 1:
            for hi, Lh in enumerate(hosts):
                nxt = hosts[(hi + 1) % N]
                for j, r in enumerate(Lh):
                    if j < len(nxt):
                        paths.append(P.route(r, nxt[j]))
                        nb.append(2 * (N - 1) / N * S / ppn)
        phases.append((1.0, paths, np.asarray(nb)))
    elif algo == "halving_doubling":
        order = [r for Lh in hosts for r in Lh]
        lg = int(math.floor(math.log2(n)))
        p2 = 1 << lg
        steps = []
        if op == "all_reduce":
            ks = list(range(lg)) + list(reversed(range(lg)))
            vols = [S / 2 ** (k + 1) for k in range(lg)] + [S / 2 ** (k + 1) for k in reversed(range(lg))]
        else:
            ks = list(range(lg))
            vols = [min(S / 2 ** (lg - k), S * (n - 1) / n) for k in range(lg)]
        for k, v in zip(ks, vols):
            paths = [P.route(order[i], order[i ^ (1 << k)]) for i in range(p2)]
            steps.append((paths, np.full(len(paths), v)))
        extra = [(P.route(order[i], order[i - p2]), S) for i in range(p2, n)]
        if extra:
            steps.insert(0, ([p for p, _ in extra], np.array([b for _, b in extra])))
        for paths, nb in steps:
            phases.append((float(nb[0]), paths, nb))
        # weights: bytes / per-GPU bandwidth of the step's class
        phases = _weight_by_class(model, ctx, ranks, phases, order)
    elif algo == "hierarchical":
        intra_paths = []
        for Lh in hosts:
            g = len(Lh)
            if g > 1:
                intra_paths += [P.route(Lh[j], Lh[(j + 1) % g]) for j in range(g)]
        g = ppn
        inter_paths = []
        for j in range(g):
            col = [Lh[j] for Lh in hosts if j < len(Lh)]
            if len(col) > 1:
                inter_paths += [P.route(col[i], col[(i + 1) % len(col)]) for i in range(len(col))]
        Bi = ctx.intra_bw
        Bo = ctx.nic_gpu_bw
        w_rs = (g - 1) / g * S / Bi if g > 1 else 0.0
        w_ar = 2 * (N - 1) / N * (S / g) / Bo if N > 1 else 0.0
        if intra_paths:
            phases.append((w_rs, intra_paths, np.full(len(intra_paths), (g - 1) / g * S)))
        if inter_paths:
            phases.append((w_ar, inter_paths, np.full(len(inter_paths), 2 * (N - 1) / N * S / g)))
        if intra_paths:
            phases.append((w_rs, intra_paths, np.full(len(intra_paths), (g - 1) / g * S)))
    elif algo in ("direct", "pairwise", "nvshmem"):  # nvshmem: the same puts, one-sided
        paths, nb = [], []
        roots = [ranks[0]] if op in ("scatter", "gather") else None
        for hi, Lh in enumerate(hosts):
            srcs = [r for r in Lh if roots is None or r in roots]
            for a in srcs:
                for b in Lh:
                    if a != b:
                        paths.append(P.route(a, b) if op != "gather" else P.route(b, a))
                        nb.append(S / n)
                ja = Lh.index(a)
                for hj, M in enumerate(hosts):
                    if hj == hi:
                        continue
                    peer = M[ja % len(M)]
                    paths.append(P.route(a, peer) if op != "gather" else P.route(peer, a))
                    nb.append(S * len(M) / n)
        phases.append((1.0, paths, np.asarray(nb)))
    elif algo == "p2p":
        order = [r for Lh in hosts for r in Lh]
        paths = [P.route(order[i], order[(i + 1) % n]) for i in range(n)]
        phases.append((1.0, paths, np.full(n, S)))
    else:  # pragma: no cover - every model algorithm has a pattern
        return [(res.time_s, 0.0, [], np.zeros(0))]
    wsum = sum(w for w, _, _ in phases) or 1.0
    k = len(phases)
    return [(L / k, T * w / wsum, paths, nb) for w, paths, nb in phases]


def _weight_by_class(model, ctx, ranks, phases, order):
    """Re-weight halving-doubling steps by bytes / bandwidth of the step's link class."""
    c = model.cluster
    out = []
    Bi = ctx.intra_bw if ctx.intra_bw else math.inf
    Bo = ctx.nic_gpu_bw if ctx.nic_gpu_bw else math.inf
    for _, paths, nb in phases:
        # a step is inter-node when its first pair crosses hosts
        inter = False
        for p in paths[:1]:
            inter = any(str(c.link_kind[i]) in ("infiniband", "ethernet") for i in p)
        out.append((float(nb[0]) / (Bo if inter else Bi), paths, nb))
    return out


def run_collective(sim, model: CollectiveModel, op: str, ranks, size_bytes: float, *, algorithm: str = "auto",
                   protocol: str = "auto", tag: dict | None = None, res: CollectiveResult | None = None,
                   phases: list | None = None, res_dict: dict | None = None):
    """SimPy process body on ``sim``: latency, then flows per phase; returns the result with the simulated time.
    ``phases``, ``res_dict``: ``plan(model, res, ranks)`` and ``res.to_dict()`` when the caller has them already."""
    env = sim.env
    t0 = env.now
    m = model
    tag = tag or {}
    rk = m.ranks_of(ranks)
    if res is None:
        res = m.estimate(op, rk, size_bytes, algorithm, protocol)
    for lat, bwt, paths, nb in (phases if phases is not None else plan(m, res, rk)):
        if lat > 0:
            yield env.timeout(lat)
        if bwt > 0 and len(paths):
            caps = nb / bwt
            yield sim.start_flows(paths, nb, caps, tag)
        elif bwt > 0:
            yield env.timeout(bwt)
    t = env.now - t0
    alg = res.size_bytes / t / 1e9 if t > 0 else 0.0
    out = replace(res, time_s=t, algbw_GBps=alg, busbw_GBps=alg * (res.busbw_GBps / res.algbw_GBps
                                                                    if res.algbw_GBps else 0.0))
    if res_dict is None:
        rec = out.to_dict()
    else:  # out.to_dict(), from res's: the three fields replace changed and time_us (asdict is slow)
        rec = {**res_dict, "time_s": out.time_s, "algbw_GBps": out.algbw_GBps, "busbw_GBps": out.busbw_GBps,
               "time_us": out.time_s * 1e6}
        if "extra" in rec:
            rec["extra"] = copy.deepcopy(out.extra)
    sim.records.append({"op": op, "start_s": t0, "end_s": env.now, "tag": dict(tag), **rec})
    return out


_MEMO_LINKS = 4_000_000  # path entries FlowCollectives keeps memoised (see its _memo)


class FlowCollectives:
    """The collective algorithms a :class:`~clustersim.engine.Simulation` runs at flow fidelity.

    Parameters
    ----------
    model : CollectiveModel
        Picks algorithm and protocol and gives each phase its uncontended latency and rate cap.
    """

    def __init__(self, model: CollectiveModel):
        self.model = model
        #: (op, ranks, bytes, algorithm, protocol) -> (estimate, phases, record): a training step
        #: repeats the same few collectives thousands of times, and all are pure functions of those;
        #: kept up to _MEMO_LINKS path entries in all (8 bytes each: 32 MB), so the phases of huge
        #: groups (a 10,000-rank ring is ~500,000 entries) are rebuilt rather than held
        self._memo: dict[tuple, tuple] = {}
        self._memo_links = 0

    def start(self, sim, op: str, ranks, size_bytes: float, *, algorithm: str = "auto", protocol: str = "auto",
              tag: dict | None = None):
        """Start ``op`` on ``sim`` as a SimPy process; its value is the :class:`CollectiveResult` it took."""
        rk = self.model.ranks_of(ranks)
        key = (op, rk, size_bytes, algorithm, protocol)
        hit = self._memo.get(key)
        if hit is None:
            res = self.model.estimate(op, rk, size_bytes, algorithm, protocol)  # bad input raises here, not in env.run
            hit = (res, plan(self.model, res, rk), res.to_dict())
            links = sum(len(p) for _, _, paths, _ in hit[1] for p in paths)
            if self._memo_links + links <= _MEMO_LINKS:
                self._memo[key] = hit
                self._memo_links += links
        res, phases, res_dict = hit
        return sim.env.process(run_collective(sim, self.model, op, rk, size_bytes, algorithm=algorithm,
                                              protocol=protocol, tag=tag or {}, res=res, phases=phases,
                                              res_dict=res_dict))


def flow_simulation(cluster, profile=None, *, nvls: bool | None = None, p2p: bool = True, gdr: bool = True,
                    env=None, link_capacity: np.ndarray | None = None) -> Simulation:
    """A :class:`~clustersim.engine.Simulation` over ``cluster`` that runs the NCCL algorithms as flows.

    ``profile``, ``nvls``, ``p2p``, ``gdr`` are those of :class:`CollectiveModel` (``p2p``/``gdr`` off
    stage routes through host memory, so the simulation runs on the model's cluster); ``env`` and
    ``link_capacity`` those of the Simulation.
    """
    model = CollectiveModel(cluster, profile, nvls=nvls, p2p=p2p, gdr=gdr)
    return Simulation(model.cluster, collectives=FlowCollectives(model), env=env, link_capacity=link_capacity)
