"""Mixture-of-experts: schema, expert-parallel dispatch/combine volume, comm_ep, routing skew."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.simulate.run import run_scenario
from clustersim.workload.moe import MoEDims, expert_popularity, routing
from clustersim.workload.segments import TPCollectiveSegment

ROOT = Path(__file__).resolve().parents[2]
MIXTRAL = ROOT / "scenarios" / "mixtral-8x7b-ep8.yaml"
SMALL = ["model.layers=4", "training.global_batch=128"]  # 2 micro-batches per replica: fast


def run(*overrides, fidelity="analytical", keep=False):
    return run_scenario(MIXTRAL, fidelity=fidelity, overrides=SMALL + list(overrides), keep_timeline=keep)


def ep_collectives(result, name):
    """EP collectives inside the compute op(s) ``name`` of executor rank 0 (split per unit: ``name.layer``)."""
    ops = [o for o in result.step.graph.ops if o.rank == 0 and (o.name == name or o.name.startswith(name + "."))]
    assert ops
    return [s.coll for op in ops for s in op.segments if isinstance(s, TPCollectiveSegment) and s.coll.axis == "ep"]


def test_all_to_all_bytes_equal_the_analytical_volume():
    res = run(keep=True)
    tokens, hidden, act_bytes, top_k, ep, layers = 4096, 4096, 2, 2, 8, 4
    volume = tokens * hidden * act_bytes * top_k * (ep - 1) / ep  # bytes leaving a rank, each way
    for name in ("F0", "B0"):
        colls = ep_collectives(res, name)
        assert len(colls) == 2 * layers  # dispatch and combine of every layer (backward: their conjugates)
        for c in colls:
            assert c.op == "all_to_all"
            # nccl-tests size = the rank's whole send buffer; (ep-1)/ep of it leaves the rank
            assert c.size_bytes * (ep - 1) / ep == pytest.approx(volume), f"{name=}, {c=}"
            assert c.ranks == list(range(8))  # EP inside the first node (TP1, tp-dp order)


def test_comm_ep_in_the_breakdown_only_for_moe():
    res = run()
    assert res.breakdown["comm_ep"] > 0
    assert res.extra["moe"]["imbalance"] == 1.0
    assert res.extra["moe"]["tokens_per_expert_max"] == pytest.approx(4096 * 2 * 8 / 8)
    dense = run_scenario(ROOT / "scenarios" / "ref-single.yaml", fidelity="analytical")
    assert "comm_ep" not in dense.breakdown and "moe" not in dense.extra


def test_skewed_router_slows_the_step_and_reports_its_imbalance():
    base = run()
    skew = run("model.moe.router_skew=1.0")
    assert skew.extra["moe"]["imbalance"] > 1.2
    assert skew.step_time_s > base.step_time_s * 1.1
    assert run("model.moe.router_skew=1.0").step_time_s == skew.step_time_s  # seeded: reproducible
    # the seed picks which experts are popular: with 2 experts per EP rank the loaded rank changes
    moe = MoEDims(experts=16, top_k=2, expert_ffn_hidden=8, router_skew=1.0)
    assert {routing(moe, 1000, 8, 1, seed).local_tokens for seed in range(4)} != {routing(moe, 1000, 8, 1, 0).local_tokens}


def test_capacity_factor_drops_tokens_and_bounds_the_imbalance():
    capped = run("model.moe.router_skew=1.0", "model.moe.capacity_factor=1.25")
    assert capped.extra["moe"]["dropped_fraction"] > 0
    assert max(capped.extra["moe"]["tokens_per_expert_loaded_rank"]) <= 1.25 * 8192 + 1


def test_popularity_is_a_distribution_capped_per_token():
    p = expert_popularity(16, 4, 2.0, 0)
    assert p.sum() == pytest.approx(1.0) and p.max() <= 0.25 + 1e-12
    r = routing(MoEDims(experts=16, top_k=4, expert_ffn_hidden=8, router_skew=2.0), 1000, 4, 1, 0)
    assert r.imbalance > 1 and len(r.local_tokens) == 4


def test_tp2_with_ep_and_expert_tp_and_allgather_dispatcher():
    res = run("parallelism.tp=2", "parallelism.dp=32", "parallelism.sequence_parallel=true", keep=True)
    colls = ep_collectives(res, "F0")
    assert colls[0].ranks == list(range(8)) and res.breakdown["comm_ep"] > 0  # EP re-splits dp*tp: the TP ranks join
    assert colls[0].size_bytes == 4096 // 2 * 4096 * 2 * 2  # each TP rank routes its sequence shard
    etp = run("parallelism.tp=2", "parallelism.dp=32", "parallelism.sequence_parallel=true", "parallelism.ep=4",
              "parallelism.expert_tp=2")
    assert etp.breakdown["comm_ep"] > 0 and etp.extra["moe"]["expert_dp"] == 8
    ag = run("parallelism.ep_dispatcher=allgather", keep=True)
    assert {c.op for c in ep_collectives(ag, "F0")} == {"all_gather", "reduce_scatter"}


def test_ep_comm_overlap_hides_dispatch_behind_dense_compute():
    off, on = run(), run("parallelism.ep_comm_overlap=true")
    assert on.breakdown["comm_ep"] < off.breakdown["comm_ep"]
    # the same kernels; their clock follows the busy share in the power limiter's window (clock_window_ms)
    assert on.breakdown["compute"] == pytest.approx(off.breakdown["compute"], rel=5e-3)


def test_expert_states_are_sharded_by_ep_and_expert_dp():
    res = run("parallelism.zero=1")
    h, f, layers = 4096, 14336, 4
    attention = 2 * h * h + 2 * h * 1024
    per_rank = layers * (attention + h * 8 + 3 * h * f + 2 * h) + 2 * 32000 * h + h  # one expert per rank
    assert res.memory["params"] == pytest.approx(per_rank * 2)
    dense_states = (per_rank - layers * 3 * h * f) * 12 / 64  # ZeRO-1 over dp 64
    expert_states = layers * 3 * h * f * 12 / 8  # over expert-DP 8
    assert res.memory["optimizer"] == pytest.approx(dense_states + expert_states)


def test_flow_fidelity_runs_and_agrees():
    a, f = run("model.layers=2"), run("model.layers=2", fidelity="flow")
    assert f.breakdown["comm_ep"] > 0
    assert f.step_time_s == pytest.approx(a.step_time_s, rel=0.15)


@pytest.mark.parametrize(("override", "message"), [
    ("parallelism.ep=3", "must divide model.moe.experts"),
    ("parallelism.ep=16", "must divide"),
    ("model.moe.top_k=9", "exceeds model.moe.experts"),
    ("model.moe=null", "needs model.moe"),
    ("parallelism.expert_tp=3", "expert_tp"),
    ("model.moe.router_skew=-1", "router_skew"),
])
def test_bad_moe_inputs_exit_2(override, message, cli):
    r = cli("validate", str(MIXTRAL), "--set", override)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
