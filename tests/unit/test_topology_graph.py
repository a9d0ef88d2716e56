"""Graph building, link arrays, capacities, replication and --gpus."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from clustersim.config.topology import LINK_KINDS, NODE_KINDS
from clustersim.errors import ClusterSimError
from clustersim.topology import load_cluster, node_graph


def _nvlink_out(c, gpu):
    return sum(d["bandwidth"] for _, _, d in c.graph.out_edges(gpu, data=True) if d["kind"] == "nvlink")


@pytest.mark.parametrize("name, n, per_gpu_GBps", [
    ("dgx-h100", 8, 450), ("hgx-h200", 8, 450), ("dgx-a100", 8, 300), ("gb200-nvl72", 72, 900),
    ("h100-pcie-4gpu", 4, 300), ("cannon-4xh100", 4, 225), ("cannon-4xa100", 4, 300),
])
def test_per_gpu_nvlink_capacity_is_sum_of_nvlink_edges(name, n, per_gpu_GBps, shared_cluster):
    c = shared_cluster(name)
    assert c.n_gpus == n and c.n_hosts == 1
    for g in c.gpus:
        assert _nvlink_out(c, g) == pytest.approx(per_gpu_GBps * 1e9), f"{g=}"
        # and the same into the GPU (one edge per direction)
        assert sum(d["bandwidth"] for _, _, d in c.graph.in_edges(g, data=True)
                   if d["kind"] == "nvlink") == pytest.approx(per_gpu_GBps * 1e9), f"{g=}"


def test_dgx_h100_structure(shared_cluster):
    c = shared_cluster("dgx-h100")
    G = c.graph
    assert isinstance(G, nx.MultiDiGraph)
    kinds = nx.get_node_attributes(G, "kind")
    assert set(kinds.values()) <= set(NODE_KINDS)
    counts = c.device_counts()
    assert counts == {"cpu": 2, "gpu": 8, "nic": 8, "nvswitch": 4, "pcie_switch": 4}
    # 5+5+4+4 links into the four chips
    per_chip = sorted(d["count"] for _, v, d in G.out_edges("h0.gpu3", data=True) if d["kind"] == "nvlink")
    assert per_chip == [4, 4, 5, 5]
    for u, v, d in G.edges(data=True):
        assert d["kind"] in LINK_KINDS and d["bandwidth"] > 0 and d["latency"] >= 0, f"{u=}, {v=}, {d=}"
        assert G.nodes[u]["host"] == 0
        # one edge per direction: the reverse exists with the same bandwidth
        assert any(e["bandwidth"] == d["bandwidth"] for e in G.get_edge_data(v, u).values())
    assert c.nvls_capable and c.nic_bandwidth_per_gpu == pytest.approx(50e9)
    assert c.gpu_spec.name == "H100-SXM" and c.default_profile == "dgx-h100"


def test_link_arrays_consistent_with_graph(shared_cluster):
    c = shared_cluster("dgx-h100", nodes=3)
    L = len(c.link_bandwidth)
    assert len(c.link_latency) == len(c.link_kind) == len(c.link_names) == L
    by_index: dict[int, float] = {}
    for _, _, d in c.graph.edges(data=True):
        by_index[d["index"]] = by_index.get(d["index"], 0.0) + d["bandwidth"]
        assert c.link_kind[d["index"]] == d["kind"]
    assert sorted(by_index) == list(range(L)), "every link index is used by some edge"
    # a link group's bandwidth is the sum of its parallel edges (NVLinks into all NVSwitch chips)
    assert np.allclose([by_index[i] for i in range(L)], c.link_bandwidth)
    assert c.link_names[c.route(0, 1)[0]] == "h0.gpu0->nvswitch*"


def test_replication_and_fabric(shared_cluster):
    c = shared_cluster("dgx-h100", nodes=4)
    assert c.n_gpus == 32 and c.n_hosts == 4
    assert list(c.host_of) == [r // 8 for r in range(32)]
    sw = [n for n, k in c.graph.nodes(data="kind") if k == "switch"]
    f = c.fabric.summary()
    # 4 nodes x 8 rails, rail-optimised: 8 leaves (one per rail), 2-tier
    assert f["tiers"] == 2 and f["leaves"] == 8 and f["rail_optimized"] and len(sw) == f["switches"]
    ib = [d for _, _, d in c.graph.edges(data=True) if d["kind"] == "infiniband"]
    assert ib and all(d["bandwidth"] > 0 for d in ib)
    # leaf host ports + uplinks never exceed the radix
    for leaf in (n for n in sw if n.startswith("leaf")):
        up = sum(1 for _ in c.graph.out_edges(leaf))
        assert up <= 64, f"{leaf=}"


def test_superpod_presets(shared_cluster):
    h = shared_cluster("dgx-h100-superpod")
    assert h.n_hosts == 128 and h.n_gpus == 1024 and h.fabric.tiers == 2
    assert h.fabric.summary()["spines"] == 16 and h.fabric.summary()["leaves"] == 32
    a = shared_cluster("dgx-a100-superpod")
    assert a.fabric.tiers == 3 and a.nic_bandwidth_per_gpu == pytest.approx(25e9)
    assert shared_cluster("dgx-a100-superpod", nodes=560).n_gpus == 4480  # Selene


def test_gpus_takes_first_n(shared_cluster):
    c = shared_cluster("hgx-h200", gpus=2)
    assert c.gpus == ["h0.gpu0", "h0.gpu1"] and c.n_gpus == 2 and c.n_hosts == 1
    # the graph keeps the whole node
    assert sum(1 for _, k in c.graph.nodes(data="kind") if k == "gpu") == 8
    c = shared_cluster("dgx-h100", gpus=12)  # more than one node: replicate as needed
    assert c.n_gpus == 12 and c.n_hosts == 2 and c.host_of[-1] == 1
    c = shared_cluster("dgx-h100-superpod", gpus=16)
    assert c.n_gpus == 16 and c.n_hosts == 2 and c.n_nodes == 128


@pytest.mark.parametrize("kw, match", [({"gpus": 0}, "gpus"), ({"nodes": 0}, "nodes"),
                                       ({"nodes": 1, "gpus": 9}, "asked for 9 GPUs")])
def test_bad_sizes(kw, match):
    with pytest.raises(ClusterSimError, match=match):
        load_cluster("dgx-h100", **kw)


def test_fabric_capacity_errors(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("extends: dgx-h100\nname: t\ncluster: {nodes: 512, fabric: {tiers: 2}}\n")
    with pytest.raises(ClusterSimError, match="tiers: 3"):
        load_cluster(p)
    p.write_text("extends: dgx-h100\nname: t\ncluster: {nodes: 2, fabric: {tiers: 1}}\n")
    with pytest.raises(ClusterSimError, match="rail"):
        load_cluster(p)
    p.write_text("extends: dgx-h100\nname: t\ncluster: {nodes: 2, fabric: {switch_radix: 63}}\n")
    with pytest.raises(ClusterSimError, match="even"):
        load_cluster(p)


def test_oversubscription_reduces_uplinks(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("extends: dgx-h100\nname: t\ncluster: {nodes: 64, fabric: {oversubscription: 3.0}}\n")
    f = load_cluster(p).fabric
    assert f.d == 48 and f.u == 16  # 3:1 on a 64-port leaf


def test_node_graph_builder_and_node_without_nic_cannot_replicate(tmp_path, shared_cluster):
    c = shared_cluster("dgx-a100")
    G = node_graph(c.spec.node, host=5)
    assert "h5.gpu7" in G and G.nodes["h5.gpu7"]["host"] == 5
    p = tmp_path / "t.yaml"
    p.write_text("name: t\ngpu: H100-SXM\nnode: {gpus: 1, cpus: 1, links: "
                 "[{src: gpu0, dst: cpu0, kind: pcie, bandwidth_GBps: 63}]}\n")
    assert load_cluster(p).nic_bandwidth_per_gpu == 0.0
    with pytest.raises(ClusterSimError, match="no NICs"):
        load_cluster(p, nodes=2)


def test_gb200_is_one_nvlink_domain(shared_cluster):
    c = shared_cluster("gb200-nvl72")
    assert c.n_gpus == 72 and c.n_hosts == 1 and c.nvls_capable
    assert c.path_class(0, 71) == "nvlink"
    assert c.route_bandwidth(0, 71) == pytest.approx(900e9)


def test_gpus_beyond_the_preset_add_nodes_when_nodes_not_given(shared_cluster):
    c = shared_cluster("cannon-4xa100", gpus=8)  # the FASRC pi runs: 2 nodes x 4 GPUs
    assert c.n_hosts == 2 and c.path_class(0, 4) == "network" and c.path_class(0, 3) == "nvlink"
    with pytest.raises(ClusterSimError, match="asked for 8 GPUs"):
        load_cluster("cannon-4xa100", gpus=8, nodes=1)


@pytest.mark.parametrize("nodes, tiers, leaves, extra", [
    (32, 2, 8, {"spines": 4}),          # one scalable unit
    (128, 2, 32, {"spines": 16}),       # 4 SUs: the reference architecture's 32 leaves + 16 spines
    (256, 2, 64, {"spines": 32}),       # the most one spine layer of radix 64 reaches
    (257, 3, 72, {"pods": 3}),          # one node more: a core tier above pods of 4 SUs
    (288, 3, 72, {"pods": 3}),          # Megatron-Core 177B row (2,304 GPUs)
    (2048, 3, 512, {"pods": 16}),       # Llama 3 405B (16,384 GPUs)
])
def test_superpod_tiers_auto_picks_the_fewest_that_fit(nodes, tiers, leaves, extra, shared_cluster):
    c = shared_cluster("dgx-h100-superpod", nodes=nodes)
    assert c.spec.cluster.fabric.tiers == "auto"
    f = c.fabric.summary()
    assert f["tiers"] == tiers and f["leaves"] == leaves
    assert {k: f[k] for k in extra} == extra
    if tiers == 3:
        assert f["cores"] == f["aggregation_per_pod"] * math.ceil(f["pods"] / 2)


def test_2048_superpod_nodes_build_and_route(shared_cluster):
    # How long this takes is a benchmark figure, not a test: benchmarks/bench_topology.py
    # --topology dgx-h100-superpod --nodes 2048 prints it (docs/topology.md, "Speed").
    c = shared_cluster("dgx-h100-superpod", nodes=2048)
    r = c.route(0, c.n_gpus - 1)
    assert c.n_gpus == 16384 and len(r) == 10 and c.path_class(0, c.n_gpus - 1) == "network"


@pytest.mark.parametrize("text, nodes, tiers", [
    ("tiers: auto", 64, 2), ("tiers: null", 64, 2), ("{}", 64, 2), ("tiers: 3", 64, 3), ("tiers: 2", 256, 2),
    ("{tiers: 1, rail_optimized: false}", 8, 1), ("{tiers: auto, rail_optimized: false}", 8, 1),
    ("{switch_radix: 8}", 16, 3),
])
def test_explicit_and_auto_tiers(tmp_path, text, nodes, tiers):
    p = tmp_path / "t.yaml"
    fabric = text if text.startswith("{") else "{" + text + "}"
    p.write_text(f"extends: dgx-h100\nname: t\ncluster: {{nodes: {nodes}, fabric: {fabric}}}\n")
    assert load_cluster(p).fabric.tiers == tiers


@pytest.mark.parametrize("fabric, nodes, match", [
    ("{tiers: 2}", 288, "at most 64 leaves .256 nodes.; use tiers: 3 or tiers: auto"),
    ("{tiers: 4}", 2, "must be 1, 2, 3 or 'auto'"),
    ("{tiers: 0}", 2, "must be 1, 2, 3 or 'auto'"),
    ("{tiers: three}", 2, "must be 1, 2, 3 or 'auto'"),
    ("{tiers: true}", 2, "must be 1, 2, 3 or 'auto'"),
    # radix 8, non-blocking: 4 hosts per leaf, pods of 4 leaves, at most 8 pods = 32 leaves = 4 blocks of 8 rails
    ("{switch_radix: 8}", 17, "at most 8 pods .16 nodes."),
])
def test_bad_tiers_are_user_errors(tmp_path, fabric, nodes, match):
    p = tmp_path / "t.yaml"
    p.write_text(f"extends: dgx-h100\nname: t\ncluster: {{nodes: {nodes}, fabric: {fabric}}}\n")
    with pytest.raises(ClusterSimError, match=match) as ei:
        load_cluster(p)
    assert ei.value.field == "cluster.fabric.tiers"
