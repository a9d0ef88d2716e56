"""Expert-parallel placement and node-limited routing (``parallelism.ep_max_nodes``).

EP groups lie inside a node where they fit (the layout's rank order); with node-limited routing
over an EP group of several nodes the dispatch/combine runs in two stages (network once per target
node on the rank's rail group, then NVLink inside the node) and the inter-node bytes per token
are ``min(top_k, M) x hidden x 2 x (N - 1) / N`` instead of ``top_k x hidden x 2 x (N - 1) / N``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clustersim.errors import ClusterSimError
from clustersim.simulate.resolve import resolve_scenario
from clustersim.simulate.run import run_scenario, transformer_step
from clustersim.workload.moe import ep_node_groups, inter_node_bytes
from clustersim.workload.segments import TPCollectiveSegment

ROOT = Path(__file__).resolve().parents[2]
MIXTRAL = ROOT / "scenarios" / "mixtral-8x7b-ep8.yaml"
SMALL = ["model.layers=2", "training.global_batch=128"]  # 2 micro-batches per replica: fast
# 32 experts top-4 over EP32 on 64 H100 (8 per node): each EP group spans 4 nodes
WIDE = SMALL + ["model.moe.experts=32", "model.moe.top_k=4", "model.moe.expert_ffn_hidden=1024", "parallelism.ep=32"]
TOKENS, HIDDEN = 4096, 4096  # tokens each rank routes (mbs 1 x seq 4096, TP1), model width


def run(*overrides, fidelity="analytical", keep=False):
    return run_scenario(MIXTRAL, fidelity=fidelity, overrides=list(overrides), keep_timeline=keep)


def ep_colls(result, axes=("ep", "ep_inter", "ep_intra"), name="F0"):
    """Dispatch/combine collectives inside compute op ``name`` of executor rank 0, in order."""
    ops = [o for o in result.step.graph.ops if o.rank == 0 and (o.name == name or o.name.startswith(name + "."))]
    assert ops
    return [s.coll for op in ops for s in op.segments if isinstance(s, TPCollectiveSegment) and s.coll.axis in axes]


@pytest.mark.parametrize("overrides", [
    [],  # TP1 EP8: one node per EP group
    ["parallelism.tp=2", "parallelism.dp=32", "parallelism.sequence_parallel=true"],  # EP8 over TP2 x DP4
    ["parallelism.tp=2", "parallelism.dp=32", "parallelism.sequence_parallel=true", "parallelism.ep=4",
     "parallelism.expert_tp=2"],  # EP4 x expert-TP2
])
def test_ep_groups_lie_inside_a_node_where_they_fit(overrides):
    rs = resolve_scenario(MIXTRAL, overrides)
    step = transformer_step(rs, reduced=False)
    host_of = rs.cluster.host_of
    assert rs.cluster.n_gpus // (int(host_of[-1]) + 1) == 8
    for replica in step.replicas:
        groups = step.expert_axis_groups(replica, 0)
        for key in ("ep", "etp"):
            assert {int(host_of[r]) for r in groups[key][0]} == {int(host_of[groups[key][0][0]])}


def test_a_wider_ep_group_spans_the_fewest_nodes():
    rs = resolve_scenario(MIXTRAL, WIDE + ["parallelism.ep_max_nodes=2"])
    step = transformer_step(rs, reduced=False)
    host_of = rs.cluster.host_of
    for replica in step.replicas:
        ep = step.expert_axis_groups(replica, 0)["ep"][0]
        assert len({int(host_of[r]) for r in ep}) == 4  # 32 ranks, 8 per node: 4 whole nodes
        assert sorted(ep) == list(range(min(ep), min(ep) + 32))


@pytest.mark.parametrize("max_nodes", [1, 2, 3, 4])
def test_inter_node_bytes_follow_the_node_limit(max_nodes):
    res = run(*WIDE, f"parallelism.ep_max_nodes={max_nodes}", keep=True)
    top_k, nodes = 4, 4
    assert res.extra["moe"]["node_limited"] and res.extra["moe"]["ep_nodes"] == nodes
    inter, intra = ep_colls(res, ("ep_inter",)), ep_colls(res, ("ep_intra",))
    assert not ep_colls(res, ("ep",)) and len(inter) == len(intra) == 2 * 2  # dispatch and combine, 2 layers
    want = TOKENS * min(top_k, max_nodes) * HIDDEN * 2 * (nodes - 1) / nodes
    for c in inter:  # the rail group: one EP rank per node, (N-1)/N of the send buffer crosses the network
        assert c.ranks == [0, 8, 16, 24] and len(c.groups) == 8
        assert c.size_bytes * (nodes - 1) / nodes == pytest.approx(want), f"{c=}"
        assert c.size_bytes * (nodes - 1) / nodes == pytest.approx(inter_node_bytes(TOKENS, HIDDEN, top_k, max_nodes, nodes)), \
            f"{c=}"
    for c in intra:  # NVLink carries every expert copy inside the node
        assert c.ranks == list(range(8)) and len(c.groups) == 4
        assert c.size_bytes == TOKENS * top_k * HIDDEN * 2
    # dispatch: network then NVLink; combine: NVLink then network
    assert [c.axis for c in ep_colls(res, ("ep_inter", "ep_intra"))[:4]] == ["ep_inter", "ep_intra", "ep_intra", "ep_inter"]


def test_unrestricted_inter_node_bytes_are_reached_exactly_when_the_limit_reaches_top_k():
    free = run(*WIDE, keep=True)
    (c, *_) = ep_colls(free, ("ep",))
    n, ppn = 32, 8
    unrestricted = c.size_bytes * (n - ppn) / n  # the plain all-to-all's share leaving the node
    assert unrestricted == pytest.approx(inter_node_bytes(TOKENS, HIDDEN, 4, None, 4))
    for m, same in ((4, True), (3, False)):  # top_k = 4: M >= top_k sends every expert copy
        limited = inter_node_bytes(TOKENS, HIDDEN, 4, m, 4)
        assert (limited == pytest.approx(unrestricted)) is same, f"{m=}, {same=}"


def test_node_limited_routing_speeds_up_a_multi_node_ep_step():
    free = run(*WIDE)
    limited = run(*WIDE, "parallelism.ep_max_nodes=1")
    two = run(*WIDE, "parallelism.ep_max_nodes=2")
    assert limited.breakdown["comm_ep"] < two.breakdown["comm_ep"] < free.breakdown["comm_ep"]
    assert limited.step_time_s < two.step_time_s < free.step_time_s
    # the kernels are the same; their clock follows the rank's busy share in the power limiter's window
    # (profile clock_window_ms), which the shorter dispatch raises a little
    assert limited.breakdown["compute"] == pytest.approx(free.breakdown["compute"], rel=5e-3)


def test_single_node_ep_is_unchanged():
    base, limited = run(*SMALL, keep=True), run(*SMALL, "parallelism.ep_max_nodes=1", keep=True)
    assert limited.step_time_s == base.step_time_s and limited.breakdown == base.breakdown
    assert not limited.extra["moe"]["node_limited"] and not ep_colls(limited, ("ep_inter", "ep_intra"))
    assert "ep_max_nodes" not in base.extra["moe"]


def test_flow_fidelity_agrees_on_the_two_stages():
    a = run(*WIDE, "parallelism.ep_max_nodes=2")
    f = run(*WIDE, "parallelism.ep_max_nodes=2", fidelity="flow")
    assert f.breakdown["comm_ep"] > 0
    assert f.step_time_s == pytest.approx(a.step_time_s, rel=0.15)


def test_uneven_ep_groups_are_refused():
    host_of = np.array([0] * 8 + [1] * 4)
    with pytest.raises(ClusterSimError, match="same number of EP ranks"):
        ep_node_groups(list(range(12)), host_of)


@pytest.mark.parametrize(("overrides", "message"), [
    (["parallelism.ep_max_nodes=0"], "ep_max_nodes"),
    (["parallelism.ep_max_nodes=2"], "exceeds the 1 node(s) an EP group of 8 ranks spans"),
    (["parallelism.ep_max_nodes=1", "parallelism.ep_dispatcher=allgather"], "needs ep_dispatcher: alltoall"),
    (["model.moe.experts=32", "parallelism.ep=32", "parallelism.ep_max_nodes=5"], "exceeds the 4 node(s)"),
    (["cluster.gpus=48", "parallelism.dp=48", "training.global_batch=96", "model.moe.experts=24", "parallelism.ep=12",
      "parallelism.ep_max_nodes=2"], "ranks 0..11 hold 8/4 per node"),  # EP12 on 8-GPU nodes
])
def test_bad_ep_max_nodes_exit_2(overrides, message, cli):
    args = [a for o in overrides for a in ("--set", o)]
    r = cli("validate", str(MIXTRAL), *args)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert "parallelism.ep_max_nodes" in r.stderr


def test_trace_shows_both_stages_on_the_ep_track(tmp_path):
    import json

    from clustersim.cli.run import run_and_write

    trace = tmp_path / "t.json"
    run_and_write(MIXTRAL, fidelity="analytical", overrides=WIDE + ["parallelism.ep_max_nodes=2"], trace_path=trace)
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    ep = [e for e in events if e.get("cat") == "comm_ep"]
    assert {e["args"]["group"] for e in ep} == {"ep_inter", "ep_intra"}
    assert len({e["tid"] for e in ep}) == 1  # one EP track for both stages
