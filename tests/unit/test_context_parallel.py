"""Context parallelism: schema, K/V exchange volume, comm_cp, memory per rank, ring vs all-gather,
gradient reduction over dp*cp, fidelity agreement, and the Llama 3 405B 128k validation row."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.config.base import load_model
from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario
from clustersim.workload.context_parallel import cp_send_bytes, kv_block_bytes
from clustersim.workload.segments import TPCollectiveSegment

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "data" / "cp-small.yaml"  # 4-layer Llama 3 8B, 32k tokens, TP2 CP4 DP2 on 16 H100
LAYERS, SEQ, KV_HIDDEN, TP, CP = 4, 32768, 1024, 2, 4


def run(*overrides, fidelity="analytical", keep=False, path=SMALL):
    return run_scenario(path, fidelity=fidelity, overrides=list(overrides), keep_timeline=keep)


def cp_collectives(result, name):
    """CP collectives inside the compute op ``name`` of executor rank 0."""
    ops = [o for o in result.step.graph.ops if o.rank == 0 and o.name == name]
    assert len(ops) == 1
    return [s.coll for s in ops[0].segments if isinstance(s, TPCollectiveSegment) and s.coll.axis == "cp"]


def test_ring_bytes_per_layer_equal_the_analytical_volume():
    res = run(keep=True)
    kv = 2 * (SEQ / CP) * (KV_HIDDEN / TP) * 2  # K and V of the local tokens, this TP rank's heads, bf16
    assert kv_block_bytes(1, SEQ, KV_HIDDEN, TP, CP) == kv
    fwd, bwd = cp_collectives(res, "F0"), cp_collectives(res, "B0")
    assert all(c.op == "send_recv" for c in fwd + bwd)
    assert len(fwd) == LAYERS * (CP - 1)
    assert sum(c.size_bytes for c in fwd) == pytest.approx(LAYERS * (CP - 1) * kv)
    # backward: KV and dKV together on cp-1 steps, and the dKV's last hop home
    assert sum(c.size_bytes for c in bwd) == pytest.approx(LAYERS * (2 * CP - 1) * kv)
    assert cp_send_bytes(CP, "ring", kv) == {"forward": (CP - 1) * kv, "backward": (2 * CP - 1) * kv}
    # one ring step on the CP group of every TP rank at once (CP inside the node, after TP)
    assert fwd[0].groups == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert res.extra["cp"]["send_bytes_per_layer"]["forward"] == pytest.approx((CP - 1) * kv)


def test_allgather_bytes_per_layer_equal_the_analytical_volume():
    res = run("parallelism.cp_algorithm=allgather", keep=True)
    kv = kv_block_bytes(1, SEQ, KV_HIDDEN, TP, CP)
    fwd, bwd = cp_collectives(res, "F0"), cp_collectives(res, "B0")
    assert [c.op for c in fwd] == ["all_gather"] * LAYERS
    assert [c.op for c in bwd] == ["all_gather", "reduce_scatter"] * LAYERS  # re-gather K, V; scatter dK, dV
    for c in fwd + bwd:
        assert c.size_bytes * (CP - 1) / CP == pytest.approx((CP - 1) * kv), \
            f"{c=}"  # nccl-tests size: the gathered buffer
        assert c.ranks == [0, 2, 4, 6]  # CP inside the node, after TP (tp-cp-ep-dp-pp)


def test_memory_per_rank_falls_with_cp():
    base = run("parallelism.cp=1", "parallelism.dp=8", "training.global_batch=8")
    cp2 = run("parallelism.cp=2", "parallelism.dp=4", "training.global_batch=8")
    cp4 = run()
    acts = [r.memory["activations"] for r in (base, cp2, cp4)]
    assert acts[1] == pytest.approx(acts[0] / 2) and acts[2] == pytest.approx(acts[0] / 4)
    assert base.memory["peak_allocated_bytes"] > cp2.memory["peak_allocated_bytes"] > cp4.memory["peak_allocated_bytes"]


def test_ring_hides_transfers_that_the_allgather_exposes():
    ring, ag = run(), run("parallelism.cp_algorithm=allgather")
    # ring: each KV block travels beside the attention block it feeds; all-gather: exposed
    assert ring.breakdown["comm_cp"] < 0.5 * ag.breakdown["comm_cp"]
    kv = kv_block_bytes(1, SEQ, KV_HIDDEN, TP, CP)
    assert ring.memory["cp_buffers"] == pytest.approx(4 * kv)
    assert ag.memory["cp_buffers"] == pytest.approx(2 * CP * kv)  # one layer's gathered K, V and dK, dV


def test_gradients_reduce_over_dp_times_cp():
    res = run(keep=True)
    reductions = [o for o in res.step.graph.ops if o.category == "comm_dp" and o.coll is not None]
    assert reductions
    for op in reductions:
        assert len(op.coll.groups) == TP and all(len(g) == 2 * CP for g in op.coll.groups)
    assert res.extra["cp"]["grad_reduction_ranks"] == 2 * CP
    # no DP at all: the CP ranks still reduce their gradients
    cp8 = run("parallelism.cp=8", "parallelism.dp=1", keep=True)
    assert any(o.category == "comm_dp" for o in cp8.step.graph.ops)


@pytest.mark.parametrize("changes, needle", [
    ({"cp": 3}, "divisible by 2*cp"),
    ({"cp_algorithm": "tree"}, "cp_algorithm"),
])
def test_bad_cp_settings_are_refused(changes, needle):
    data = load_model(Scenario, SMALL).model_dump(exclude_none=True)
    data["parallelism"].update(changes)
    with pytest.raises(Exception) as err:
        Scenario.model_validate(data)
    assert needle in str(err.value)


def test_eager_attention_with_cp_is_refused():
    with pytest.raises(ClusterSimError, match="attention: flash"):
        run("model.attention=eager")


def test_planner_searches_cp_for_long_sequences():
    from clustersim.plan.constraints import Context, structural_violation
    from clustersim.plan.search import why_dropped
    from clustersim.plan.space import Mix, SpaceOptions, enumerate_mixes

    opts = SpaceOptions(zero=[1], micro_batch=[1], recompute=["none"], sequence_parallel=[True], schedule=["1f1b"])
    assert {m.cp for m in enumerate_mixes(16, 4, opts, seq_len=SEQ)} == {1, 2, 4}
    assert {m.cp for m in enumerate_mixes(16, 4, opts, seq_len=8192)} == {1}  # short sequences: no CP
    ctx = Context(32, 8, 14336, 4, SEQ, 4, 8)
    mix = Mix(dp=2, tp=2, pp=1, virtual_stages=1, ep=1, cp=4, sequence_parallel=True, zero=1, schedule="1f1b",
              micro_batch=1, recompute="none")
    assert structural_violation(mix, ctx) is None
    assert why_dropped(SMALL, mix) is None  # valid, fits, simulated by the planner's own screen
    bad = Mix(dp=1, tp=2, pp=1, virtual_stages=1, ep=1, cp=8, sequence_parallel=True, zero=3, schedule="1f1b",
              micro_batch=1, recompute="none")
    assert structural_violation(bad, ctx)[0] == "context-parallel"


def test_trace_and_html_show_cp_traffic_as_its_own_stream(tmp_path):
    import json

    from clustersim.cli.run import run_and_write
    from clustersim.report.kinds import BREAKDOWN_KIND, KIND_COLORS

    trace, page = tmp_path / "t.json", tmp_path / "r.html"
    res, _ = run_and_write(SMALL, fidelity="analytical", trace_path=trace, html_path=page)
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    cp = [e for e in events if e.get("cat") == "comm_cp"]
    assert cp and all(e["args"]["group"] == "cp" and e["tid"] == 8 for e in cp)
    assert {e["args"]["op"] for e in cp} == {"send_recv"}
    assert BREAKDOWN_KIND["comm_cp"] == "comm_cp" and KIND_COLORS["comm_cp"] not in (
        KIND_COLORS["comm_tp"], KIND_COLORS["comm_ep"], KIND_COLORS["comm_dp"], KIND_COLORS["comm_pp"])
    html = page.read_text()
    assert KIND_COLORS["comm_cp"] in html and "CP communication" in html
