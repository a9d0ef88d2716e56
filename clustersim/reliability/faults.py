"""Faults injected into a simulated step: links down or degraded, straggler GPUs, a lost node.

What each fault does to the simulation (docs/goodput-and-faults.md):

* ``link_degraded``: the link group's capacity in the flow network becomes ``fraction`` of its
  line rate (a copy of the cluster's ``link_bandwidth``); flows crossing it share what is left.
* ``link_down``: every route that crossed the link takes the shortest other path through the
  device graph (fewest hops; a peer GPU's NVLink and NIC, another NIC of the host or another
  spine where the topology has them), at the bandwidth of the links it now crosses. Where no
  path is left, the run fails with a :class:`ClusterSimError` naming the link and the pair.
* ``stragglers``: every compute kernel of a rank takes ``slowdown`` times as long, and its host
  issue thread ``host_slowdown`` times as long (every op's ``host_s``: kernel and collective calls,
  FSDP2 hooks, the optimizer's dispatches); the GPU waits for a slow host only where the host
  is the bound (host-bound FSDP2 steps, small kernels). The
  executor's collectives already wait for their last member, so a slow rank holds up its
  TP/DP/PP peers by itself. The symmetry-reduced run simulates one rank per pipeline stage of
  one replica; a straggler anywhere is folded onto the simulated rank of its pipeline stage
  (the largest factor wins), since the stage's TP collectives and the DP gradient collectives
  wait for it.
* ``node_lost``: a node that dies ``at_s`` seconds into the run before the run ends fails it
  (the parallel layout needs every rank; the job restarts from a checkpoint, which is what
  ``clustersim goodput`` accounts for). A loss after the end is reported, not fatal.

Link faults need flow fidelity: the analytical closed forms use the topology's line rates, not
the flow network's link capacities.

:func:`apply` applies every kind a scenario configures, in the order a run needs them: the link
faults on the cluster before the step is built on it, the stragglers' compute and host slowdowns
on the built graph; :meth:`FaultedStep.finish` checks a lost node against the run's end and adds
each link fault's busy share once the run has been executed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Generic, Protocol, TypeVar

import networkx as nx
import numpy as np

from clustersim.config.scenario import FaultsSection, LinkSelector, Scenario, StragglerDistribution
from clustersim.errors import ClusterSimError
from clustersim.topology.cluster import Cluster
from clustersim.workload.layout import Layout
from clustersim.workload.ops import Graph
from clustersim.workload.segments import ComputeSegment, TPCollectiveSegment

_HOST = re.compile(r"(?:^|->)h(\d+)\.")


def select_links(cluster: Cluster, ref, field: str) -> list[int]:
    """Link-group indices a fault's ``link`` names: an exact ``"src->dst"`` name or a selector.

    >>> from clustersim.topology import load_cluster
    >>> c = load_cluster("dgx-h100", nodes=2)
    >>> [c.link_names[i] for i in select_links(c, "h0.nic0->leaf0", "f")]
    ['h0.nic0->leaf0']
    >>> len(select_links(c, LinkSelector(kind="infiniband", node=1), "f"))  # 8 NICs up and down
    16
    """
    names = cluster.link_names
    if isinstance(ref, str):
        try:
            return [names.index(ref)]
        except ValueError:
            near = [n for n in names if ref.split("->")[0] in n][:5]
            hint = f"; links from that end: {', '.join(near)}" if near else " (see `clustersim topo show --links`)"
            raise ClusterSimError(f"no link named {ref!r} in {cluster.name}{hint}", field=field) from None
    out = []
    for i, name in enumerate(names):
        if ref.kind is not None and str(cluster.link_kind[i]) != ref.kind:
            continue
        if ref.node is not None and ref.node not in {int(h) for h in _HOST.findall(name)}:
            continue
        out.append(i)
    if not out:
        raise ClusterSimError(f"no link of {cluster.name} matches {ref.model_dump(exclude_none=True)}", field=field)
    return out


class FaultyCluster(Cluster):
    """A :class:`Cluster` with links down (rerouted) and links degraded (capacity scaled).

    Built with :meth:`from_cluster`; the ``with_p2p``/``with_gdr`` copies keep the faults.
    """

    down: frozenset[int]

    @classmethod
    def from_cluster(cls, cluster: Cluster, *, down=(), fractions: dict[int, float] | None = None) -> "FaultyCluster":
        """A copy of ``cluster`` with the link groups ``down`` failed and ``fractions`` applied."""
        fc = cls.__new__(cls)
        fc.__dict__.update(cluster.__dict__)
        fc.link_bandwidth = np.array(cluster.link_bandwidth, dtype=float)
        for i, f in (fractions or {}).items():
            fc.link_bandwidth[i] *= f
        fc.down = frozenset(int(i) for i in down)
        fc._cache = {}
        fc._rerouted = {}
        return fc

    def route(self, src_rank: int, dst_rank: int) -> np.ndarray:
        """The healthy route, or the shortest path around the down links when it crosses one."""
        r = super().route(src_rank, dst_rank)
        if not self.down or not self.down.intersection(r.tolist()):
            return r
        key = (int(src_rank), int(dst_rank), self.p2p, self.gdr)
        hit = self._rerouted.get(key)
        if hit is None:
            hit = self._rerouted[key] = self._detour(int(src_rank), int(dst_rank), r)
        return hit

    def _detour(self, s: int, d: int, healthy: np.ndarray) -> np.ndarray:
        G = self.graph
        down = self.down

        def up(u, v, k):
            return G[u][v][k]["index"] not in down

        view = nx.subgraph_view(G, filter_edge=up)
        try:
            path = nx.shortest_path(view, self.gpus[s], self.gpus[d])
        except nx.NetworkXNoPath:
            crossed = [self.link_names[i] for i in healthy.tolist() if i in down]
            raise ClusterSimError(f"link {', '.join(crossed)} is down and no other path joins rank {s} ({self.gpus[s]}) "
                                  f"and rank {d} ({self.gpus[d]}): the job cannot run", field="faults.link_down") from None
        out = []
        for u, v in zip(path, path[1:]):
            edges = [e for e in G[u][v].values() if e["index"] not in down]
            out.append(max(edges, key=lambda e: e["bandwidth"])["index"])
        arr = np.asarray(out, dtype=np.int64)
        arr.setflags(write=False)
        return arr

    @property
    def rerouted_pairs(self) -> int:
        """Rank pairs routed around a down link so far."""
        return len(self._rerouted)


def apply_link_faults(cluster: Cluster, faults: FaultsSection) -> tuple[Cluster, list[dict]]:
    """The cluster with the faults' links down/degraded, and one cause entry per fault."""
    if not faults.link_down and not faults.link_degraded:
        return cluster, []
    down: list[int] = []
    fractions: dict[int, float] = {}
    causes = []
    for k, f in enumerate(faults.link_down):
        idx = select_links(cluster, f.link, f"faults.link_down[{k}].link")
        down += idx
        causes.append({"kind": "link_down", "links": [cluster.link_names[i] for i in idx]})
    for k, f in enumerate(faults.link_degraded):
        idx = select_links(cluster, f.link, f"faults.link_degraded[{k}].link")
        for i in idx:
            fractions[i] = min(fractions.get(i, 1.0), f.fraction)
        causes.append({"kind": "link_degraded", "links": [cluster.link_names[i] for i in idx], "fraction": f.fraction})
    return FaultyCluster.from_cluster(cluster, down=down, fractions=fractions), causes


