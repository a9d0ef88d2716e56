"""Graph builders: one node preset (a template reused by offset) and a fat-tree fabric.

Everything here is structural: a node preset is compiled once into a
:class:`NodeTemplate` (its devices, its directed edges and *link groups*, and
the intra-node routes between every GPU pair and every GPU-NIC pair); a
cluster is that template stamped ``n_hosts`` times plus a :class:`FatTree`
whose routes are closed-form index arithmetic. Nothing computes a per-pair
shortest path over the whole cluster.

Link groups
-----------
The link arrays of :class:`~clustersim.topology.Cluster` are indexed by *link
group*, not by edge. A group is one directed edge, except that the NVLinks of
one device into all NVSwitch chips of its node form one group per direction:
the GPU stripes its traffic over all its NVLinks (NCCL's own topology merges
the chips into one ``NVS`` node, ``NVL[370.8] - NVS/0`` on 18-link Hopper), so
the capacity a flow from GPU 0 to GPU 1 sees is 18 x 25 = 450 GB/s, not the
5 x 25 = 125 GB/s of one chip. Every parallel edge of a group carries the
group's ``index``; edge ``bandwidth`` stays the per-chip figure, so the sum of a
GPU's nvlink edges is its NVLink capacity.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from clustersim.config.topology import DEVICE_PREFIXES, FabricSpec, NodeSpec, device_prefix
from clustersim.errors import ClusterSimError

HOST_KINDS = ("pcie", "cpu-interconnect")  # edges a host-side (PCIe / host memory) path may use


@dataclass
class NodeTemplate:
    """A node preset compiled for stamping and routing.

    Attributes
    ----------
    devices:
        Local device names (``gpu0``, ``nvswitch2``...) in a stable order.
    kinds:
        Graph node kind of each device.
    edges:
        Directed edges ``(src, dst, attrs)``; ``attrs['index']`` is the local link group.
    group_bandwidth, group_latency, group_kind, group_names:
        Per local link group: bytes/s, seconds, kind, name.
    p2p_route, p2p_class:
        ``[i][j]`` local link groups and path class GPU i -> GPU j (peer to peer).
    staged_route:
        ``[i][j]`` local groups GPU i -> host memory -> GPU j (P2P disabled); None where the
        node has no host path between them (GB200 NVL72 trays share no host memory).
    to_nic, from_nic:
        ``[i]`` local groups GPU i -> its NIC and its NIC -> GPU i (GPUDirect RDMA).
    to_nic_staged, from_nic_staged:
        The same through host memory (GPUDirect RDMA disabled).
    rail:
        NIC index of each GPU (empty without NICs).
    """

    devices: list[str]
    kinds: dict[str, str]
    edges: list[tuple[str, str, dict]]
    group_bandwidth: np.ndarray
    group_latency: np.ndarray
    group_kind: list[str]
    group_names: list[str]
    n_gpus: int
    rail: list[int]
    nic_bandwidth: float
    p2p_route: list[list[np.ndarray]] = field(default_factory=list)
    p2p_class: list[list[str]] = field(default_factory=list)
    staged_route: list[list[np.ndarray | None]] = field(default_factory=list)
    to_nic: list[np.ndarray] = field(default_factory=list)
    from_nic: list[np.ndarray] = field(default_factory=list)
    to_nic_staged: list[np.ndarray | None] = field(default_factory=list)
    from_nic_staged: list[np.ndarray | None] = field(default_factory=list)

    @property
    def n_groups(self) -> int:
        """Link groups per node."""
        return len(self.group_kind)


def _edge_group_key(src: str, dst: str, kind: str) -> tuple[str, str]:
    # NVLinks of one device into the NVSwitch chips are striped: one group per direction.
    if kind == "nvlink" and device_prefix(dst) == "nvswitch" and device_prefix(src) != "nvswitch":
        return (src, "nvswitch*")
    if kind == "nvlink" and device_prefix(src) == "nvswitch" and device_prefix(dst) != "nvswitch":
        return ("nvswitch*", dst)
    return (src, dst)


def compile_node(node: NodeSpec) -> NodeTemplate:
    """Compile a :class:`~clustersim.config.topology.NodeSpec` into a :class:`NodeTemplate`.

    DGX H100: GPU 0 reaches GPU 1 over its 18 NVLinks into the four NVSwitch chips (one link group):

    >>> from clustersim.config.base import shipped_dir
    >>> from clustersim.config.topology import load_topology_spec
    >>> t = compile_node(load_topology_spec(shipped_dir("topology") / "dgx-h100.yaml").node)
    >>> t.p2p_class[0][1], float(t.group_bandwidth[t.p2p_route[0][1]].min()) / 1e9
    ('nvlink', 450.0)
    """
    devices = node.device_names()
    kinds = {d: DEVICE_PREFIXES[device_prefix(d)][1] for d in devices}
    edges: list[tuple[str, str, dict]] = []
    groups: dict[tuple[str, str], int] = {}
    g_bw: list[float] = []
    g_lat: list[float] = []
    g_kind: list[str] = []
    g_name: list[str] = []
    for a, b, ls in node.expanded_links():
        bw = ls.count * ls.bandwidth_GBps * 1e9
        lat = ls.latency_us * 1e-6
        for s, d in ((a, b), (b, a)):
            key = _edge_group_key(s, d, ls.kind)
            gi = groups.get(key)
            if gi is None:
                gi = groups[key] = len(g_kind)
                g_bw.append(0.0)
                g_lat.append(0.0)
                g_kind.append(ls.kind)
                g_name.append(f"{key[0]}->{key[1]}")
            elif g_kind[gi] != ls.kind:
                raise ClusterSimError(f"links {s}->{d} mix kinds {g_kind[gi]} and {ls.kind}", field="node.links")
            g_bw[gi] += bw
            g_lat[gi] = max(g_lat[gi], lat)
            edges.append((s, d, {"kind": ls.kind, "bandwidth": bw, "latency": lat, "count": ls.count, "index": gi}))
    nic_bw = (node.nic_speed_Gbps or 0.0) * 1e9 / 8
    t = NodeTemplate(devices=devices, kinds=kinds, edges=edges, group_bandwidth=np.asarray(g_bw, float),
                     group_latency=np.asarray(g_lat, float), group_kind=g_kind, group_names=g_name,
                     n_gpus=node.gpus, rail=node.rail_of_gpu(), nic_bandwidth=nic_bw)
    _compile_routes(t)
    return t


def _bfs_tree(adj: dict[str, list[tuple[str, int, str]]], src: str, kinds_ok: tuple[str, ...],
              via_ok: tuple[str, ...], node_kind: dict[str, str]) -> dict[str, tuple[str, int]]:
    """Single-source fewest-hop tree: ``prev[v] = (u, group)``; only ``via_ok`` kinds are passed through.

    Deterministic: neighbours are visited in link order, so ties go to the first-listed link.
    """
    prev: dict[str, tuple[str, int]] = {src: ("", -1)}
    q = deque([src])
    while q:
        u = q.popleft()
        for v, gi, kind in adj[u]:
            if v in prev or kind not in kinds_ok:
                continue
            prev[v] = (u, gi)
            if node_kind[v] in via_ok:
                q.append(v)
    return prev


def _path(prev: dict[str, tuple[str, int]], src: str, dst: str) -> list[int] | None:
    if dst not in prev:
        return None
    out = []
    x = dst
    while x != src:
        x, g = prev[x]
        out.append(g)
    return out[::-1]


def _compile_routes(t: NodeTemplate) -> None:
    adj: dict[str, list[tuple[str, int, str]]] = {d: [] for d in t.devices}
    for s, d, a in t.edges:
        adj[s].append((d, a["index"], a["kind"]))
    nk = t.kinds
    host_via = ("pcie_switch", "cpu")
    gpus = [f"gpu{i}" for i in range(t.n_gpus)]
    cpus = [d for d in t.devices if nk[d] == "cpu"]
    trees: dict[tuple[str, str], dict] = {}

    def tree(src: str, mode: str) -> dict:
        key = (src, mode)
        if key not in trees:
            if mode == "nvlink":
                trees[key] = _bfs_tree(adj, src, ("nvlink",), ("nvswitch",), nk)
            else:
                trees[key] = _bfs_tree(adj, src, HOST_KINDS, host_via, nk)
        return trees[key]

    def host_path(a: str, b: str) -> list[int] | None:
        return _path(tree(a, "host"), a, b)

    near_cpu: dict[str, tuple[str, list[int]] | None] = {}
    for g in gpus:
        best = None
        for c in cpus:
            p = host_path(g, c)
            if p is not None and (best is None or len(p) < len(best[1])):
                best = (c, p)
        near_cpu[g] = best

    def arr(p: list[int] | None) -> np.ndarray | None:
        return None if p is None else np.asarray(p, dtype=np.int64)

    def staged(g: str, b: str, reverse: bool = False) -> list[int] | None:
        # Through the host memory nearest to GPU g: g -> cpu -> b, or b -> cpu -> g.
        if near_cpu[g] is None:
            return None
        cpu, up = near_cpu[g]
        if reverse:
            a1, a2 = host_path(b, cpu), host_path(cpu, g)
            return None if a1 is None or a2 is None else a1 + a2
        rest = host_path(cpu, b)
        return None if rest is None else up + rest

    for a in gpus:
        row, cls, st = [], [], []
        for b in gpus:
            if a == b:
                row.append(np.zeros(0, dtype=np.int64))
                cls.append("local")
                st.append(np.zeros(0, dtype=np.int64))
                continue
            p = _path(tree(a, "nvlink"), a, b)
            c = "nvlink"
            if p is None:
                p = host_path(a, b)
                c = "pcie"
            if p is None:
                raise ClusterSimError(f"no NVLink or PCIe path from {a} to {b} in the node", field="node.links")
            row.append(arr(p))
            cls.append(c)
            st.append(arr(staged(a, b)))
        t.p2p_route.append(row)
        t.p2p_class.append(cls)
        t.staged_route.append(st)
    for i, g in enumerate(gpus):
        if not t.rail:
            break
        nic = f"nic{t.rail[i]}"
        up, down = host_path(g, nic), host_path(nic, g)
        if up is None or down is None:
            raise ClusterSimError(f"no PCIe path between {g} and its {nic}", field="node.links")
        t.to_nic.append(arr(up))
        t.from_nic.append(arr(down))
        # Without GPUDirect RDMA the NIC reads/writes a bounce buffer in the GPU's nearest host memory.
        t.to_nic_staged.append(arr(staged(g, nic)))
        t.from_nic_staged.append(arr(staged(g, nic, reverse=True)))


def node_graph(node: NodeSpec, host: int = 0) -> nx.MultiDiGraph:
    """The graph of one node preset (node ids ``h<host>.<device>``).

    >>> from clustersim.topology import load_cluster
    >>> G = node_graph(load_cluster("dgx-h100").spec.node)
    >>> sum(d["bandwidth"] for _, _, d in G.out_edges("h0.gpu0", data=True) if d["kind"] == "nvlink") / 1e9
    450.0
    """
    t = compile_node(node)
    G = nx.MultiDiGraph()
    stamp_hosts(G, t, 1, first_host=host)
    return G


def add_edges_fast(G: nx.MultiDiGraph, edges: list[tuple[str, str, dict]]) -> None:
    """Add directed edges ``(u, v, attrs)`` between existing nodes of a MultiDiGraph.

    Same result as ``G.add_edges_from`` (keys 0, 1, ... per node pair, the key
    dict shared by ``G._succ[u][v]`` and ``G._pred[v][u]``) but about 4x faster,
    which keeps a 16,384-GPU graph (~290,000 edges) within a couple of seconds.

    >>> G = nx.MultiDiGraph()
    >>> G.add_nodes_from(["a", "b"])
    >>> add_edges_fast(G, [("a", "b", {"kind": "nvlink"}), ("a", "b", {"kind": "nvlink"})])
    >>> sorted(G["a"]["b"]), G.number_of_edges(), G.in_degree("b")
    ([0, 1], 2, 2)
    """
    succ, pred = G._succ, G._pred
    for u, v, attrs in edges:
        su = succ[u]
        kd = su.get(v)
        if kd is None:
            kd = su[v] = G.edge_key_dict_factory()
            pred[v][u] = kd
        kd[len(kd)] = attrs
    nx._clear_cache(G)


def stamp_hosts(G: nx.MultiDiGraph, t: NodeTemplate, n_hosts: int, first_host: int = 0) -> None:
    """Add ``n_hosts`` copies of template ``t`` to ``G``; host ``h`` link groups are offset by ``h * t.n_groups``.

    >>> from clustersim.config.base import shipped_dir
    >>> from clustersim.config.topology import load_topology_spec
    >>> t = compile_node(load_topology_spec(shipped_dir("topology") / "dgx-h100.yaml").node)
    >>> G = nx.MultiDiGraph()
    >>> stamp_hosts(G, t, 2)
    >>> G.nodes["h1.gpu0"], G.number_of_nodes() == 2 * len(t.devices)
    ({'kind': 'gpu', 'host': 1, 'local': 'gpu0'}, True)
    """
    ng = t.n_groups
    nodes = []
    edges = []
    for h in range(first_host, first_host + n_hosts):
        p = f"h{h}."
        nodes.extend((p + d, {"kind": t.kinds[d], "host": h, "local": d}) for d in t.devices)
        off = h * ng
        for s, d, a in t.edges:
            attrs = a.copy()
            attrs["index"] = a["index"] + off
            edges.append((p + s, p + d, attrs))
    G.add_nodes_from(nodes)
    add_edges_fast(G, edges)


class FatTree:
    """A folded-Clos fabric over the NICs of ``n_hosts`` nodes with ``rails`` NICs each.

    Geometry (radix k, leaf down:up = oversubscription o): a leaf has
    ``d = round(k*o/(1+o))`` host ports and ``u = k - d`` uplinks. Rail-optimised:
    leaf ``(b, r)`` serves NIC ``r`` of hosts ``b*d .. b*d+d-1`` (leaf id ``b*rails+r``,
    so consecutive leaves form scalable units with every rail). Two tiers: ``S =
    ceil(L*u/k)`` spines, every leaf wired to every spine with ``u/S`` cables (uplink
    cable ``c`` goes to spine ``c mod S``). Three tiers: pods of ``k/2`` leaves and ``u``
    aggregation switches, agg ``a`` of every pod wired to the ``C`` cores of core group
    ``a`` (its ``k/2`` up cables, cable ``j`` to core ``j mod C``).

    ``tiers: auto`` takes the fewest tiers that hold the leaves: one switch (not
    rail-optimised, ports <= k), else leaf/spine while one spine layer reaches every
    leaf (``S <= u``: 64 leaves, 256 DGX H100 at k = 64), else leaf/aggregation/core
    with pods of k/2 leaves (4 scalable units of DGX H100) and at most k pods.

    Routing is destination-based (d-mod-k, what an InfiniBand subnet manager's fat-tree
    routing programs into the switches' per-destination forwarding tables): the up-link
    is chosen by the destination port's slot in its leaf (``slot mod u``, then the spine
    or aggregation switch that cable reaches) and, on three tiers, the core by the
    destination leaf's position in its pod. Every down-link bundle then serves exactly
    the destinations it has cables for (o per cable), so no set of flows can oversubscribe
    a down-link beyond the destination NICs, and shift permutations, rings and trees
    spread evenly over all up-links. O(1) per route, deterministic.

    Examples
    --------
    128 DGX H100 (8 rails of 400 Gb/s NICs) on 64-port switches: the reference SuperPOD's
    32 leaves and 16 spines in two tiers:

    >>> from clustersim.config.topology import FabricSpec
    >>> ft = FatTree(128, 8, FabricSpec(switch_radix=64), 50e9, "infiniband", first_index=0)
    >>> ft.tiers, ft.n_leaves, ft.n_spines, ft.rail_optimized
    (2, 32, 16, True)
    """

    def __init__(self, n_hosts: int, rails: int, fabric: FabricSpec, nic_bw: float, kind: str, first_index: int):
        self.n_hosts, self.rails, self.fabric = n_hosts, rails, fabric
        k = fabric.switch_radix
        self.k = k
        self.rail_optimized = fabric.rail_optimized and rails > 1
        self.link_bw = fabric.link_speed_Gbps * 1e9 / 8 if fabric.link_speed_Gbps else nic_bw
        self.lat = fabric.latency_us * 1e-6
        self.kind = kind
        o = fabric.oversubscription
        d = max(1, min(k - 1, int(round(k * o / (1 + o)))))
        ports = n_hosts * rails
        asked = fabric.tiers
        self.auto = asked in (None, "auto")
        tiers: int | None = None if self.auto else int(asked)
        if self.auto and not self.rail_optimized and ports <= k:
            tiers = 1
        if tiers == 1:
            if self.rail_optimized:
                raise ClusterSimError(f"a rail-optimised fabric with {rails} rails needs tiers >= 2 "
                                      "(rails meet at the spine)", field="cluster.fabric.tiers")
            if ports > k:
                raise ClusterSimError(f"{ports} NIC ports do not fit one {k}-port switch (tiers: 1); "
                                      "use tiers: 2, tiers: auto or a larger switch_radix",
                                      field="cluster.fabric.tiers")
            d = k
        self.d = d
        self.u = k - d if tiers != 1 else 0
        if self.rail_optimized:
            self.blocks = math.ceil(n_hosts / d)
            self.n_leaves = self.blocks * rails
        else:
            self.blocks = math.ceil(ports / d)
            self.n_leaves = self.blocks
        u = self.u
        if tiers is None:
            tiers = 2 if math.ceil(self.n_leaves * u / k) <= u else 3
        self.tiers = tiers
        if tiers == 2:
            self.n_spines = math.ceil(self.n_leaves * u / k)
            if self.n_spines > u:
                raise ClusterSimError(f"{n_hosts} nodes need {self.n_leaves} leaf switches; a 2-tier fat tree of "
                                      f"radix {k} holds at most {k} leaves ({self._max_hosts(k)} nodes); "
                                      "use tiers: 3 or tiers: auto", field="cluster.fabric.tiers")
        elif tiers == 3:
            self.pod_leaves = k // 2
            self.n_pods = math.ceil(self.n_leaves / self.pod_leaves)
            self.n_aggs = u  # per pod: each leaf sends one cable to each aggregation switch
            self.core_per_group = math.ceil(self.n_pods * (k // 2) / k)
            if self.n_pods > k:
                raise ClusterSimError(f"{n_hosts} nodes need {self.n_pods} pods of {self.pod_leaves} leaf switches; "
                                      f"a 3-tier fat tree of radix {k} holds at most {k} pods "
                                      f"({self._max_hosts(k * (k // 2))} nodes); use a larger switch_radix",
                                      field="cluster.fabric.tiers")
        self.first_index = first_index
        self._build_indices()

    def _max_hosts(self, leaves: int) -> int:
        """Hosts that ``leaves`` leaf switches serve."""
        if self.rail_optimized:
            return leaves // self.rails * self.d
        return leaves * self.d // self.rails

    # -- geometry -------------------------------------------------------------------------
    def leaf_of(self, host: np.ndarray | int, rail: np.ndarray | int):
        """Leaf switch id of NIC ``rail`` of ``host`` (vectorised)."""
        if self.tiers == 1:
            return np.zeros_like(np.asarray(host)) if isinstance(host, np.ndarray) else 0
        if self.rail_optimized:
            return (host // self.d) * self.rails + rail
        return (host * self.rails + rail) // self.d

    def slot_of(self, host: np.ndarray | int, rail: np.ndarray | int):
        """Port (0 .. d-1) of NIC ``rail`` of ``host`` on its leaf (vectorised)."""
        if self.rail_optimized:
            return host % self.d
        return (host * self.rails + rail) % self.d

    def _build_indices(self) -> None:
        H, R = self.n_hosts, self.rails
        nxt = self.first_index
        bw: list[np.ndarray] = []
        self.names: list[str] = []
        n = H * R
        self.nic_up = (nxt + 2 * np.arange(n)).reshape(H, R)
        self.nic_down = self.nic_up + 1
        nxt += 2 * n
        bw.append(np.full(2 * n, 0.0))  # filled by Cluster with the NIC rate
        self._segments = [("nic", 2 * n)]
        if self.tiers == 2:
            L, S = self.n_leaves, self.n_spines
            cables = np.array([self.u // S + (1 if s < self.u % S else 0) for s in range(S)], float)
            self.up = (nxt + 2 * np.arange(L * S)).reshape(L, S)
            self.down = self.up + 1
            nxt += 2 * L * S
            bw.append(np.repeat(np.tile(cables, L) * self.link_bw, 2))
        elif self.tiers == 3:
            L, A, P, C = self.n_leaves, self.n_aggs, self.n_pods, self.core_per_group
            self.la_up = (nxt + 2 * np.arange(L * A)).reshape(L, A)
            self.la_down = self.la_up + 1
            nxt += 2 * L * A
            bw.append(np.full(2 * L * A, self.link_bw))
            half = self.k // 2
            cables = np.array([half // C + (1 if c < half % C else 0) for c in range(C)], float)
            self.ac_up = (nxt + 2 * np.arange(P * A * C)).reshape(P, A, C)
            self.ac_down = self.ac_up + 1
            nxt += 2 * P * A * C
            bw.append(np.repeat(np.tile(cables, P * A) * self.link_bw, 2))
        self.n_links = nxt - self.first_index
        self.bandwidth = np.concatenate(bw) if bw else np.zeros(0)

    # -- graph ----------------------------------------------------------------------------
    def switch_names(self) -> list[str]:
        """Names of every switch node."""
        out = [f"leaf{i}" for i in range(self.n_leaves)] if self.tiers > 1 else ["switch0"]
        if self.tiers == 2:
            out += [f"spine{s}" for s in range(self.n_spines)]
        elif self.tiers == 3:
            out += [f"agg{p}.{a}" for p in range(self.n_pods) for a in range(self.n_aggs)]
            out += [f"core{a}.{c}" for a in range(self.n_aggs) for c in range(self.core_per_group)]
        return out

    def _leaf_name(self, leaf: int) -> str:
        return "switch0" if self.tiers == 1 else f"leaf{leaf}"

    def cables(self, nic_bw: float) -> list[tuple[str, str, float, int]]:
        """Every fabric cable bundle as ``(a, b, bytes/s, index of a->b)``; ``index + 1`` is b->a."""
        out = []
        for h in range(self.n_hosts):
            for r in range(self.rails):
                out.append((f"h{h}.nic{r}", self._leaf_name(int(self.leaf_of(h, r))), nic_bw, int(self.nic_up[h, r])))
        fi = self.first_index
        if self.tiers == 2:
            for leaf in range(self.n_leaves):
                for s in range(self.n_spines):
                    i = int(self.up[leaf, s])
                    out.append((f"leaf{leaf}", f"spine{s}", float(self.bandwidth[i - fi]), i))
        elif self.tiers == 3:
            for leaf in range(self.n_leaves):
                p = leaf // self.pod_leaves
                for a in range(self.n_aggs):
                    out.append((f"leaf{leaf}", f"agg{p}.{a}", self.link_bw, int(self.la_up[leaf, a])))
            for p in range(self.n_pods):
                for a in range(self.n_aggs):
                    for c in range(self.core_per_group):
                        i = int(self.ac_up[p, a, c])
                        out.append((f"agg{p}.{a}", f"core{a}.{c}", float(self.bandwidth[i - fi]), i))
        return out

    def link_names(self, nic_bw: float) -> list[str]:
        """``"a->b"`` per fabric link, in index order."""
        names = []
        for a, b, _, _ in self.cables(nic_bw):
            names.append(f"{a}->{b}")
            names.append(f"{b}->{a}")
        return names

    def add_to(self, G: nx.MultiDiGraph, nic_bw: float) -> None:
        """Add the switches and fabric edges (one per direction) to ``G``."""
        G.add_nodes_from((s, {"kind": "switch", "host": -1}) for s in self.switch_names())
        kind, lat = self.kind, self.lat
        edges = []
        for a, b, bw, i in self.cables(nic_bw):
            edges.append((a, b, {"kind": kind, "bandwidth": bw, "latency": lat, "index": i}))
            edges.append((b, a, {"kind": kind, "bandwidth": bw, "latency": lat, "index": i + 1}))
        add_edges_fast(G, edges)

    # -- routing --------------------------------------------------------------------------
    def route(self, hs: int, rs: int, hd: int, rd: int) -> list[int]:
        """Fabric link indices from NIC ``rs`` of host ``hs`` to NIC ``rd`` of host ``hd``.

        Same leaf: NIC -> leaf -> NIC. Otherwise up-link cable ``slot(dst) mod u`` (d-mod-k),
        i.e. spine ``(slot mod u) mod S`` on two tiers, aggregation switch ``slot mod u`` on
        three, and across pods core ``(dst leaf's index in its pod) mod C`` of that
        aggregation index's core group.
        """
        ls, ld = int(self.leaf_of(hs, rs)), int(self.leaf_of(hd, rd))
        out = [int(self.nic_up[hs, rs])]
        if ls != ld:
            cable = int(self.slot_of(hd, rd)) % self.u
            if self.tiers == 2:
                s = cable % self.n_spines
                out += [int(self.up[ls, s]), int(self.down[ld, s])]
            else:
                a = cable  # n_aggs == u: one cable from each leaf to each aggregation switch
                ps, pd = ls // self.pod_leaves, ld // self.pod_leaves
                if ps == pd:
                    out += [int(self.la_up[ls, a]), int(self.la_down[ld, a])]
                else:
                    c = (ld % self.pod_leaves) % self.core_per_group
                    out += [int(self.la_up[ls, a]), int(self.ac_up[ps, a, c]), int(self.ac_down[pd, a, c]),
                            int(self.la_down[ld, a])]
        out.append(int(self.nic_down[hd, rd]))
        return out

    def summary(self) -> dict:
        """Shape of the fabric as a JSON-able dict."""
        out = {"kind": "fat_tree", "tiers": self.tiers, "rail_optimized": self.rail_optimized, "rails": self.rails,
               "switch_radix": self.k, "leaf_down_ports": self.d, "leaf_up_ports": self.u, "leaves": self.n_leaves,
               "link_bandwidth_Bps": self.link_bw, "oversubscription": self.fabric.oversubscription}
        if self.tiers == 2:
            out["spines"] = self.n_spines
        elif self.tiers == 3:
            out.update(pods=self.n_pods, aggregation_per_pod=self.n_aggs, cores=self.n_aggs * self.core_per_group)
        out["switches"] = len(self.switch_names())
        return out
