"""The :class:`Cluster` (Contract 1 of docs/architecture.md) and :func:`load_cluster`."""

from __future__ import annotations

import copy
import gc
import math
from pathlib import Path

import networkx as nx
import numpy as np

from clustersim.budget import check_bound, check_memory, cluster_bytes
from clustersim.config.base import resolve_file
from clustersim.config.topology import GPUSpec, TopologyClusterSection, TopologySpec, load_topology_spec
from clustersim.errors import ClusterSimError
from clustersim.topology.graphs import FatTree, NodeTemplate, compile_node, stamp_hosts

_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY.setflags(write=False)


class Cluster:
    """GPUs, devices and links of a (possibly replicated) node preset, with structured routing.

    Build it with :func:`load_cluster` or ``Cluster(spec, nodes=, gpus=, gpus_per_node=)``
    (``gpus_per_node``: ranks on the first N GPUs of every node only, e.g. 64 of an NVL72 rack's 72,
    so that a job smaller than its racks puts one EP group of 64 in each rack).

    Attributes
    ----------
    spec : TopologySpec
        The validated topology file.
    graph : networkx.MultiDiGraph
        Nodes have ``kind`` (gpu, nvswitch, pcie_switch, cpu, nic, switch) and ``host``
        (-1 for fabric switches); edges, one per link direction, have ``kind``,
        ``bandwidth`` (bytes/s), ``latency`` (s) and ``index`` (link group, position in
        the link arrays; see :mod:`clustersim.topology.graphs` for why NVLinks into the
        NVSwitch chips share one group).
    gpus : list[str]
        GPU node ids in rank order (rank r is ``gpus[r]``).
    host_of : numpy.ndarray
        Host index of each rank.
    link_bandwidth, link_latency : numpy.ndarray
        Bytes/s and seconds per link group.
    link_kind : numpy.ndarray
        Kind per link group (str).
    link_names : list[str]
        ``"src->dst"`` per link group.
    p2p, gdr : bool
        GPU peer-to-peer and GPUDirect RDMA; when off, routes stage through host memory.

    Examples
    --------
    >>> c = load_cluster("dgx-h100", nodes=2)
    >>> c.n_gpus, c.n_hosts, c.path_class(0, 1), c.path_class(0, 8)
    (16, 2, 'nvlink', 'network')
    >>> float(c.link_bandwidth[c.route(0, 1)].min()) / 1e9
    450.0
    """

    def __init__(self, spec: TopologySpec, nodes: int | None = None, gpus: int | None = None,
                 gpus_per_node: int | None = None):
        self.spec = spec
        node = spec.node
        gpn = node.gpus
        # ranks per node: all of its GPUs, or the first gpus_per_node of each (a job placed per rack)
        used = gpn if gpus_per_node is None else gpus_per_node
        if not 1 <= used <= gpn:
            raise ClusterSimError(f"gpus_per_node ({gpus_per_node}) must be 1..{gpn} (the GPUs of one {spec.name} node)",
                                  field="gpus_per_node")
        if nodes is not None and nodes < 1:
            raise ClusterSimError(f"nodes must be >= 1, got {nodes}", field="nodes")
        if gpus is not None and gpus < 1:
            raise ClusterSimError(f"gpus must be >= 1, got {gpus}", field="gpus")
        # bounds before any arithmetic or allocation that scales with them
        if gpus is not None:
            check_bound("gpus", gpus, field="gpus")
        if nodes is not None:
            check_bound("nodes", nodes, field="nodes")
        if nodes is None:
            nodes = spec.cluster.nodes if spec.cluster is not None else 1
            if gpus is not None and gpus > nodes * used:
                # e.g. cannon-4xa100 with gpus=8: the 2 x 4-GPU nodes the FASRC pi runs used
                nodes = math.ceil(gpus / used)
        if gpus is not None and gpus > nodes * used:
            raise ClusterSimError(f"asked for {gpus} GPUs but {nodes} node(s) of {spec.name} have {nodes * used}"
                                  + (f" in use ({used} of each)" if used != gpn else ""), field="gpus")
        if nodes > 1 and node.nics == 0:
            raise ClusterSimError(f"{spec.name} has no NICs, so it cannot be replicated over a network "
                                  f"(asked for {nodes} nodes)", field="nodes")
        check_bound("gpus", nodes * gpn, field="nodes")
        self.n_nodes = nodes
        self.gpus_per_host = gpn
        self.template: NodeTemplate = compile_node(node)
        t = self.template
        self.fabric: FatTree | None = None
        if nodes > 1:  # before the link arrays: a fabric that cannot hold the nodes is refused first
            section = spec.cluster or TopologyClusterSection(nodes=nodes)
            self.fabric = FatTree(n_hosts=nodes, rails=node.nics, fabric=section.fabric, nic_bw=t.nic_bandwidth,
                                  kind=node.nic_kind, first_index=t.n_groups * nodes)
        check_memory(cluster_bytes(nodes, t.n_groups, self.fabric.n_links if self.fabric else 0),
                     f"{nodes:,} node(s) of {spec.name} ({t.n_groups} link groups each)", field="nodes")
        # A one-item box shared by with_p2p()/with_gdr() copies, so the lazily built graph is built once.
        self._graph_box: list[nx.MultiDiGraph | None] = [None]
        ng = t.n_groups
        bw = [np.tile(t.group_bandwidth, nodes)]
        lat = [np.tile(t.group_latency, nodes)]
        kinds = t.group_kind * nodes
        names = [f"h{h}.{n}" for h in range(nodes) for n in t.group_names]
        if self.fabric is not None:
            fn = self.fabric.link_names(t.nic_bandwidth)
            fk = [node.nic_kind] * len(fn)
            fbw = self.fabric.bandwidth.copy()
            fbw[: 2 * nodes * node.nics] = t.nic_bandwidth
            bw.append(fbw)
            lat.append(np.full(len(fn), self.fabric.lat))
            kinds += fk
            names += fn
        self.link_bandwidth = np.concatenate(bw)
        self.link_latency = np.concatenate(lat)
        self.link_kind = np.asarray(kinds, dtype=object).astype(str)
        self.link_names = names
        n_ranks = gpus if gpus is not None else nodes * used
        self.gpus = [f"h{r // used}.gpu{r % used}" for r in range(n_ranks)]
        self.host_of = np.arange(n_ranks, dtype=np.int64) // used
        self.local_of = np.arange(n_ranks, dtype=np.int64) % used
        #: ranks placed on each node (the first of its GPUs): gpus_per_host unless gpus_per_node is given
        self.ranks_per_host = used
        self.p2p = True
        self.gdr = True
        self._cache: dict[tuple[int, int], np.ndarray] = {}

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The device graph, built on first use (routing never needs it)."""
        if self._graph_box[0] is None:
            check_memory(cluster_bytes(self.n_nodes, self.template.n_groups,
                                       self.fabric.n_links if self.fabric else 0, graph=True),
                         f"the device graph of {self.n_nodes:,} node(s) of {self.spec.name}", field="nodes")
            # Hundreds of thousands of small dicts: the cyclic GC would rescan them repeatedly
            # (about half the build time at 16,384 GPUs); nothing here creates cycles.
            was_enabled = gc.isenabled()
            gc.disable()
            try:
                G = nx.MultiDiGraph(name=self.spec.name)
                stamp_hosts(G, self.template, self.n_nodes)
                if self.fabric is not None:
                    self.fabric.add_to(G, self.template.nic_bandwidth)
            finally:
                if was_enabled:
                    gc.enable()
            self._graph_box[0] = G
        return self._graph_box[0]

    # -- sizes ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The topology name."""
        return self.spec.name

    @property
    def n_gpus(self) -> int:
        """Number of ranks (GPUs in use)."""
        return len(self.gpus)

    @property
    def n_hosts(self) -> int:
        """Hosts spanned by the ranks (a host is one replica of the node preset)."""
        return int(self.host_of[-1]) + 1

    @property
    def gpu_spec(self) -> GPUSpec:
        """The GPU model's vendor figures."""
        return self.spec.gpu_spec

    @property
    def default_profile(self) -> str | None:
        """The calibration profile the topology file names."""
        return self.spec.default_profile

    @property
    def nvls_capable(self) -> bool:
        """NVSwitch with multicast/NVLink SHARP (H100 and later) in every node."""
        n = self.spec.node
        if n.nvswitch_multicast is not None:
            return bool(n.nvswitch_multicast and n.nvswitches > 0)
        return n.nvswitches > 0 and self.gpu_spec.sm >= 90

    @property
    def nic_bandwidth_per_gpu(self) -> float:
        """Bytes/s of NIC line rate available to each GPU (NIC rate / GPUs sharing it; 0 without NICs).

        The smallest share over the ranks' GPUs, so a node with one 100 Gb/s NIC for
        four GPUs gives 3.125e9.
        """
        rail = self.template.rail
        if not rail:
            return 0.0
        used = [rail[i] for i in sorted(set(int(x) for x in self.local_of))]
        share = {r: rail.count(r) for r in set(rail)}
        return min(self.template.nic_bandwidth / share[r] for r in used)

    @property
    def nic_bandwidth_of_rank(self) -> np.ndarray:
        """Bytes/s of NIC line rate available to each rank (its NIC's rate / GPUs sharing that NIC)."""
        rail = self.template.rail
        if not rail:
            return np.zeros(self.n_gpus)
        share = np.bincount(np.asarray(rail), minlength=max(rail) + 1)
        r = np.asarray(rail)[self.local_of]
        return self.template.nic_bandwidth / share[r]

    @property
    def nvlink_bandwidth_per_gpu(self) -> float:
        """Bytes/s per direction of gpu0's NVLinks (sum of its nvlink edges)."""
        g = self.gpus[0]
        return float(sum(d["bandwidth"] for _, _, d in self.graph.out_edges(g, data=True) if d["kind"] == "nvlink"))

    # -- line rates (what the profile's learned efficiencies multiply) ----------------------
    def class_line_rate(self, link_class: str) -> float | None:
        """Representative line rate of a link class, bytes/s per direction (None when the node has none).

        ``nvlink``: the bottleneck of the route from gpu0 to its first NVLink peer (450e9 on DGX
        H100: 18 links x 25 GB/s into the NVSwitch chips); ``pcie``: gpu0's PCIe link;
        ``network``: one NIC. This is what a profile records as the line rate it was measured on.

        >>> c = load_cluster("dgx-h100")
        >>> [c.class_line_rate(k) / 1e9 for k in ("nvlink", "pcie", "network")]
        [450.0, 63.0, 50.0]
        """
        t = self.template
        if link_class == "nvlink":
            peers = [j for j in range(1, t.n_gpus) if t.p2p_class[0][j] == "nvlink"]
            return float(t.group_bandwidth[t.p2p_route[0][peers[0]]].min()) if peers else None
        if link_class == "pcie":
            bws = [d["bandwidth"] for s, _, d in t.edges if s == "gpu0" and d["kind"] == "pcie"]
            return float(min(bws)) if bws else None
        if link_class == "network":
            return float(t.nic_bandwidth) if t.nic_bandwidth > 0 else None
        raise ClusterSimError(f"unknown link class {link_class!r} (nvlink, pcie, network)", field="link_class")

    def nic_path_bandwidth(self, local: int) -> float:
        """Bottleneck bytes/s of the in-node route from local GPU ``local`` to its NIC.

        PCIe through the switch the GPU and NIC share with GPUDirect RDMA; through host memory
        without it (inf when no such path exists or the node has no NIC).
        """
        t = self.template
        if not t.rail:
            return math.inf
        path = t.to_nic[local] if self.gdr else t.to_nic_staged[local]
        if path is None or not len(path):
            return math.inf
        return float(t.group_bandwidth[path].min())

    def network_line_rate(self, hosts, rails) -> float:
        """Line rate (bytes/s) of one inter-node transfer among ``hosts`` on NICs ``rails``.

        The NIC line rate, or the fabric cable rate when that is slower and the hosts' NICs of
        one rail sit on more than one leaf switch: destination-based (d-mod-k) routing sends all
        the traffic for one destination over one cable per tier, so a ring edge between leaves
        runs at the cable rate even where several cables form a bundle.

        >>> c = load_cluster("dgx-a100-superpod", nodes=24)   # 20 nodes per leaf
        >>> c.network_line_rate(range(8), [0]) / 1e9, c.network_line_rate(range(24), [0]) / 1e9
        (25.0, 25.0)
        """
        nic = float(self.template.nic_bandwidth)
        f = self.fabric
        if f is None or f.link_bw >= nic or f.tiers == 1:
            return nic
        h = np.asarray(list(hosts), dtype=np.int64)
        if h.size < 2:
            return nic
        for r in sorted(set(int(x) for x in rails)):
            leaves = np.asarray(f.leaf_of(h, r))
            if (leaves != leaves[0]).any():
                return min(nic, float(f.link_bw))
        return nic

    # -- variants -------------------------------------------------------------------------
    def with_p2p(self, enabled: bool) -> "Cluster":
        """A copy whose intra-host GPU-to-GPU routes use (or, if False, avoid) peer-to-peer.

        Without P2P the data goes GPU -> PCIe -> host memory of the sender's CPU ->
        PCIe -> GPU, as NCCL's SHM transport does with ``NCCL_P2P_DISABLE=1``.
        """
        c = copy.copy(self)
        c.p2p = bool(enabled)
        c._cache = {}
        return c

    def with_gdr(self, enabled: bool) -> "Cluster":
        """A copy whose network routes use (or, if False, avoid) GPUDirect RDMA.

        Without GDR the NIC reads and writes a bounce buffer in host memory, so the
        route crosses the GPU's PCIe path to the CPU and the CPU's path to the NIC.
        """
        c = copy.copy(self)
        c.gdr = bool(enabled)
        c._cache = {}
        return c

    # -- routing --------------------------------------------------------------------------
    def _check_rank(self, r: int) -> int:
        r = int(r)
        if not 0 <= r < len(self.gpus):
            raise ClusterSimError(f"rank {r} out of range (0..{len(self.gpus) - 1})", field="rank")
        return r

    def route(self, src_rank: int, dst_rank: int) -> np.ndarray:
        """Link indices (read-only int64 array) a transfer from ``src_rank`` to ``dst_rank`` crosses, in order.

        Deterministic and built from structure: the node template's route offset by
        the host, plus the fat-tree formula between hosts. The sender's GPU uses the
        NIC of its rail and the receiver's NIC is that of the receiver's rail, so on a
        rail-optimised fabric same-rail traffic stays on the rail's leaf and
        cross-rail traffic climbs to the spine. Cached per pair.
        """
        key = (int(src_rank), int(dst_rank))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        s, d = self._check_rank(src_rank), self._check_rank(dst_rank)
        if s == d:
            return _EMPTY
        t = self.template
        hs, hd = int(self.host_of[s]), int(self.host_of[d])
        ls, ld = int(self.local_of[s]), int(self.local_of[d])
        ng = t.n_groups
        if hs == hd:
            loc = t.p2p_route[ls][ld] if self.p2p else t.staged_route[ls][ld]
            if loc is None:
                raise ClusterSimError(f"{self.name}: no path through host memory from gpu{ls} to gpu{ld} "
                                      "(P2P disabled)", field="p2p")
            out = loc + hs * ng
        else:
            assert self.fabric is not None
            up = t.to_nic[ls] if self.gdr else t.to_nic_staged[ls]
            down = t.from_nic[ld] if self.gdr else t.from_nic_staged[ld]
            if up is None or down is None:
                raise ClusterSimError(f"{self.name}: no path through host memory to the NIC "
                                      "(GPUDirect RDMA disabled)", field="gpudirect_rdma")
            mid = self.fabric.route(hs, t.rail[ls], hd, t.rail[ld])
            out = np.concatenate([up + hs * ng, np.asarray(mid, dtype=np.int64), down + hd * ng])
        out.setflags(write=False)
        self._cache[key] = out
        return out

    def routes(self, src_ranks, dst_ranks) -> list[np.ndarray]:
        """:meth:`route` for many pairs (element-wise over two equal-length sequences)."""
        src = np.asarray(src_ranks, dtype=np.int64).ravel()
        dst = np.asarray(dst_ranks, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise ClusterSimError("routes() needs as many sources as destinations")
        return [self.route(a, b) for a, b in zip(src.tolist(), dst.tolist())]

    def path_class(self, src_rank: int, dst_rank: int) -> str:
        """``"nvlink"``, ``"pcie"`` (incl. staged through host memory) or ``"network"``."""
        s, d = self._check_rank(src_rank), self._check_rank(dst_rank)
        if self.host_of[s] != self.host_of[d]:
            return "network"
        if s == d:
            return "nvlink" if "nvlink" in self.template.group_kind else "pcie"
        if not self.p2p:
            return "pcie"
        return self.template.p2p_class[int(self.local_of[s])][int(self.local_of[d])]

    def route_bandwidth(self, src_rank: int, dst_rank: int) -> float:
        """Bottleneck bytes/s of the route (inf for a rank to itself)."""
        r = self.route(src_rank, dst_rank)
        return float(self.link_bandwidth[r].min()) if len(r) else math.inf

    def route_latency(self, src_rank: int, dst_rank: int) -> float:
        """Sum of link latencies along the route, seconds."""
        return float(self.link_latency[self.route(src_rank, dst_rank)].sum())

    # -- reporting ------------------------------------------------------------------------
    def link_counts(self) -> dict[str, int]:
        """Directed edges of the graph by kind."""
        out: dict[str, int] = {}
        for _, _, k in self.graph.edges(data="kind"):
            out[k] = out.get(k, 0) + 1
        return dict(sorted(out.items()))

    def device_counts(self) -> dict[str, int]:
        """Graph nodes by kind."""
        out: dict[str, int] = {}
        for _, k in self.graph.nodes(data="kind"):
            out[k] = out.get(k, 0) + 1
        return dict(sorted(out.items()))

    def summary(self) -> dict:
        """Headline figures as a JSON-able dict (no per-link list)."""
        g = self.gpu_spec
        return {
            "name": self.name,
            "gpus": self.n_gpus,
            "nodes": self.n_hosts,
            "nodes_built": self.n_nodes,
            "gpus_per_node": self.gpus_per_host,
            "gpu_model": g.name,
            "gpu_peak_tflops": dict(g.peak_tflops),
            "hbm_GB": g.hbm_GB,
            "hbm_bandwidth_GBps": g.hbm_bandwidth_GBps,
            "nvlink_bandwidth_per_gpu_Bps": self.nvlink_bandwidth_per_gpu,
            "nic_bandwidth_per_gpu_Bps": self.nic_bandwidth_per_gpu,
            "nics_per_node": self.spec.node.nics,
            "nvls_capable": self.nvls_capable,
            "default_profile": self.default_profile,
            "devices": self.device_counts(),
            "link_counts": self.link_counts(),
            "link_groups": int(len(self.link_bandwidth)),
            "fabric": self.fabric.summary() if self.fabric is not None else None,
            "inferred": list(self.spec.inferred),
        }

    def __repr__(self) -> str:
        return f"Cluster({self.name!r}, gpus={self.n_gpus}, hosts={self.n_hosts}, links={len(self.link_bandwidth)})"


def load_cluster(name_or_path: str | Path, nodes: int | None = None, gpus: int | None = None,
                 base: Path | None = None) -> Cluster:
    """Load a topology by shipped name or path and build its :class:`Cluster`.

    Parameters
    ----------
    name_or_path:
        ``"hgx-h200"`` (shipped preset) or a path to a topology YAML file.
    nodes:
        Replicate the node preset this many times (default: the file's ``cluster.nodes``, else 1;
        raised to as many as ``gpus`` needs).
    gpus:
        Use the first N GPUs as ranks (default: all).
    base:
        Folder relative paths are resolved against first (a scenario's folder).

    Raises
    ------
    ClusterSimError
        Unknown name, unreadable or invalid file, impossible sizes.

    Examples
    --------
    >>> load_cluster("hgx-h200", gpus=2).n_gpus
    2
    """
    path = resolve_file(name_or_path, "topology", base=base)
    spec = load_topology_spec(path)
    try:
        return Cluster(spec, nodes=nodes, gpus=gpus)
    except ClusterSimError as exc:
        raise exc.with_file(str(path)) from None