def straggler_factors(faults: FaultsSection, n_ranks: int, seed: int) -> dict[int, float]:
    """Compute-time factor of every slowed rank (ranks at 1.0 left out).

    >>> from clustersim.config.scenario import FaultsSection
    >>> straggler_factors(FaultsSection(stragglers=[{"rank": 3, "slowdown": 1.5}]), 8, 0)
    {3: 1.5}
    """
    return _factors(faults, n_ranks, seed, "slowdown")


def host_factors(faults: FaultsSection, n_ranks: int, seed: int) -> dict[int, float]:
    """Host-time factor of every rank whose host runs at another speed (``stragglers[].host_slowdown``; below 1
    a faster host; ranks at 1.0 left out; a straggler distribution slows compute only).

    >>> from clustersim.config.scenario import FaultsSection
    >>> host_factors(FaultsSection(stragglers=[{"rank": 1, "host_slowdown": 1.8}, {"rank": 2, "slowdown": 1.2}]), 4, 0)
    {1: 1.8}
    """
    if isinstance(faults.stragglers, StragglerDistribution):
        return {}
    return _factors(faults, n_ranks, seed, "host_slowdown")


def _factors(faults: FaultsSection, n_ranks: int, seed: int, field: str) -> dict[int, float]:
    st = faults.stragglers
    if isinstance(st, StragglerDistribution):
        rng = np.random.default_rng(st.seed if st.seed is not None else seed)
        draw = np.maximum(np.exp(st.sigma * rng.standard_normal(n_ranks)), 1.0)
        return {int(r): float(x) for r, x in enumerate(draw) if x > 1.0}
    out: dict[int, float] = {}
    for k, s in enumerate(st):
        if s.rank >= n_ranks:
            raise ClusterSimError(f"straggler rank {s.rank} out of range (0..{n_ranks - 1})",
                                  field=f"faults.stragglers[{k}].rank")
        f = getattr(s, field)
        out[s.rank] = max(out[s.rank], f) if s.rank in out else f
    return {r: f for r, f in out.items() if f != 1.0}


