"""The planner (clustersim.plan): enumeration counts, constraint reasons, the step-time bound; over the whole
space of the 2-GPU reference (the report, its winners re-run, the --json document and --write-best):
tests/slow/test_plan_report_slow.py and test_plan_cli_slow.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from clustersim.plan import Mix, SpaceOptions, why_dropped
from clustersim.plan.constraints import Context, structural_violation
from clustersim.plan.evaluate import Evaluator
from clustersim.plan.space import enumerate_mixes

ROOT = Path(__file__).resolve().parents[2]
TP2 = ROOT / "scenarios" / "ref-tp2.yaml"  # 24-layer 0.35B GPT on 2 H200, global batch 8


def _count(n, layers, **kw):
    return len(list(enumerate_mixes(n, layers, SpaceOptions(**kw))))


def test_enumeration_counts_small_case():
    # 2 GPUs, 4 layers: (tp, pp) in {(1,1), (2,1), (1,2)}; tp=2 doubles for sequence parallel;
    # pp=2 has gpipe, 1f1b, interleaved v=2 (4 % (2*2) == 0), zb_h1, zb_v and dualpipe_v (v=2:
    # 2*2 <= 4 layers) and dualpipe: 1 + 2 + 7 shapes
    assert _count(2, 4, zero=[0], micro_batch=[1], recompute=["none"]) == 10
    assert _count(2, 4, zero=[0], micro_batch=[1], recompute=["none"], schedule=["gpipe", "1f1b", "interleaved"]) == 6
    # every other axis multiplies: 4 micro-batches x 3 recompute policies, and ZeRO 0, 2, 3 (ZeRO-1 is
    # ZeRO-2's run with more memory) where dp = 2 (tp 1, pp 1: 1 shape), ZeRO-0 alone where dp = 1 (9 shapes)
    assert _count(2, 4) == (1 * 3 + 9 * 1) * 4 * 3
    # under flash attention selective recompute is none's run: left out beside none
    assert len(list(enumerate_mixes(2, 4, SpaceOptions(), attention="flash"))) == (1 * 3 + 9 * 1) * 4 * 2
    # 8 GPUs, 8 layers: pp in 1,2,4,8 with interleaved v such that pp*v divides 8
    mixes = list(enumerate_mixes(8, 8, SpaceOptions(zero=[0], micro_batch=[1], recompute=["none"],
                                                    sequence_parallel=[False])))
    assert len(mixes) == len(set(mixes))
    assert all(m.dp * m.tp * m.pp * m.ep * m.cp == 8 for m in mixes)
    inter = sorted((m.pp, m.virtual_stages) for m in mixes if m.schedule == "interleaved")
    assert inter == [(2, 2), (2, 2), (2, 2), (2, 4), (2, 4), (2, 4), (4, 2), (4, 2)]
    # the V schedules hold two chunks per rank, where the layers allow (2 pp <= 8)
    vee = sorted({(m.schedule, m.pp, m.virtual_stages) for m in mixes if m.schedule in ("zb_v", "dualpipe_v")})
    assert vee == [("dualpipe_v", 2, 2), ("dualpipe_v", 4, 2), ("zb_v", 2, 2), ("zb_v", 4, 2)]
    # canonical: pp = 1 only as plain 1F1B with one virtual stage, tp = 1 never sequence parallel
    assert all(m.schedule == "1f1b" and m.virtual_stages == 1 for m in mixes if m.pp == 1)
    assert not any(m.sequence_parallel for m in enumerate_mixes(8, 8) if m.tp == 1)


def test_ep_axis_is_carved_out_of_dp_tp():
    mixes = list(enumerate_mixes(4, 4, SpaceOptions(cp=[1], zero=[0], micro_batch=[1], recompute=["none"],
                                                    sequence_parallel=[False]), experts=8))
    # dp*tp*pp = 4 GPUs; ep divides dp*tp and the 8 experts (Megatron-Core: EP re-splits dp*tp)
    assert all(m.dp * m.tp * m.pp == 4 and (m.dp * m.tp) % m.ep == 0 for m in mixes)
    assert {(m.tp, m.pp, m.dp, m.ep) for m in mixes if m.schedule == "1f1b" and m.pp == 1} == {
        (1, 1, 4, 1), (1, 1, 4, 2), (1, 1, 4, 4), (2, 1, 2, 1), (2, 1, 2, 2), (2, 1, 2, 4),
        (4, 1, 1, 1), (4, 1, 1, 2), (4, 1, 1, 4)}
    assert {m.ep for m in enumerate_mixes(4, 4, SpaceOptions(zero=[0]))} == {1}  # a dense model: no EP
    ctx = Context(16, 16, 4096, 4, 2048, 8, 8, experts=8)
    tp2 = next(m for m in mixes if m.tp == 2 and m.ep == 2)
    assert structural_violation(tp2, ctx)[0] == "expert-parallel"  # MoE with TP needs sequence parallel
    assert "sequence parallel" in structural_violation(tp2, ctx)[1]
    assert structural_violation(next(m for m in mixes if m.tp == 1 and m.ep == 4), ctx) is None
    dense = Context(16, 16, 4096, 4, 2048, 8, 8)
    assert "MoE" in structural_violation(next(m for m in mixes if m.ep == 2), dense)[1]


def test_canonical_zero_on_one_rank():
    # nothing to shard: every ZeRO stage is ZeRO-0's run (ZeRO-3 on one GPU was 1.2 % faster, a bug)
    from clustersim.simulate.run import run_scenario
    from clustersim.simulate.resolve import resolve_scenario

    one = ROOT / "scenarios" / "ref-single.yaml"
    z0, z3 = (run_scenario(resolve_scenario(one, [f"parallelism.zero={z}"]), fidelity="analytical")
              for z in (0, 3))
    assert z3.step_time_s == z0.step_time_s and z3.memory["peak_bytes_per_gpu"] == z0.memory["peak_bytes_per_gpu"]
    assert {m.zero for m in enumerate_mixes(1, 4)} == {0}


@pytest.mark.parametrize("mix, name, words", [
    (Mix(64, 16, 1, 1, 1, 1, False, 0, "1f1b", 1, "none"), "tp-in-nvlink-domain", "spans nodes"),
    (Mix(1, 1, 1024, 1, 1, 1, False, 0, "1f1b", 1, "none"), "pipeline-depth", "exceeds model.layers"),
    (Mix(1024, 1, 1, 1, 1, 1, False, 0, "1f1b", 1, "none"), "batch-divisible", "not divisible"),
    (Mix(64, 8, 2, 1, 1, 1, False, 3, "1f1b", 1, "none"), "zero3-with-pipeline", "FSDP"),
    (Mix(32, 8, 4, 3, 1, 1, False, 0, "interleaved", 8, "none"), "interleaved-micro-batches", "divisible by pp"),
    (Mix(16, 64, 1, 1, 1, 1, False, 0, "1f1b", 1, "none"), "tp-divides-model", "model.heads=96"),
])
def test_constraint_reasons(mix, name, words):
    ctx = Context(heads=96, kv_heads=96, ffn_hidden=49152, layers=96, seq_len=2048, global_batch=1536,
                  gpus_per_node=8)
    got = structural_violation(mix, ctx)
    assert got is not None and got[0] == name and words in got[1]
    assert structural_violation(Mix(16, 8, 8, 1, 1, 1, True, 1, "1f1b", 1, "none"), ctx) is None


def test_memory_constraint_and_why():
    # GPT-3 175B fully replicated on one stage: the states alone (~16 bytes/param) cannot fit 80 GB
    mix = Mix(1024, 1, 1, 1, 1, 1, False, 0, "1f1b", 1, "none")
    ev = Evaluator(ROOT / "scenarios" / "gpt3-175b.yaml")
    assert why_dropped(ev.rs, Mix(512, 1, 2, 1, 1, 1, False, 0, "1f1b", 4, "none"))[0] == "batch-divisible"
    got = why_dropped(ev.rs, Mix(512, 1, 2, 1, 1, 1, False, 0, "1f1b", 1, "none"))
    assert got[0] == "memory" and "HBM" in got[1]
    assert why_dropped(ev.rs, Mix(16, 8, 8, 1, 1, 1, True, 1, "1f1b", 1, "none")) is None
    assert why_dropped(ev.rs, mix)[0] == "batch-divisible"  # 1536 % 1024


def test_lower_bound_below_step_time():
    ev = Evaluator(TP2)
    for mix in [Mix(1, 2, 1, 1, 1, 1, True, 0, "1f1b", 2, "full"), Mix(1, 1, 2, 2, 1, 1, False, 0, "interleaved", 2, "none"),
                Mix(2, 1, 1, 1, 1, 1, False, 3, "1f1b", 1, "selective"), Mix(1, 1, 2, 1, 1, 1, False, 1, "gpipe", 1, "none"),
                Mix(1, 1, 2, 1, 1, 1, False, 0, "zb_h1", 1, "none"), Mix(1, 1, 2, 2, 1, 1, False, 0, "zb_v", 1, "none"),
                Mix(1, 1, 2, 1, 1, 1, False, 0, "dualpipe", 1, "none"),
                Mix(1, 1, 2, 2, 1, 1, False, 0, "dualpipe_v", 1, "none")]:
        s = ev.screen(ev.scenario_for(mix))
        r = ev.simulate(mix)
        assert 0 < s.bound_s <= r.step_time_s, f"{mix=}"
        assert s.memory["peak_bytes_per_gpu"] == r.memory["peak_bytes_per_gpu"]
