"""Ulysses (all-to-all) context parallelism: the exchanged volume per layer, the head rule, and both
fidelities agreeing on the uncontended small case."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.config.base import load_model
from clustersim.config.scenario import Scenario
from clustersim.errors import ClusterSimError
from clustersim.simulate.run import run_scenario
from clustersim.workload.segments import TPCollectiveSegment

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "data" / "cp-small.yaml"  # 4-layer Llama 3 8B, 32k tokens, TP2 CP4 DP2 on 16 H100
LAYERS, SEQ, HIDDEN, KV_HIDDEN, TP, CP = 4, 32768, 4096, 1024, 2, 4


def _run(*overrides, fidelity="analytical"):
    return run_scenario(SMALL, fidelity=fidelity, overrides=["parallelism.cp_algorithm=alltoall", *overrides],
                        keep_timeline=True)


def _cp(result, name):
    ops = [o for o in result.step.graph.ops if o.rank == 0 and o.name == name]
    return [s.coll for s in ops[0].segments if isinstance(s, TPCollectiveSegment) and s.coll.axis == "cp"]


def test_alltoall_volume_per_layer():
    res = _run()
    local = SEQ // CP
    qkv = local * (HIDDEN + 2 * KV_HIDDEN) / TP * 2  # Q, K, V of the local tokens, this TP rank's heads, bf16
    out = local * HIDDEN / TP * 2
    fwd, bwd = _cp(res, "F0"), _cp(res, "B0")
    assert [c.op for c in fwd + bwd] == ["all_to_all"] * (4 * LAYERS)
    assert sorted({c.size_bytes for c in fwd}) == sorted({qkv, out})  # Q/K/V there, the output back
    assert sum(c.size_bytes for c in bwd) == pytest.approx(LAYERS * (qkv + out))  # dO there, dQ/dK/dV back
    assert fwd[0].groups == [[0, 2, 4, 6], [1, 3, 5, 7]]  # the CP group of each TP rank, inside the node
    ring = run_scenario(SMALL, fidelity="analytical")
    # the same attention FLOPs, every per-token op on the local tokens: compute within the fused-kernel shape change
    assert res.breakdown["compute"] == pytest.approx(ring.breakdown["compute"], rel=0.05)
    assert res.breakdown["comm_cp"] > 0


def test_both_fidelities_agree_uncontended():
    a, f = _run(), _run(fidelity="flow")
    assert f.step_time_s == pytest.approx(a.step_time_s, rel=0.02)
    assert f.memory["peak_bytes_per_gpu"] == a.memory["peak_bytes_per_gpu"]


def test_heads_must_split_over_cp():
    data = load_model(Scenario, SMALL).model_dump()
    data["parallelism"].update(cp_algorithm="alltoall", cp=8, dp=1)  # kv_heads/tp = 4 over 8 CP ranks
    with pytest.raises(Exception) as exc:
        Scenario.model_validate(data)
    assert "kv_heads" in str(exc.value) and "divisible by cp" in str(exc.value)