def fold_onto_exec_ranks(factors: dict[int, float], scenario, exec_ranks: list[int]) -> dict[int, float]:
    """Factor of each executor rank: the largest factor among the global ranks it stands for (a rank
    not in ``factors`` at 1.0, so a host faster than the profile's counts only where every rank it
    stands with is as fast); executor ranks left at 1.0 are left out.

    A transformer's executor rank stands for its pipeline stage (its TP peers, and the other DP
    replicas under the symmetry reduction); a generic job's ranks stand for themselves.

    >>> from clustersim.config.scenario import Scenario
    >>> sc = Scenario.model_validate({"name": "x", "cluster": {"topology": "dgx-h100", "gpus": 2},
    ...     "model": {"layers": 2, "hidden": 64, "heads": 4, "seq_len": 32, "vocab": 128},
    ...     "training": {"micro_batch": 1, "global_batch": 2}, "parallelism": {"dp": 2}})
    >>> fold_onto_exec_ranks({1: 0.8}, sc, [0]), fold_onto_exec_ranks({0: 0.8, 1: 0.9}, sc, [0])
    ({}, {0: 0.9})
    """
    ex = set(exec_ranks)
    out: dict[int, float] = {}
    if not factors:
        return out
    if scenario.model is None:
        for r, f in factors.items():
            if r in ex:
                out[r] = f
        return out
    lay = Layout.from_parallelism(scenario.parallelism)
    replicas = sorted({lay.coords(e)["dp"] for e in exec_ranks})
    for r in range(lay.world):
        c = lay.coords(r)
        dp = c["dp"] if c["dp"] in replicas else replicas[0]
        e = lay.rank(dp=dp, pp=c["pp"])
        f = factors.get(r, 1.0)
        out[e] = max(out[e], f) if e in out else f
    return {e: f for e, f in out.items() if f != 1.0}


def slow_compute(graph: Graph, factor_of: dict[int, float]) -> int:
    """Multiply the GPU work of the compute and optimizer ops of slowed ranks; returns ops changed.

    Host time is unchanged (a slow GPU, not a slow CPU). Segment lists shared by identical
    chunks are replaced once per list, keeping the sharing.
    """
    if not factor_of:
        return 0
    changed = 0
    new_lists: dict[tuple[int, int], list] = {}
    for op in graph.ops:
        f = factor_of.get(op.rank)
        if f is None or op.category not in ("compute", "optimizer"):
            continue
        if op.segments is not None:
            key = (id(op.segments), op.rank)
            segs = new_lists.get(key)
            if segs is None:
                segs = new_lists[key] = [_scaled(s, f) for s in op.segments]
            op.segments = segs
        op.duration *= f
        changed += 1
    return changed


def slow_host(graph: Graph, factor_of: dict[int, float]) -> int:
    """Multiply the host issue time (``args.host_s``) of every op of the slowed ranks; returns ops changed.

    The GPU work is unchanged (a slow CPU, not a slow GPU); every op has its own ``args``.
    """
    changed = 0
    for op in graph.ops:
        f = factor_of.get(op.rank)
        if f is None or op.args.host_s is None:
            continue
        op.args.host_s *= f
        changed += 1
    return changed


def _scaled(seg, f: float):
    if isinstance(seg, ComputeSegment):
        return ComputeSegment(seg.seconds * f, seg.kernels)
    if isinstance(seg, TPCollectiveSegment) and seg.overlapped_gemm_s:
        return TPCollectiveSegment(seg.coll, seg.overlapped_gemm_s * f, seg.comm_slowdown, seg.gemm_slowdown)
    return seg


def check_node_lost(faults: FaultsSection, cluster: Cluster, run_end_s: float) -> list[dict]:
    """Fail the run when a node hosting ranks dies before ``run_end_s``; else a cause entry."""
    nl = faults.node_lost
    if nl is None:
        return []
    ranks = np.flatnonzero(cluster.host_of == nl.node)
    if ranks.size == 0:
        raise ClusterSimError(f"node {nl.node} hosts no rank (the run uses nodes 0..{cluster.n_hosts - 1})",
                              field="faults.node_lost.node")
    span = f"ranks {int(ranks[0])}..{int(ranks[-1])}"
    if nl.at_s < run_end_s:
        raise ClusterSimError(f"node {nl.node} ({span}) is lost at {nl.at_s:g} s, before the run ends at "
                              f"{run_end_s:.4g} s: the run fails and restarts from its last checkpoint "
                              "(`clustersim goodput` models the cost)", field="faults.node_lost")
    return [{"kind": "node_lost", "node": nl.node, "ranks": [int(ranks[0]), int(ranks[-1])], "at_s": nl.at_s,
             "effect": f"none on this run: it ends at {run_end_s:.4g} s; the next step would fail"}]


