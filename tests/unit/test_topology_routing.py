"""Routing: deterministic, structured, rail-aware, host-staged variants."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from clustersim.errors import ClusterSimError
from clustersim.topology import load_cluster


def names(c, r):
    return [c.link_names[i] for i in r]


def test_route_is_a_connected_path_in_the_graph(shared_cluster):
    c = shared_cluster("dgx-h100", nodes=3)
    edges_by_index = {}
    for u, v, d in c.graph.edges(data=True):
        edges_by_index.setdefault(d["index"], []).append((u, v))
    rng = np.random.default_rng(0)
    for s, d in rng.integers(0, c.n_gpus, size=(60, 2)):
        r = c.route(s, d)
        if s == d:
            assert len(r) == 0
            continue
        # walk: the first link leaves the source GPU, each next link starts where the last ended
        at = {c.gpus[s]}
        for i in r:
            nxt = {v for u, v in edges_by_index[int(i)] if u in at}
            assert nxt, f"route {names(c, r)} is not connected"
            at = nxt
        assert c.gpus[d] in at
        assert len(set(r.tolist())) == len(r), "no link twice"


def test_route_deterministic_and_cached():
    a, b = load_cluster("dgx-h100", nodes=4), load_cluster("dgx-h100", nodes=4)
    for s, d in [(0, 31), (5, 9), (3, 3), (17, 2)]:
        assert np.array_equal(a.route(s, d), b.route(s, d))
        assert a.route(s, d) is a.route(s, d)  # cached
    with pytest.raises(ValueError):
        a.route(0, 31)[0] = 1  # cached routes are read-only


def test_intra_node_hops_and_classes(shared_cluster):
    c = shared_cluster("dgx-h100")
    r = c.route(0, 5)
    assert len(r) == 2 and c.path_class(0, 5) == "nvlink"
    assert c.route_bandwidth(0, 5) == pytest.approx(450e9)
    p = shared_cluster("h100-pcie-4gpu")
    assert p.path_class(0, 1) == "nvlink" and p.route_bandwidth(0, 1) == pytest.approx(300e9)
    # no bridge between 0 and 2: PCIe switch -> CPU0 -> UPI -> CPU1 -> switch
    assert p.path_class(0, 2) == "pcie"
    assert [p.link_kind[i] for i in p.route(0, 2)] == ["pcie", "pcie", "cpu-interconnect", "pcie", "pcie"]


def test_rail_aware_inter_node_routes(shared_cluster):
    c = shared_cluster("dgx-h100", nodes=4)
    # same rail (GPU 3 of host 0 -> GPU 3 of host 1): NIC 3 -> rail-3 leaf -> NIC 3, no spine
    r = names(c, c.route(3, 8 + 3))
    assert r[:3] == ["h0.gpu3->pcie_switch1", "h0.pcie_switch1->nic3", "h0.nic3->leaf3"]
    assert r[3:] == ["leaf3->h1.nic3", "h1.nic3->pcie_switch1", "h1.pcie_switch1->gpu3"]
    assert not any("spine" in x for x in r) and c.path_class(3, 11) == "network"
    # cross rail (GPU 0 -> GPU 5 of another host): leaves of rails 0 and 5, via a spine
    r = names(c, c.route(0, 8 + 5))
    assert "h0.nic0->leaf0" in r and "leaf5->h1.nic5" in r
    assert sum("spine" in x for x in r) == 2 and len(r) == 8
    # every GPU leaves via the NIC of its own rail
    for g in range(8):
        first_nic = [x for x in names(c, c.route(g, 16 + g)) if "->leaf" in x][0]
        assert first_nic == f"h0.nic{g}->leaf{g}", f"{g=}"


def test_symmetric_hop_counts_and_bottleneck(shared_cluster):
    c = shared_cluster("dgx-a100-superpod", nodes=60)
    rng = np.random.default_rng(1)
    for s, d in rng.integers(0, c.n_gpus, size=(40, 2)):
        assert len(c.route(s, d)) == len(c.route(d, s))
        if c.host_of[s] != c.host_of[d]:
            assert c.route_bandwidth(s, d) == pytest.approx(25e9), f"{s=}, {d=}"  # HDR NIC is the bottleneck
            assert len(c.route(s, d)) in (6, 8, 10)  # same leaf / same pod / via core


def test_three_tier_core_path(shared_cluster):
    c = shared_cluster("dgx-a100-superpod", nodes=140)
    r = names(c, c.route(0, 8 * 139 + 7))  # first pod -> last pod, cross rail
    assert any(x.startswith("agg") and "->core" in x for x in r) and len(r) == 10


def test_structured_route_matches_shortest_path_length(shared_cluster):
    # the formula route is a shortest path (hop count) in the graph, checked on a small cluster
    c = shared_cluster("dgx-h100", nodes=40)  # 40 nodes > 32 per leaf: two leaf blocks per rail
    G = nx.DiGraph(c.graph)
    for s, d in [(0, 8), (0, 8 * 35 + 2), (7, 8 * 39 + 7), (1, 2)]:
        sp = nx.shortest_path_length(G, c.gpus[s], c.gpus[d])
        assert len(c.route(s, d)) == sp


def test_routes_vectorised_helper(shared_cluster):
    c = shared_cluster("dgx-h100", nodes=2)
    out = c.routes([0, 1, 2], [8, 9, 2])
    assert [len(r) for r in out] == [6, 6, 0]
    with pytest.raises(ClusterSimError):
        c.routes([0, 1], [2])
    with pytest.raises(ClusterSimError, match="out of range"):
        c.route(0, 16)


def test_without_p2p_routes_stage_through_host_memory(shared_cluster):
    c = shared_cluster("dgx-h100")
    n = c.with_p2p(False)
    assert c.p2p and not n.p2p and n.graph is c.graph
    r = names(n, n.route(0, 1))
    assert r == ["h0.gpu0->pcie_switch0", "h0.pcie_switch0->cpu0", "h0.cpu0->pcie_switch0", "h0.pcie_switch0->gpu1"]
    assert n.path_class(0, 1) == "pcie" and c.path_class(0, 1) == "nvlink"
    r = names(n, n.route(0, 7))  # across sockets: through cpu0's memory, then UPI
    assert "h0.cpu0->cpu1" in r and r[0] == "h0.gpu0->pcie_switch0"


def test_without_gdr_network_routes_cross_the_cpu(shared_cluster):
    c = shared_cluster("dgx-h100", nodes=2).with_gdr(False)
    r = names(c, c.route(0, 8))
    assert r[:4] == ["h0.gpu0->pcie_switch0", "h0.pcie_switch0->cpu0", "h0.cpu0->pcie_switch0",
                     "h0.pcie_switch0->nic0"]
    assert r[-4:] == ["h1.nic0->pcie_switch0", "h1.pcie_switch0->cpu0", "h1.cpu0->pcie_switch0",
                      "h1.pcie_switch0->gpu0"]
    assert c.path_class(0, 8) == "network"


def test_shared_nic_and_big_cluster_speed_shape(shared_cluster):
    c = shared_cluster("cannon-4xa100", nodes=2)
    assert c.nic_bandwidth_per_gpu == pytest.approx(12.5e9 / 4)
    r = c.route(1, 6)
    assert c.link_names[r[2]] == "h0.nic0->switch0"  # 8 ports fit one switch: tiers 1
    big = shared_cluster("dgx-h100", nodes=2048)
    assert big.n_gpus == 16384 and big.fabric.tiers == 3
    assert len(big.route(0, 16383)) == 10 and big.path_class(0, 16383) == "network"


@pytest.mark.parametrize("fabric, nodes", [
    ("{switch_radix: 8, tiers: 3}", 40),                                  # rail-optimised, several pods
    ("{switch_radix: 8, tiers: 3, rail_optimized: false}", 30),
    ("{switch_radix: 8, tiers: 2, rail_optimized: false}", 8),
    ("{switch_radix: 12, oversubscription: 2.0}", 20),
])
def test_small_fat_trees_route_on_shortest_paths(tmp_path, fabric, nodes):
    p = tmp_path / "t.yaml"
    p.write_text(f"extends: cannon-4xh100\nname: t\ncluster: {{nodes: {nodes}, fabric: {fabric}}}\n")
    c = load_cluster(p)
    G = nx.DiGraph(c.graph)
    edges_by_index = {d["index"]: (u, v) for u, v, d in c.graph.edges(data=True)}
    rng = np.random.default_rng(2)
    for s, d in rng.integers(0, c.n_gpus, size=(40, 2)):
        r = c.route(s, d)
        if s == d:
            continue
        # consecutive, connected and as short as the graph allows
        hops = [edges_by_index[int(i)] for i in r]
        assert hops[0][0] == c.gpus[s] and hops[-1][1] == c.gpus[d]
        assert all(a[1] == b[0] for a, b in zip(hops, hops[1:]))
        # GPUs do not forward traffic: other GPUs may not be intermediate hops
        ends = {c.gpus[s], c.gpus[d]}
        H = nx.subgraph_view(G, filter_node=lambda n: n in ends or G.nodes[n]["kind"] != "gpu")
        assert len(r) == nx.shortest_path_length(H, c.gpus[s], c.gpus[d])


# -- spreading over the spine layer (d-mod-k, destination-based) ---------------------------------

def _switch_link_loads(c, pairs):
    """Flows per cable on every switch-to-switch link, and each link's fair share (flows per cable).

    The fair share of an up-link (leaf -> spine) is what perfect spreading would put on it: the
    flows its leaf sends upwards times its share of the leaf's up cables; of a down-link
    (spine -> leaf), the flows the leaf receives from above times its share of the leaf's cables.
    """
    count = np.zeros(len(c.link_bandwidth))
    for s, d in pairs:
        count[c.route(s, d)] += 1
    cables = c.link_bandwidth / c.fabric.link_bw
    groups: dict[tuple[str, str], list[int]] = {}
    for i, name in enumerate(c.link_names):
        a, b = name.split("->")
        if a.startswith("leaf") and b.startswith("spine"):
            groups.setdefault(("up", a), []).append(i)
        elif a.startswith("spine") and b.startswith("leaf"):
            groups.setdefault(("down", b), []).append(i)
    load, fair = [], []
    for idx in groups.values():
        idx = np.asarray(idx)
        flows, cab = count[idx].sum(), cables[idx].sum()
        if flows == 0:
            continue
        load += list(count[idx] / cables[idx])
        fair += list(np.full(len(idx), flows / cab))
    return np.asarray(load), np.asarray(fair)


def _patterns_128():
    """Rings and permutations over the 1,024 GPUs of 128 DGX H100 (every GPU sends one flow)."""
    N, g = 1024, 8
    H = N // g

    def shift(hosts, rails):
        return [(i, ((i // g + hosts) % H) * g + (i % g + rails) % g) for i in range(N)]

    return {
        "ring in rank order": [(i, (i + 1) % N) for i in range(N)],
        "ring in reverse rank order": [(i, (i - 1) % N) for i in range(N)],
        "rail-shifted ring (GPU r of host h -> GPU r+1 of host h+1)": shift(1, 1),
        "shift by one SU, same rail": shift(32, 0),
        "shift by 37 hosts, same rail": shift(37, 0),
        "shift by 3 hosts and 3 rails": shift(3, 3),
        "shift by 64 hosts and 5 rails": shift(64, 5),
    }


@pytest.mark.parametrize("pattern", list(_patterns_128()))
def test_rings_and_permutations_spread_over_all_spines(pattern, shared_cluster):
    # Bound: no switch-to-switch cable carries more than one flow (a flow never exceeds its NIC's
    # line rate, which is one cable's, so the non-blocking fabric is never the bottleneck), hence
    # at most 1x the fair share; the brief asks for <= ~2x, what ECMP-like hashing of 32 flows
    # onto 16 spines typically reaches. The former port-mod-spines choice put a rail's traffic
    # on 2 of 16 spines: 8 flows per cable, 8x the fair share, on the rail-shifted ring.
    c = shared_cluster("dgx-h100-superpod", nodes=128)
    load, fair = _switch_link_loads(c, _patterns_128()[pattern])
    assert len(load) > 0
    assert load.max() <= 1.0
    assert (load / fair).max() <= 2.0
    assert load.max() / load.mean() <= 1.5


def test_trees_over_all_hosts_spread_over_all_spines(shared_cluster):
    # NCCL's double binary tree between the node heads of each rail, both directions
    c = shared_cluster("dgx-h100-superpod", nodes=128)
    g, H = 8, 128
    pairs = []
    for r in range(g):
        for heads in (list(range(H)), list(range(H))[::-1]):
            for i in range(1, H):
                a, p = heads[i] * g + r, heads[(i - 1) // 2] * g + r
                pairs += [(a, p), (p, a)]
    load, fair = _switch_link_loads(c, pairs)
    assert (load / fair).max() <= 2.0
    assert load.max() / load.mean() <= 2.0


def test_flow_tree_and_ring_all_reduce_match_analytical_on_128_nodes(shared_cluster, shared_profile):
    # the spine choice used to put a rail's tree edges on 2 of 16 spines: flow 5.6x analytical
    from clustersim.collectives.flow import flow_simulation

    c = shared_cluster("dgx-h100-superpod", nodes=128)
    for algo in ("tree", "ring"):
        sim = flow_simulation(c, shared_profile(c.default_profile), nvls=False)
        p = sim.collective("all_reduce", 1024, 2**30, algorithm=algo)
        sim.env.run()
        a = sim.collectives.model.estimate("all_reduce", 1024, 2**30, algorithm=algo)
        assert p.value.time_s == pytest.approx(a.time_s, rel=0.01), algo


def _fabric_names(c, r):
    return [n for n in names(c, r) if "leaf" in n or "spine" in n or "agg" in n or "core" in n]


def _mirror(ns):
    return ["->".join(n.split("->")[::-1]) for n in ns[::-1]]


def test_routes_symmetric_where_expected(shared_cluster):
    c = shared_cluster("dgx-h100-superpod", nodes=128)
    f = c.fabric
    rng = np.random.default_rng(3)
    mirrored = 0
    for s, d in rng.integers(0, c.n_gpus, size=(300, 2)):
        s, d = int(s), int(d)
        a, b = c.route(s, d), c.route(d, s)
        # always: same length, same link kinds in mirror order
        assert len(a) == len(b)
        assert [c.link_kind[i] for i in a] == [c.link_kind[i] for i in b][::-1]
        hs, hd = int(c.host_of[s]), int(c.host_of[d])
        rs, rd = c.template.rail[int(c.local_of[s])], c.template.rail[int(c.local_of[d])]
        # exact mirror when both directions cross the same spine: same leaf, or equal destination slots mod S
        same_spine = f.leaf_of(hs, rs) == f.leaf_of(hd, rd) or \
            (f.slot_of(hs, rs) % f.u) % f.n_spines == (f.slot_of(hd, rd) % f.u) % f.n_spines
        if hs != hd and same_spine:
            assert _fabric_names(c, b) == _mirror(_fabric_names(c, a))
            mirrored += 1
    assert mirrored > 10
    # a ring edge between hosts 32 apart (one SU) on one rail: the same spine both ways
    assert _fabric_names(c, c.route(8 * 32 + 3, 3)) == _mirror(_fabric_names(c, c.route(3, 8 * 32 + 3)))


def test_destination_based_down_links(shared_cluster):
    # every source outside the destination's leaf enters that leaf over the same spine -> leaf link
    # (per-destination forwarding, as an InfiniBand subnet manager programs a fat tree), on 2 and 3 tiers
    for nodes in (128, 288):
        c = shared_cluster("dgx-h100-superpod", nodes=nodes)
        for dst in (0, 13, 8 * 100 + 6):
            climbs = [_fabric_names(c, c.route(s, dst)) for s in range(8 * 40, c.n_gpus, 13)]
            climbs = [r for r in climbs if len(r) > 2]  # other leaves (and, on 3 tiers, other pods)
            assert len(climbs) > 20 and len({tuple(r[-2:]) for r in climbs}) == 1, f"{nodes=}, {dst=}"
        # and spines are all used by the destinations of one leaf
        used = {_fabric_names(c, c.route(8 * 40, 8 * h))[1].split("->")[1] for h in range(32)}
        assert len(used) == (16 if nodes == 128 else 32)