def describe_stragglers(factors: dict[int, float], top: int = 8, key: str = "slowdown") -> list[dict]:
    """Cause entries for the slowest ranks (the largest factors first); ``key``: ``slowdown`` (compute) or
    ``host_slowdown``."""
    items = sorted(factors.items(), key=lambda kv: (-kv[1], kv[0]))
    out = [{"kind": "straggler", "rank": r, key: f} for r, f in items[:top]]
    if len(items) > top:
        out.append({"kind": "straggler", "more_ranks": len(items) - top,
                    f"{key}_max_of_rest": items[top][1]})
    return out


def annotate_link_causes(causes: list[dict], cluster: Cluster, busy, makespan: float) -> None:
    """Add each link fault's busiest share of the faulty run (and the pairs rerouted) to its entry."""
    index = {n: i for i, n in enumerate(cluster.link_names)}
    for c in causes:
        if "links" not in c:
            continue
        if busy is not None and makespan > 0:
            b = [float(busy[index[n]]) for n in c["links"]]
            c["busy_fraction"] = min(max(b) / makespan, 1.0)
        if c["kind"] == "link_down" and isinstance(cluster, FaultyCluster):
            c["rerouted_pairs"] = cluster.rerouted_pairs


class BuiltGraph(Protocol):
    """What :func:`apply` needs of a built step: its op graph and the ranks it executes."""

    graph: Graph
    exec_ranks: list[int]


B = TypeVar("B", bound=BuiltGraph)


@dataclass
class FaultedStep(Generic[B]):
    """A step built with a scenario's faults applied (:func:`apply`).

    ``cluster``: the cluster it was built on (a :class:`FaultyCluster` where links are down or
    degraded); ``built``: what the build returned, its graph slowed for the stragglers;
    ``causes``: one entry per fault applied so far (link faults, then compute, then host stragglers).
    """

    faults: FaultsSection | None
    cluster: Cluster
    built: B
    causes: list[dict]

    def finish(self, run_end_s: float, link_busy: np.ndarray | None, makespan: float) -> list[dict]:
        """The causes once the run is executed: a lost node checked against the run's end
        (``run_end_s``; raises when it dies before), each link fault's busiest share of
        ``makespan`` (``link_busy``: the flow network's busy seconds per link) and its rerouted pairs."""
        if self.faults is None:
            return self.causes
        self.causes += check_node_lost(self.faults, self.cluster, run_end_s)
        annotate_link_causes(self.causes, self.cluster, link_busy, makespan)
        return self.causes


def apply(faults: FaultsSection | None, cluster: Cluster, build: Callable[[Cluster, bool], B], *,
          scenario: Scenario, fidelity: str) -> FaultedStep[B]:
    """Apply every fault kind ``faults`` configures to one run of ``scenario``, in order.

    1. ``link_down`` and ``link_degraded``: a copy of ``cluster`` with those links rerouted around
       or slowed (flow fidelity only: the analytical closed forms do not see link capacities);
    2. ``build(cluster, rerouted)`` builds the step on that cluster (``rerouted``: link faults
       changed it) and returns an object with its ``graph`` and ``exec_ranks``;
    3. ``stragglers[].slowdown`` (or a straggler distribution): the GPU work of the slowed ranks'
       compute ops, folded onto the executed ranks (:func:`fold_onto_exec_ranks`);
    4. ``stragglers[].host_slowdown``: the host issue time of every op of those ranks.

    ``node_lost`` needs the run's length: :meth:`FaultedStep.finish` checks it. Without ``faults``
    the step is built on ``cluster`` as it is.
    """
    if faults is None:
        return FaultedStep(None, cluster, build(cluster, False), [])
    if (faults.link_down or faults.link_degraded) and fidelity != "flow":
        raise ClusterSimError("link faults need fidelity flow (the analytical closed forms use the topology's "
                              "line rates, not the flow network's link capacities)", field="faults")
    cluster, causes = apply_link_faults(cluster, faults)
    built = build(cluster, bool(causes))
    graph, exec_ranks = built.graph, built.exec_ranks
    seed = scenario.simulation.seed
    factors = straggler_factors(faults, cluster.n_gpus, seed)
    slow_compute(graph, fold_onto_exec_ranks(factors, scenario, exec_ranks))
    causes += describe_stragglers(factors)
    hosts = host_factors(faults, cluster.n_gpus, seed)
    slow_host(graph, fold_onto_exec_ranks(hosts, scenario, exec_ranks))
    causes += describe_stragglers(hosts, key="host_slowdown")
    return FaultedStep(faults, cluster, built, causes)
